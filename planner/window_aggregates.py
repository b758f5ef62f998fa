"""An aggregate called as a window function with DISTINCT or ORDER BY in its arguments.

PostgreSQL implements neither (parse_func.c): `sum(DISTINCT x) OVER ()` is 0A000
`DISTINCT is not implemented for window functions`, `array_agg(x ORDER BY x) OVER ()` is
0A000 `aggregate ORDER BY is not implemented for window functions`. DuckDB computes both,
so the planner raises PostgreSQL's errors before any engine sees the statement.
"""

from __future__ import annotations

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError


def window_aggregates(tree: exp.Expression) -> None:
    """Raise PostgreSQL's 0A000 for a window aggregate with DISTINCT or ORDER BY arguments."""
    for window in tree.find_all(exp.Window):
        call = window.this.this if isinstance(window.this, exp.Filter) else window.this
        if not isinstance(call, exp.AggFunc):
            continue
        if isinstance(call.this, exp.Distinct):
            raise PgError(FEATURE_NOT_SUPPORTED, "DISTINCT is not implemented for window functions")
        if isinstance(call.this, exp.Order):
            raise PgError(FEATURE_NOT_SUPPORTED, "aggregate ORDER BY is not implemented for window functions")
