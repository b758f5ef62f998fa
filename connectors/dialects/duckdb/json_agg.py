"""`json_agg(x)` as PostgreSQL writes it, on DuckDB, for integers, booleans, text and numerics.

PostgreSQL's json_agg is a json text: `[1, 2, 3]`, elements joined by a comma and a space,
each written as to_json() writes it (NULL as `null`), and NULL over no rows. DuckDB's
json_group_array writes `[1,2,3]`. So the aggregate is written as text:

    json_agg(x ORDER BY k) FILTER (WHERE c)
    -> '[' || string_agg(coalesce(<x as json>, 'null'), ', ' ORDER BY k) FILTER (WHERE c) || ']'

(string_agg of no rows is NULL, and so is the whole). `<x as json>` by x's type: an
integer's text; `true`/`false`; a string escaped by DuckDB's to_json(), which writes the
control characters U+000B, U+000E, U+000F and U+001A..U+001F in upper-case hex where
PostgreSQL writes lower case (such a value raises the refusal when met); a numeric whose
DECIMAL has PostgreSQL's display scale (connectors.dialects.duckdb.json) as its text.
Any other argument type, and json_agg(DISTINCT ...), is refused (0A000).
connectors.dialects.duckdb.json_build writes json_build_array/object's values by the same
rules (`as_json`).
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import AGGREGATE_WRAPPERS, aggregate_call, in_same_context
from connectors.dialects.duckdb.json import at_display_scale
from connectors.dialects.rules import raised
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

T = exp.DataType.Type
REFUSED = "{function}() of {what} is not supported by fedgate outside PostgreSQL sources"
_UPPER_HEX_CONTROLS = r"[\x0b\x0e\x0f\x1a-\x1f]"


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(exp.JSONArrayAgg) is not None


def _refuse(what: str, function: str = "json_agg") -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, REFUSED.format(function=function, what=what))


def as_json(value: exp.Expression, function: str = "json_agg") -> exp.Expression:
    """`value` written as PostgreSQL's to_json() writes it, for the types above (NULL
    stays NULL); refused (0A000, naming `function`) for another."""
    kind = value.type
    if kind is not None and kind.this in exp.DataType.INTEGER_TYPES:
        return exp.Cast(this=value.copy(), to=exp.DataType.build("VARCHAR"))
    if kind is not None and kind.this == T.BOOLEAN:
        return exp.Case(ifs=[exp.If(this=value.copy(), true=exp.Literal.string("true")),
                             exp.If(this=exp.Not(this=value.copy()), true=exp.Literal.string("false"))])
    if kind is not None and kind.this in (T.TEXT, T.VARCHAR) and not kind.expressions:  # not varchar(n)
        upper_hex = exp.Anonymous(this="regexp_matches", expressions=[
            value.copy(), exp.Literal.string(_UPPER_HEX_CONTROLS)])
        refusal = raised(REFUSED.format(function=function,
                                        what="text holding U+000B, U+000E, U+000F or U+001A..U+001F"))
        written = exp.Cast(this=exp.Anonymous(this="to_json", expressions=[value.copy()]),
                           to=exp.DataType.build("VARCHAR"))
        return exp.Case(ifs=[exp.If(this=upper_hex, true=refusal)], default=written)
    if at_display_scale(value):
        return exp.Cast(this=value.copy(), to=exp.DataType.build("VARCHAR"))
    raise _refuse(f"a {kind.sql('postgres').lower() if kind is not None else 'value'} argument"
                  if kind is None or kind.this != T.DECIMAL else "a numeric computed by the engine", function)


def _aggregate(node: exp.JSONArrayAgg) -> exp.Expression:
    """string_agg of the elements' json, in the aggregate's ORDER BY."""
    argument = node.this
    order = argument if isinstance(argument, exp.Order) else None
    value = order.this if order is not None else argument
    if isinstance(value, exp.Distinct):
        raise _refuse("DISTINCT values")
    element = exp.Coalesce(this=as_json(value), expressions=[exp.Literal.string("null")])
    if order is not None:
        element = exp.Order(this=element, expressions=[o.copy() for o in order.expressions])
    return exp.GroupConcat(this=element, separator=exp.Literal.string(", "))


def postgres_json_agg(node: exp.Expression) -> exp.Expression:
    """The outermost of json_agg and its FILTER/OVER written as `'[' || ... || ']'`."""
    inner = aggregate_call(node)
    if not isinstance(inner, exp.JSONArrayAgg) or isinstance(node.parent, AGGREGATE_WRAPPERS):
        return node
    body = in_same_context(node, _aggregate(inner))
    return exp.DPipe(this=exp.DPipe(this=exp.Literal.string("["), expression=exp.Paren(this=body), safe=True),
                     expression=exp.Literal.string("]"), safe=True)
