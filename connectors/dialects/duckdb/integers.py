"""Text read as an integer the way PostgreSQL's int2in/int4in/int8in read it.

PostgreSQL takes optional spaces, a sign and decimal digits, nothing else:
`'1.5'::int` is 22P02 `invalid input syntax for type integer: "1.5"`. DuckDB rounds it
to 2, a wrong answer the client cannot tell from a right one. So:

- a string literal cast to an integer type is checked here, when the statement is
  rendered (its error is PostgreSQL's, before any row is read);
- a text value cast to one is checked per row (`needs_types` asks for the operand's type):

    CAST(s AS INT)  →  CAST(CASE WHEN s IS NULL OR REGEXP_FULL_MATCH(s, '\\s*[+-]?[0-9]+\\s*')
                                 THEN s ELSE ERROR('invalid input syntax for type integer: "' || s || '"')
                            END AS INT)

A value beyond the type's range is the engine's error, which pgwire.errors words as
PostgreSQL does (22003).
"""

from __future__ import annotations

import re

from sqlglot import exp

from connectors.base import volatile_reason
from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError

T = exp.DataType.Type
_NAMES = {T.SMALLINT: "smallint", T.INT: "integer", T.BIGINT: "bigint"}
_TEXT = {T.TEXT, T.VARCHAR}
_WHOLE = r"\s*[+-]?[0-9]+\s*"
_WHOLE_TEXT = re.compile(r"[ \t\n\r\f\v]*[+-]?[0-9]+[ \t\n\r\f\v]*")


def _integer_cast(node: exp.Expression) -> bool:
    return isinstance(node, exp.Cast) and node.to.this in _NAMES


def needs_types(tree: exp.Expression) -> bool:
    """An integer cast of something not a literal: whether it reads text takes its type."""
    return any(_integer_cast(cast) and not isinstance(cast.this, exp.Literal)
               for cast in tree.find_all(exp.Cast))


def needs_rewrite(tree: exp.Expression) -> bool:
    return any(map(_integer_cast, tree.find_all(exp.Cast)))


def invalid(text: str, name: str) -> str:
    """PostgreSQL's message for text its integer input does not read."""
    return f'invalid input syntax for type {name}: "{text}"'


def check_text(text: str, name: str) -> None:
    """Raise PostgreSQL's 22P02 for text its integer input (of type `name`) does not read."""
    if _WHOLE_TEXT.fullmatch(text) is None:
        raise PgError(INVALID_TEXT_REPRESENTATION, invalid(text, name))


def postgres_integers(node: exp.Expression) -> exp.Expression:
    """`node`, an integer cast of text, checked as PostgreSQL reads integers."""
    if not _integer_cast(node):
        return node
    name, value = _NAMES[node.to.this], node.this
    if isinstance(value, exp.Literal):
        if value.is_string:
            check_text(value.this, name)
        return node
    if value.type is None or value.type.this not in _TEXT or volatile_reason(value) is not None:
        return node
    message = exp.DPipe(this=exp.DPipe(this=exp.Literal.string(invalid("", name)[:-1]), expression=value.copy()),
                        expression=exp.Literal.string('"'))
    readable = exp.or_(exp.Is(this=value.copy(), expression=exp.Null()),
                       exp.Anonymous(this="regexp_full_match",
                                     expressions=[value.copy(), exp.Literal.string(_WHOLE)]))
    checked = exp.Case(ifs=[exp.If(this=readable, true=value.copy())],
                       default=exp.Anonymous(this="error", expressions=[message]))
    return exp.Cast(this=checked, to=node.to.copy())
