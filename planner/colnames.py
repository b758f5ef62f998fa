"""Output column names as PostgreSQL chooses them (its FigureColname rules).

Clients read these names (psql headers, SQLAlchemy row keys), and every source names
unaliased expressions its own way, so the planner fixes the name of every output column
of the top-level query and renders it as an explicit alias.

>>> import sqlglot
>>> [figure_colname(e) for e in sqlglot.parse_one("select a, t.b, 1, 1::int, x::text, count(*), version()", read="postgres").expressions]
['a', 'b', '?column?', 'int4', 'x', 'count', 'version']
"""

from __future__ import annotations

from sqlglot import exp

from planner.types import pg_type_name

UNNAMED = "?column?"

# sqlglot classes whose PostgreSQL spelling differs from their sql_name().
_FUNCTION_NAMES: dict[type[exp.Expression], str] = {
    exp.CurrentVersion: "version",
    exp.CurrentDatabase: "current_database",
    exp.CurrentSchema: "current_schema",
    exp.CurrentSchemas: "current_schemas",
    exp.CurrentUser: "current_user",
    exp.SessionUser: "session_user",
    exp.CurrentCatalog: "current_catalog",
    exp.CurrentTimestamp: "current_timestamp",
    exp.CurrentDate: "current_date",
    exp.CurrentTime: "current_time",
    exp.Case: "case",
    exp.If: "case",
    exp.Exists: "exists",
    exp.Array: "array",
    exp.Coalesce: "coalesce",
    exp.Greatest: "greatest",
    exp.Least: "least",
    exp.Nullif: "nullif",
    exp.Count: "count",
    exp.Avg: "avg",
    exp.Sum: "sum",
    exp.Min: "min",
    exp.Max: "max",
}


def _strong_name(node: exp.Expression) -> str | None:
    """A name PostgreSQL takes from the expression itself (strength 2 in its source)."""
    if isinstance(node, exp.Column):
        return None if isinstance(node.this, exp.Star) else node.name
    if isinstance(node, exp.Paren):
        return _strong_name(node.this)
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        first = node.this.expressions[0] if node.this.expressions else None
        return figure_colname(first) if first is not None else None
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.Window):
        return _strong_name(node.this)  # row_number() OVER (...) is "row_number"
    if isinstance(node, exp.Interval):
        return "interval"  # a typed literal is a cast in PostgreSQL's grammar
    for cls, name in _FUNCTION_NAMES.items():
        if type(node) is cls:
            return name
    if isinstance(node, exp.Func) and not isinstance(node, exp.Binary):
        return node.sql_name().lower()
    return None


def figure_colname(node: exp.Expression) -> str:
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Cast):
        inner = _strong_name(node.this)
        if inner is not None:
            return inner
        return pg_type_name(node.to) or node.to.sql("postgres").lower()
    return _strong_name(node) or UNNAMED
