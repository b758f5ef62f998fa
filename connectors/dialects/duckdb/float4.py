"""real (float4) values as PostgreSQL computes with them, on DuckDB.

- Arithmetic of a float4 with an integer or a numeric is float8 in PostgreSQL: its
  operators float48pl/mi/mul/div take the float4 as a float8 (`1.5::float4 / 3` is float8,
  1.1::float4 / 3 is 0.36666667461395264). DuckDB computes it in FLOAT, whose result no
  widening afterwards makes float8's, so the float4 operand is cast to DOUBLE first.
- A float4 or float8 cast to numeric is, in PostgreSQL, the numeric of the float's text at
  6 (float4) or 15 (float8) significant digits (float.c's float4_numeric: `%.*g` with
  FLT_DIG), each value at its own scale: `1.5::float4::numeric` is 1.5, 0.1::float4 is 0.1.
  DuckDB's DECIMAL(38,10) would show 1.5000000000 and 0.1000000015. A constant is
  computed here (the DECIMAL of those digits); a float4 that is not a constant is refused
  (0A000): no DuckDB DECIMAL holds each value's own digits.
Both need operand types (the planner annotates a tree that casts to float4 or reads a
float4 column).
"""

from __future__ import annotations

import math
import struct

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from connectors.dialects.duckdb.literals import MAX_DIGITS, pg_text

T = exp.DataType.Type
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div)
_WIDER = {*exp.DataType.INTEGER_TYPES, T.DECIMAL, T.DOUBLE}  # sqlglot types 2.5 DOUBLE
_SIGNIFICANT = {T.FLOAT: 6, T.DOUBLE: 15}  # FLT_DIG, DBL_DIG


def needs_rewrite(tree: exp.Expression) -> bool:
    """A cast to float4, or (in a tree the planner annotated for reading one) a float4 column."""
    return any(cast.to.this == T.FLOAT for cast in tree.find_all(exp.Cast)) or \
        any(_type(column) == T.FLOAT for column in tree.find_all(exp.Column))


def _type(node: exp.Expression) -> exp.DataType.Type | None:
    return node.type.this if node.type is not None else None


def _as_double(node: exp.Expression) -> exp.Expression:
    cast = exp.Cast(this=node.copy(), to=exp.DataType.build("DOUBLE"))
    cast.type = exp.DataType.build("DOUBLE")
    return cast


def _constant(node: exp.Expression) -> float | None:
    """The value of a number constant, a float cast of one (rounded to float4's precision
    by a cast to float4), or either negated; None for anything else."""
    if isinstance(node, exp.Literal) and not node.is_string:
        return float(node.this)
    if isinstance(node, (exp.Paren, exp.Neg)) or (isinstance(node, exp.Cast) and node.to.this in _SIGNIFICANT):
        value = _constant(node.this)
        if value is None or isinstance(node, exp.Paren):
            return value
        if isinstance(node, exp.Neg):
            return -value
        if node.to.this == T.DOUBLE:
            return value
        try:
            return struct.unpack("f", struct.pack("f", value))[0]
        except OverflowError:  # beyond float4: PostgreSQL's 22003 comes from the engine's cast
            return None
    return None


def _float_cast(node: exp.Expression) -> bool:
    """Whether `node` is (a negated) cast to a float: sqlglot types `1.5` DOUBLE as well."""
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    return isinstance(node, exp.Cast) and node.to.this in _SIGNIFICANT


def _float_numeric(cast: exp.Cast, kind: exp.DataType.Type) -> exp.Expression:
    value = _constant(cast.this) if _float_cast(cast.this) else None
    if value is None:
        if kind == T.DOUBLE:
            return cast  # duckdb.exact_numeric's DECIMAL(38,10), as before
        raise PgError(FEATURE_NOT_SUPPORTED, "a cast of a real (float4) value to numeric is not "
                      "supported by the query engine (PostgreSQL keeps each value's 6 significant digits)")
    if math.isinf(value) or math.isnan(value):
        return cast
    text, digits = pg_text(f"{value:.{_SIGNIFICANT[kind]}g}")
    if digits > MAX_DIGITS:
        raise PgError(FEATURE_NOT_SUPPORTED, f"the numeric {text} of a float is not supported by the "
                      f"query engine (more than {MAX_DIGITS} digits)")
    scale = len(text.partition(".")[2])
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build(f"DECIMAL({digits}, {scale})"))


def postgres_float4(node: exp.Expression) -> exp.Expression:
    """One node of an annotated tree as the module docstring says; any other as it is."""
    if isinstance(node, _ARITHMETIC):
        left, right = _type(node.this), _type(node.expression)
        if left == T.FLOAT and right in _WIDER:
            node.set("this", _as_double(node.this))
        elif right == T.FLOAT and left in _WIDER:
            node.set("expression", _as_double(node.expression))
        else:
            return node
        node.type = exp.DataType.build("DOUBLE")
        return node
    if isinstance(node, exp.Cast) and node.to.this == T.DECIMAL and not node.to.expressions \
            and _type(node.this) in _SIGNIFICANT:
        return _float_numeric(node, _type(node.this))
    return node
