"""percentile_cont() of integers and numerics as PostgreSQL computes it: in float8.

PostgreSQL has percentile_cont only for float8 and interval (orderedsetaggs.c); a numeric
or integer sort key is cast to float8, so the interpolation and its result are float8:
`percentile_cont(0.5) WITHIN GROUP (ORDER BY amount)` of a numeric(10,2) says `496.5`.
DuckDB's quantile_cont keeps a DECIMAL key's type and says `496.50`. The key is cast to
DOUBLE here, so DuckDB interpolates as PostgreSQL does and the result is a float8:

    percentile_cont(0.5) WITHIN GROUP (ORDER BY x)          x numeric(10,2)
    -> QUANTILE_CONT(CAST(x AS DOUBLE), 0.5 ORDER BY CAST(x AS DOUBLE))

A key of another type (an interval, or one whose type is not known) is left as written.
percentile_disc returns the key's own type in both systems and needs nothing.
"""

from __future__ import annotations

from sqlglot import exp

T = exp.DataType.Type
_CAST_TO_FLOAT8 = {*exp.DataType.INTEGER_TYPES, T.DECIMAL, T.FLOAT}


def needs_rewrite(tree: exp.Expression) -> bool:
    return any(isinstance(w.this, exp.PercentileCont) for w in tree.find_all(exp.WithinGroup))


def float8_percentiles(node: exp.Expression) -> exp.Expression:
    """A percentile_cont's integer or numeric sort key, cast to float8 (sqlglot's transform
    callback)."""
    if not isinstance(node, exp.WithinGroup) or not isinstance(node.this, exp.PercentileCont):
        return node
    order = node.expression
    keys = order.expressions if isinstance(order, exp.Order) else []
    if len(keys) != 1 or not isinstance(keys[0], exp.Ordered):
        return node
    key = keys[0].this
    if key.type is None or key.type.this not in _CAST_TO_FLOAT8:
        return node
    keys[0].set("this", exp.cast(key, exp.DataType.build("double")))
    return node
