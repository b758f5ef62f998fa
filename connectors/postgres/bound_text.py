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


async def bound_text(conn: asyncpg.Connection, sql: str, params: Sequence[Any]) -> str:
    """`sql` with every parameter marker replaced by its value as PostgreSQL quotes it."""
    if not params:
        return sql
    statement = await conn.prepare(sql)
    types = []
    for t in statement.get_parameters():
        name = "_" + t.name[:-2] if t.name.endswith("[]") else t.name
        types.append(f"{_quoted_name(t.schema)}.{_quoted_name(name)}")
    quoted = await conn.fetchrow("SELECT " + ", ".join(
        f"quote_literal(${i}::{t}::text)" for i, t in enumerate(types, start=1)), *params)
    pieces, last = [], 0
    for start, end, number in markers(sql):
        pieces.append(sql[last:start])
        value = quoted[number - 1]
        pieces.append("NULL" if value is None else value)
        last = end
    pieces.append(sql[last:])
    return "".join(pieces)
