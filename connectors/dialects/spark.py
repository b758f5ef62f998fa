"""Spark SQL as the residual engine's dialect: PostgreSQL semantics rendered for Spark.

Spark shares DuckDB's gaps (integer division, unconstrained DECIMAL — Spark's default is
DECIMAL(10,0)), so the same rewrites apply before sqlglot's Spark generator runs. With
Spark 4's ANSI mode (the default) a zero divisor raises, as in PostgreSQL.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import Dialect
from connectors.dialects.duckdb import _postgres_semantics, classify, needs_types


def to_spark(tree: exp.Expression) -> str:
    if needs_types(tree):
        tree = tree.transform(_postgres_semantics)
    return tree.sql("spark")


DIALECT = Dialect(name="spark", sqlglot="spark", paramstyle="?", classify=classify,
                  render=to_spark,
                  ships=frozenset({"join", "aggregate", "sort", "limit", "distinct", "union", "window",
                                   "subquery"}))
