"""corr() and regr_slope() where a variable does not vary: NULL, as PostgreSQL answers.

PostgreSQL's float8_corr and float8_regr_slope return NULL when the sum of squares of the
independent variable (Sxx), or for corr of either (Syy), is zero: "per spec, return NULL
for horizontal and vertical lines". DuckDB divides by that zero and answers NaN (regr_r2
and regr_intercept already answer as PostgreSQL does). So each such call, with its FILTER
and OVER, is guarded by DuckDB's own regr_sxx/regr_syy over the same pairs (rows where
both arguments are non-null, as both systems count them):

    corr(y, x) FILTER (WHERE c)
    →  CASE WHEN regr_sxx(y, x) FILTER (WHERE c) = 0 OR regr_syy(y, x) FILTER (WHERE c) = 0
            THEN NULL ELSE corr(y, x) FILTER (WHERE c) END
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import AGGREGATE_WRAPPERS, aggregate_call, in_same_context

_GUARDED = (exp.Corr, exp.RegrSlope)


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(*_GUARDED) is not None


def postgres_regression(node: exp.Expression) -> exp.Expression:
    """The outermost of corr/regr_slope and its FILTER/OVER, guarded as the module says."""
    inner = aggregate_call(node)
    if not isinstance(inner, _GUARDED) or isinstance(node.parent, AGGREGATE_WRAPPERS):
        return node
    y, x = inner.this, inner.expression

    def zero(kind: type[exp.Expression]) -> exp.Expression:
        total = in_same_context(node, kind(this=y.copy(), expression=x.copy()))
        return exp.EQ(this=total, expression=exp.Literal.number(0))

    vertical = zero(exp.RegrSxx)
    if isinstance(inner, exp.Corr):
        vertical = exp.Or(this=vertical, expression=zero(exp.RegrSyy))
    return exp.Case(ifs=[exp.If(this=vertical, true=exp.Null())], default=node.copy())
