"""Spark SQL as the residual engine's dialect: PostgreSQL semantics rendered for Spark.

Spark shares DuckDB's gaps (integer division, unconstrained DECIMAL — Spark's default is
DECIMAL(10,0)), so the same rewrites apply before sqlglot's Spark generator runs. With
Spark 4's ANSI mode (the default) a zero divisor raises, as in PostgreSQL.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import Dialect
from connectors.dialects.duckdb import _exact_numeric, _is_integer, classify, needs_types


def _postgres_semantics(node: exp.Expression) -> exp.Expression:
    """Integer division truncates (Spark's DIV); other divisions stay `/`, which raises on
    a zero divisor under ANSI mode like PostgreSQL, so no guard is needed."""
    if isinstance(node, exp.Div):
        if _is_integer(node.this.type) and _is_integer(node.expression.type):
            node = exp.IntDiv(this=node.this, expression=node.expression)
        else:
            node = exp.Div(this=node.this, expression=node.expression, typed=False)
    return _exact_numeric(node)


def _named_parameter(node: exp.Expression) -> exp.Expression:
    """`$n` becomes Spark's named marker `:pn` (the engine binds args p1, p2, ...)."""
    if isinstance(node, exp.Parameter) and isinstance(node.this, exp.Literal):
        return exp.Placeholder(this=f"p{node.this.this}")
    return node


def to_spark(tree: exp.Expression) -> str:
    if needs_types(tree):
        tree = tree.transform(_postgres_semantics)
    if tree.find(exp.Parameter) is not None:
        tree = tree.transform(_named_parameter)
    return tree.sql("spark")


DIALECT = Dialect(name="spark", sqlglot="spark", paramstyle="?", classify=classify,
                  render=to_spark,
                  ships=frozenset({"join", "aggregate", "sort", "limit", "distinct", "union", "window",
                                   "subquery"}))
