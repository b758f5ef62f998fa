"""Where PostgreSQL points: the ErrorResponse's position, in the client's whole Query text.

psql prints the statement's line with a caret under the position (`LINE 1: SELECT nope
FROM t` / `^`), and BI tools' editors mark it. Two things make the gateway's positions
differ from PostgreSQL's:
- a name the engine or the catalog cannot find (42703, 42P01) is reported by DuckDB in the
  SQL the gateway generated, or by the catalog without a place. PostgreSQL points at the
  name where the client first wrote it, so it is looked up among the statement's tokens:
  spelled as the message names it (`t.nope`: the tokens `t . nope`), folded to lower case
  unless quoted, and not an output name after AS;
- a position found in one statement of a Query that holds several counts from that
  statement's start; PostgreSQL counts from the start of the whole text.
"""

from __future__ import annotations

import re

from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from pgwire.errors import UNDEFINED_COLUMN, UNDEFINED_TABLE, PgError

_NAMED = {UNDEFINED_COLUMN: re.compile(r'^column (?:"([^"]+)"|(\S+)) does not exist$'),
          UNDEFINED_TABLE: re.compile(r'^relation "([^"]+)" does not exist$')}
_NOT_NAMES = frozenset({TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.NUMBER,
                        TokenType.BIT_STRING, TokenType.HEX_STRING, TokenType.BYTE_STRING,
                        TokenType.HEREDOC_STRING, TokenType.UNICODE_STRING})


def _spelled(token: Token, part: str) -> bool:
    if token.token_type in _NOT_NAMES:
        return False
    if token.token_type == TokenType.IDENTIFIER:  # quoted: as written
        return token.text == part
    return token.text.lower() == part


def _name_position(sql: str, name: str) -> int | None:
    parts = name.split(".")
    try:
        tokens = Postgres().tokenize(sql)
    except TokenError:
        return None
    width = 2 * len(parts) - 1  # the parts and the dots between them
    for i in range(len(tokens) - width + 1):
        if i and tokens[i - 1].token_type == TokenType.ALIAS:
            continue
        if all(_spelled(tokens[i + 2 * k], part) for k, part in enumerate(parts)) and \
                all(tokens[i + 2 * k + 1].token_type == TokenType.DOT for k in range(len(parts) - 1)):
            return tokens[i].start + 1
    return None


def positioned(err: PgError, sql: str, offset: int) -> PgError:
    """`err` as the client of the Query text holding `sql` at `offset` reads it: a copy
    with PostgreSQL's position where the gateway can tell it (`err` itself otherwise;
    an error object may be raised again, so it is never changed)."""
    position = err.position
    if position is None and err.sqlstate in _NAMED:
        found = _NAMED[err.sqlstate].match(err.message)
        if found is not None:
            position = _name_position(sql, next(g for g in found.groups() if g))
    if not isinstance(position, int) or (position == err.position and not offset):
        return err  # none found, nothing to move, or a position of another kind
    return PgError(err.sqlstate, err.message, severity=err.severity, detail=err.detail,
                   hint=err.hint, position=position + offset, routine=err.routine)
