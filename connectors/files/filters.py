"""PostgreSQL predicates as pyarrow dataset filters, for the ones pyarrow evaluates exactly.

Only column-vs-literal comparisons, IN, IS NULL and AND/OR/NOT of those convert. Float
columns never do: pyarrow says `NaN > 1` is false, PostgreSQL sorts NaN above every
number. Anything else returns None and the scan goes through DuckDB instead.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from sqlglot import exp

_COMPARE = {exp.EQ: "__eq__", exp.NEQ: "__ne__", exp.GT: "__gt__", exp.GTE: "__ge__",
            exp.LT: "__lt__", exp.LTE: "__le__"}


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class _NotConvertible(Exception):
    pass


def to_arrow_filter(filters: Sequence[exp.Expression], schema: pa.Schema) -> pc.Expression | None:
    """The AND of `filters` as a dataset expression, or None if any does not convert."""
    if not filters:
        return None
    try:
        parts = [_convert(f, schema) for f in filters]
    except _NotConvertible:
        return None
    result = parts[0]
    for part in parts[1:]:
        result = result & part
    return result


def _field(node: exp.Expression, schema: pa.Schema) -> tuple[pc.Expression, pa.DataType]:
    if not isinstance(node, exp.Column) or schema.get_field_index(node.name) < 0:
        raise _NotConvertible
    t = schema.field(node.name).type
    if not (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_date(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t)):
        raise _NotConvertible  # floats (NaN order), timestamps (zones): keep them in DuckDB
    return ds.field(node.name), t


def _literal(node: exp.Expression, kind: pa.DataType) -> object:
    """The literal as a value of the column's Arrow type, when it is one without a doubt:
    an integer for an integer column, a string for a text column, an ISO date for a date
    column. Anything else (`id = 'x'`, `d = 'today'`) stays in DuckDB, which casts as
    PostgreSQL does or fails with its error; pyarrow would refuse to compare the types."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        value = _literal(node.this, kind)
        return -value  # type: ignore[operator]
    if not isinstance(node, exp.Literal):
        raise _NotConvertible
    if node.is_string and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return node.this
    if node.is_string and pa.types.is_date(kind) and _ISO_DATE.fullmatch(node.this):
        try:
            return dt.date.fromisoformat(node.this)
        except ValueError:
            raise _NotConvertible from None  # PostgreSQL's error, from DuckDB
    if not node.is_string and node.is_int and pa.types.is_integer(kind):
        return int(node.this)
    raise _NotConvertible


def _convert(node: exp.Expression, schema: pa.Schema) -> pc.Expression:
    if isinstance(node, exp.Paren):
        return _convert(node.this, schema)
    if isinstance(node, exp.And):
        return _convert(node.this, schema) & _convert(node.expression, schema)
    if isinstance(node, exp.Or):
        return _convert(node.this, schema) | _convert(node.expression, schema)
    if isinstance(node, exp.Not):
        return ~_convert(node.this, schema)
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return _field(node.this, schema)[0].is_null()
    if isinstance(node, exp.In) and not node.args.get("query"):
        field, kind = _field(node.this, schema)
        return field.isin([_literal(v, kind) for v in node.expressions])
    method = _COMPARE.get(type(node))
    if method is not None:
        field, kind = _field(node.this, schema)
        return getattr(field, method)(_literal(node.expression, kind))
    raise _NotConvertible
