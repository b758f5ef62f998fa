"""A fragment's parameters written into its text by PostgreSQL, for COPY.

`COPY (query) TO STDOUT` takes no parameters, so a fragment's values are written into the
query as literals first. asyncpg's `copy_from_query(sql, *args)` does that with a regular
expression over the whole text, which also rewrites a `$1` inside a string literal, a
dollar-quoted string or a quoted identifier: `'x$1'` became `'x'5''`, a syntax error or,
worse, another string. Here PostgreSQL's tokenizer (sqlglot's) finds the markers, so only
real ones are replaced, and PostgreSQL itself quotes each value (`quote_literal` of the
value cast to the parameter's type, as asyncpg does), so no value is spelled by us.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokens import TokenType

_POSTGRES = Postgres()


def _quoted_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def markers(sql: str) -> list[tuple[int, int, int]]:
    """Each parameter marker of `sql` outside literals, identifiers and comments, as
    (start, end exclusive, parameter number)."""
    found = []
    tokens = _POSTGRES.tokenize(sql)
    for token, following in zip(tokens, tokens[1:]):
        if token.token_type is TokenType.PARAMETER and token.text == "$" and \
                following.token_type is TokenType.NUMBER and following.start == token.end + 1:
            found.append((token.start, following.end + 1, int(following.text)))
    return found


@dataclass(frozen=True)
class Template:
    """What binding a statement's parameters needs of its text, found once per text:
    the text around its markers and the query that has PostgreSQL quote their values."""

    pieces: tuple[str, ...]  # the text before each marker, then the rest
    numbers: tuple[int, ...]  # each marker's parameter number
    quoting: str  # SELECT quote_literal($1::type::text), ... for the parameters' types


async def template_of(conn: asyncpg.Connection, sql: str) -> Template:
    """`sql`'s Template; its parameter types are PostgreSQL's (a prepare). The types hold
    for as long as the shapes of the tables `sql` reads: a caller keeping templates by
    text forgets them when a shape changes, as it forgets descriptions. The prepare runs
    in a transaction rolled back: it leaves the protocol's implicit transaction open, which
    a later `BEGIN ISOLATION LEVEL ...` rejects (as connectors.postgres.describe says)."""
    transaction = conn.transaction()
    await transaction.start()
    try:
        statement = await conn.prepare(sql)
    finally:
        await transaction.rollback()
    types = []
    for t in statement.get_parameters():
        name = "_" + t.name[:-2] if t.name.endswith("[]") else t.name
        types.append(f"{_quoted_name(t.schema)}.{_quoted_name(name)}")
    pieces, numbers, last = [], [], 0
    for start, end, number in markers(sql):
        pieces.append(sql[last:start])
        numbers.append(number)
        last = end
    pieces.append(sql[last:])
    quoting = "SELECT " + ", ".join(f"quote_literal(${i}::{t}::text)"
                                    for i, t in enumerate(types, start=1))
    return Template(tuple(pieces), tuple(numbers), quoting)


async def bound_text(conn: asyncpg.Connection, sql: str, params: Sequence[Any],
                     template: Template | None = None) -> str:
    """`sql` with every parameter marker replaced by its value as PostgreSQL quotes it:
    one round trip with `sql`'s `template` (one more without)."""
    if not params:
        return sql
    if template is None:
        template = await template_of(conn, sql)
    quoted = await conn.fetchrow(template.quoting, *params)
    out = [template.pieces[0]]
    for number, piece in zip(template.numbers, template.pieces[1:]):
        value = quoted[number - 1]
        out.append("NULL" if value is None else value)
        out.append(piece)
    return "".join(out)
