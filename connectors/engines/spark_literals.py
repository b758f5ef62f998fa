"""Bind a fragment's parameters as SQL literals, for engines that send the SQL themselves.

Spark's JDBC source takes a query text, not a statement with parameters, and Spark SQL
over files has no numbered `$n`. So each parameter marker (`$n`, or the MySQL dialect's
`__fedgate_param_n__`) is replaced by a literal that sqlglot renders for the target
dialect. Markers are found as tokens, never inside string literals or quoted names, and
values are never spliced in as text. A value with no faithful literal in that dialect
(NaN outside PostgreSQL, bytes in DuckDB, intervals outside PostgreSQL) raises
`Unbindable`, and the fragment is then handed over by the gateway instead.

>>> bind("SELECT a FROM t WHERE b = CAST($1 AS TEXT)", ["it's"], "postgres")
"SELECT a FROM t WHERE b = CAST(('it''s') AS TEXT)"
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid
from collections.abc import Sequence
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect as SqlglotDialect
from sqlglot.tokens import TokenType

_MYSQL_MARKER = ("__fedgate_param_", "__")


class Unbindable(ValueError):
    """A parameter value that has no exact literal in the target dialect."""


def literal(value: Any, dialect: str) -> str:
    """`value` as a literal of `dialect` (postgres, mysql, duckdb or spark)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None and dialect != "postgres":
        # The others hold no zone: sessions run in UTC, so the instant is written in UTC.
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    if value is None or isinstance(value, (bool, int, str, dt.date, dt.time)):
        return exp.convert(value).sql(dialect)  # datetime is a date: covered here too
    if isinstance(value, float):
        if math.isfinite(value):
            return exp.Literal.number(repr(value)).sql(dialect)
        if dialect == "postgres":
            text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return f"CAST('{text}' AS DOUBLE PRECISION)"
        raise Unbindable(f"{value!r} has no literal in {dialect}")
    if isinstance(value, decimal.Decimal):
        if value.is_finite():
            return exp.Literal.number(str(value)).sql(dialect)
        if dialect == "postgres" and value.is_nan():
            return "CAST('NaN' AS NUMERIC)"
        raise Unbindable(f"{value!r} has no literal in {dialect}")
    if isinstance(value, uuid.UUID):
        return exp.Literal.string(str(value)).sql(dialect)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if dialect == "postgres":  # x'..' would be a bit string there
            return f"CAST('\\x{data.hex()}' AS BYTEA)"
        if dialect in ("mysql", "spark"):
            return f"X'{data.hex()}'"
        raise Unbindable(f"bytes have no literal in {dialect} here")
    if isinstance(value, dt.timedelta) and dialect == "postgres":
        return f"CAST('{value.total_seconds()!r} seconds' AS INTERVAL)"
    raise Unbindable(f"a {type(value).__name__} parameter has no literal in {dialect}")


def bind(sql: str, params: Sequence[Any], dialect: str) -> str:
    """`sql` (in `dialect`) with every parameter marker replaced by its literal."""
    if not params:
        return sql
    tokens = SqlglotDialect.get_or_raise(dialect).tokenize(sql)
    pieces: list[str] = []
    last = 0
    i = 0
    while i < len(tokens):
        token = tokens[i]
        start, end, number = token.start, token.end, None
        if (token.token_type == TokenType.PARAMETER and i + 1 < len(tokens)
                and tokens[i + 1].token_type == TokenType.NUMBER
                and tokens[i + 1].start == token.end + 1):
            number, end = int(tokens[i + 1].text), tokens[i + 1].end
            i += 1
        elif token.text.startswith(_MYSQL_MARKER[0]) and token.text.endswith(_MYSQL_MARKER[1]):
            number = int(token.text[len(_MYSQL_MARKER[0]):-len(_MYSQL_MARKER[1])])
        if number is not None:
            if not 1 <= number <= len(params):
                raise Unbindable(f"parameter ${number} has no value")
            pieces.append(sql[last:start])
            # Parenthesised: `x-$1` with -5 must not become `x--5`, a comment.
            pieces.append(f"({literal(params[number - 1], dialect)})")
            last = end + 1
        i += 1
    pieces.append(sql[last:])
    return "".join(pieces)
