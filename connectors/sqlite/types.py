"""SQLite values as typed Arrow columns: tables by declared type, shipped queries by analysis.

SQLite values are dynamically typed. A table's Arrow schema comes from the declared column
types (affinity rules; BOOLEAN as bool, DATE/DATETIME/TIMESTAMP text as Arrow temporal
types). A shipped query's result columns have no declared type in Python's sqlite3, and
typing them from the first rows would make a query's Describe (no rows: all text) and its
execution disagree. So `ResultTypes` reads the query itself: sqlglot qualifies it against
the tables' declared types and annotates every result column, which gives the same types
with or without rows. A column it cannot type (an unknown function, a parameter alone)
falls back to the first non-NULL value (text when there is none). A value that does not
fit its column's type fails the query with 22P02 rather than being coerced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from connectors.dialects import sqlite as sqlite_dialect
from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError

T = exp.DataType.Type


def arrow_type_for_decl(declared: str) -> pa.DataType:
    """SQLite's affinity rules (https://sqlite.org/datatype3.html §3.1), plus temporal names."""
    d = declared.upper()
    if d.startswith("BOOL"):
        return pa.bool_()
    if "INT" in d:
        return pa.int64()
    if "CHAR" in d or "CLOB" in d or "TEXT" in d:
        return pa.string()
    if "BLOB" in d or not d:
        return pa.binary() if d else pa.string()
    if "REAL" in d or "FLOA" in d or "DOUB" in d:
        return pa.float64()
    if d.startswith("DATETIME") or d.startswith("TIMESTAMP"):
        return pa.timestamp("us")
    if d.startswith("DATE"):
        return pa.date32()
    return pa.float64()  # NUMERIC affinity: SQLite stores these as integer or real


# Arrow types of table columns as sqlglot types, and back for result columns. SQLite
# computes numerics as doubles, so decimal results are float64.
_SQLGLOT = {pa.bool_(): "BOOLEAN", pa.int64(): "BIGINT", pa.float64(): "DOUBLE",
            pa.string(): "TEXT", pa.binary(): "BLOB", pa.timestamp("us"): "TIMESTAMP",
            pa.date32(): "DATE"}
_ARROW: dict[exp.DataType.Type, pa.DataType] = {
    **{t: pa.int64() for t in exp.DataType.INTEGER_TYPES},
    **{t: pa.float64() for t in exp.DataType.REAL_TYPES},
    **{t: pa.string() for t in exp.DataType.TEXT_TYPES},
    T.BOOLEAN: pa.bool_(), T.BLOB: pa.binary(), T.VARBINARY: pa.binary(),
    T.BINARY: pa.binary(), T.DATE: pa.date32(), T.TIMESTAMP: pa.timestamp("us"),
    T.DATETIME: pa.timestamp("us"),
}
_NUMBERED = re.compile(r"\?\d+")  # ?1 (numbered parameters): sqlglot reads only ?


class ResultTypes:
    """The Arrow type of each result column of a query, from the tables' declared types."""

    def __init__(self, tables: Mapping[str, pa.Schema]) -> None:
        self._schema = {name: {f.name: _SQLGLOT.get(f.type, "TEXT") for f in schema}
                        for name, schema in tables.items()}
        self._cache: dict[str, list[pa.DataType | None]] = {}

    def of(self, sql: str) -> list[pa.DataType | None]:
        found = self._cache.get(sql)
        if found is None:
            found = self._analyse(sql)
            if len(self._cache) > 512:
                self._cache.clear()
            self._cache[sql] = found
        return found

    def _analyse(self, sql: str) -> list[pa.DataType | None]:
        try:
            tree = sqlglot.parse_one(_NUMBERED.sub("?", sql), read="sqlite")
            # A guarded divisor's error branch has no type: NULL lets CASE take the other.
            tree = tree.transform(lambda n: exp.Null() if isinstance(n, exp.Anonymous) and
                                  n.name == sqlite_dialect.RAISE_FUNCTION else n)
            tree = qualify(tree, schema=self._schema, dialect="sqlite", quote_identifiers=False,
                           validate_qualify_columns=False)
            tree = annotate_types(tree, schema=self._schema, dialect="sqlite")
        except (ParseError, OptimizeError):
            return []  # not something to analyse (e.g. a PRAGMA): the values decide
        if not isinstance(tree, exp.Query):
            return []
        return [_ARROW.get(e.type.this) if e.type is not None else None for e in tree.selects]


def value_type(value: Any) -> pa.DataType:
    return {int: pa.int64(), float: pa.float64(), str: pa.string(),
            bytes: pa.binary()}.get(type(value), pa.string())


def to_array(values: list[Any], t: pa.DataType) -> pa.Array:
    try:
        if pa.types.is_boolean(t):
            # SQLite stores booleans as 0/1 integers; anything else is not a boolean.
            return pa.array([v if v is None or isinstance(v, bool) else _boolean(v)
                             for v in values], t)
        if pa.types.is_temporal(t):
            return pa.array(values, pa.string()).cast(t)
        return pa.array(values, t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise PgError(INVALID_TEXT_REPRESENTATION,
                      f"sqlite value does not fit column type {t}: {exc}") from exc


def _boolean(value: Any) -> bool:
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise pa.ArrowInvalid(f"{value!r} is not a boolean")
