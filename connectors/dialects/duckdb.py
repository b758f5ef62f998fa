"""DuckDB as a target of PostgreSQL SQL: what ships, and the rewrites that keep PG semantics.

sqlglot renders DuckDB syntax; it does not make DuckDB compute PostgreSQL's answers. The
rewrites here close the gaps we know of (DESIGN.md §4):
- integer / integer truncates in PostgreSQL; DuckDB's `/` divides as floats, so it
  becomes DuckDB's `//` (which truncates and raises on a zero divisor);
- any other division by zero raises in PostgreSQL, while DuckDB returns inf or NULL, so
  the divisor is guarded with DuckDB's `error()`.
Both need operand types, so they expect a type-annotated tree.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import Dialect, Pushdown

DIALECT = Dialect(name="duckdb", sqlglot="duckdb", paramstyle="$n")

DIVISION_BY_ZERO = "division by zero"

# Functions whose value changes per call or per statement: never shipped (DESIGN.md §4).
VOLATILE = (exp.Rand, exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.Uuid)


def classify(predicate: exp.Expression) -> Pushdown:
    if any(isinstance(node, VOLATILE) for node in predicate.walk()):
        return Pushdown.UNSUPPORTED
    return Pushdown.EXACT


def _is_integer(datatype: exp.DataType | None) -> bool:
    return datatype is not None and datatype.this in exp.DataType.INTEGER_TYPES


def _guard_divisor(divisor: exp.Expression) -> exp.Expression:
    zero = exp.EQ(this=divisor.copy(), expression=exp.Literal.number(0))
    fail = exp.Anonymous(this="error", expressions=[exp.Literal.string(DIVISION_BY_ZERO)])
    return exp.Case(ifs=[exp.If(this=zero, true=fail)], default=divisor.copy())


def _postgres_division(node: exp.Expression) -> exp.Expression:
    if not isinstance(node, exp.Div):
        return node
    left, right = node.this, node.expression
    if _is_integer(left.type) and _is_integer(right.type):
        return exp.IntDiv(this=left, expression=right)
    if isinstance(right, exp.Literal) and not right.is_string and right.to_py() != 0:
        return exp.Div(this=left, expression=right, typed=False)
    return exp.Div(this=left, expression=_guard_divisor(right), typed=False)


def to_duckdb(tree: exp.Expression) -> str:
    """Render a (type-annotated) PostgreSQL tree as DuckDB SQL with PostgreSQL semantics."""
    if tree.find(exp.Div) is not None:
        tree = tree.transform(_postgres_division)
    return tree.sql("duckdb")
