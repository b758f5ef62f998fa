"""Spark SQL as the residual engine's dialect: PostgreSQL semantics rendered for Spark.

sqlglot's Spark generator writes Spark syntax (and PostgreSQL's NULL ordering: NULLS LAST
for ascending keys, NULLS FIRST for descending ones, where Spark's defaults are the
reverse); the rewrites here make Spark compute PostgreSQL's answers:
- integer / integer truncates in PostgreSQL: Spark's `DIV`;
- a division involving a decimal: Spark's decimal division keeps as few as 6 digits of
  scale once the precision passes 38, where PostgreSQL keeps at least 16 significant
  digits; it runs in double precision (about 16 significant digits, and the type the
  DuckDB engine gives the same division);
- `avg()` of a decimal: Spark keeps 4 more digits of scale than the input (0.050081 for
  PostgreSQL's 0.05008133906964237698), so the average is taken in double precision too;
- an unconstrained `numeric` cast is exact in PostgreSQL, Spark's bare DECIMAL is
  DECIMAL(10,0): the cast gets the precision its operand needs (as for DuckDB);
- `date - date` is an integer number of days in PostgreSQL, an interval in Spark:
  `DATEDIFF`;
- `date ± interval` is a timestamp in PostgreSQL, a date in Spark: the date becomes a
  TIMESTAMP_NTZ (a timestamp without time zone) first;
- the planner's exact average, `FEDGATE_AVG(sum, count, scale, sum's scale)`
  (planner.pg_aggregates), becomes `try_divide(CAST(sum AS DECIMAL(38, scale)),
  CAST(count AS DECIMAL(19, 0)))`: Spark divides decimals exactly, NULL for no rows as avg
  is, exact while |sum| < 10^(38 - scale) (beyond, Spark's ANSI mode raises numeric
  overflow);
- a CTE's MATERIALIZED hint is dropped: Spark re-reads its inputs, there is nothing to hold.
With Spark 4's ANSI mode (the engine turns it on) a zero divisor raises, as in PostgreSQL.
These need operand types: the planner annotates the residual over the fragments' column
types before rendering it for Spark (`planner.plan`).
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import EXACT_AVERAGE, Dialect
from connectors.dialects import grouping_sets
from connectors.dialects.duckdb import classify, exact_numeric, is_integer
from connectors.dialects.rules import rewrite_bottom_up

T = exp.DataType.Type


def _is(datatype: exp.DataType | None, *types: exp.DataType.Type) -> bool:
    return datatype is not None and datatype.this in types


def _is_decimal(datatype: exp.DataType | None) -> bool:
    return _is(datatype, T.DECIMAL, T.BIGDECIMAL, T.MONEY)


def _double(operand: exp.Expression) -> exp.Expression:
    if _is(operand.type, T.DOUBLE, T.FLOAT):
        return operand
    return exp.Cast(this=operand, to=exp.DataType.build("DOUBLE"))


def _division(node: exp.Div) -> exp.Expression:
    left, right = node.this, node.expression
    if is_integer(left.type) and is_integer(right.type):
        return exp.IntDiv(this=left, expression=right)
    if _is_decimal(left.type) or _is_decimal(right.type):
        return exp.Div(this=_double(left), expression=_double(right), typed=False)
    return exp.Div(this=left, expression=right, typed=False)


def _date_arithmetic(node: exp.Add | exp.Sub) -> exp.Expression:
    left, right = node.this, node.expression
    if isinstance(node, exp.Sub) and _is(left.type, T.DATE) and _is(right.type, T.DATE):
        return exp.DateDiff(this=left, expression=right)
    if _is(left.type, T.DATE) and _is(right.type, T.INTERVAL):
        left = exp.Cast(this=left, to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
        return type(node)(this=left, expression=right)
    if isinstance(node, exp.Add) and _is(left.type, T.INTERVAL) and _is(right.type, T.DATE):
        right = exp.Cast(this=right, to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
        return exp.Add(this=left, expression=right)
    return node


def _postgres_semantics(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Div):
        return _division(node)
    if isinstance(node, exp.Avg) and _is_decimal(node.this.type):
        return exp.Avg(this=_double(node.this))
    if isinstance(node, (exp.Add, exp.Sub)):
        return _date_arithmetic(node)
    return exact_numeric(node)


def _named_parameter(node: exp.Expression) -> exp.Expression:
    """`$n` becomes Spark's named marker `:pn` (the engine binds args p1, p2, ...)."""
    if isinstance(node, exp.Parameter) and isinstance(node.this, exp.Literal):
        return exp.Placeholder(this=f"p{node.this.this}")
    return node


DECIMAL_DIGITS = 38  # Spark's widest DECIMAL
COUNT_TYPE = "DECIMAL(19, 0)"  # a count as a decimal: Spark then divides at the dividend's scale


def _average(node: exp.Expression) -> exp.Expression:
    """The planner's exact-average call (connectors.base.EXACT_AVERAGE) as Spark divides."""
    if not (isinstance(node, exp.Anonymous) and node.name.upper() == EXACT_AVERAGE):
        return node
    total, count, scale = node.expressions[:3]
    return exp.Anonymous(this="TRY_DIVIDE", expressions=[
        exp.Cast(this=total, to=exp.DataType.build(f"DECIMAL({DECIMAL_DIGITS}, {scale.name})")),
        exp.Cast(this=count, to=exp.DataType.build(COUNT_TYPE))])


def to_spark(tree: exp.Expression) -> str:
    """Render a type-annotated PostgreSQL tree as Spark SQL with PostgreSQL semantics."""
    if grouping_sets.needs_rewrite(tree):  # Spark has no GROUP BY DISTINCT
        tree = tree.transform(grouping_sets.distinct_grouping_sets)
    tree = rewrite_bottom_up(tree, _postgres_semantics)
    if any(n.name.upper() == EXACT_AVERAGE for n in tree.find_all(exp.Anonymous)):
        tree = tree.transform(_average)
    for cte in tree.find_all(exp.CTE):
        cte.set("materialized", None)
    if tree.find(exp.Parameter) is not None:
        tree = tree.transform(_named_parameter)
    return tree.sql("spark")


def _always(tree: exp.Expression) -> bool:
    return True


DIALECT = Dialect(name="spark", sqlglot="spark", paramstyle="?", classify=classify,
                  render=to_spark, render_needs_types=_always,
                  ships=frozenset({"join", "aggregate", "sort", "limit", "distinct", "union", "window",
                                   "subquery"}), numerics_in_double=True)
