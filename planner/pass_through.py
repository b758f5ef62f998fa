"""A SELECT that only passes on the rows of one derived table or CTE, merged into it.

Before: SELECT * FROM (SELECT avg(t.g) AS avg FROM t GROUP BY t.d) AS s
After:  SELECT avg(t.g) AS avg FROM t GROUP BY t.d

    WITH c AS (SELECT avg(t.k) AS avg FROM t) SELECT c.avg FROM c
    ->  SELECT avg(t.k) AS avg FROM t

Why: on a statement shipped whole to a source that runs in DuckDB, an average (or a
numeric division) gets PostgreSQL's per-value display scale only as an output of the
top-level SELECT (connectors.dialects.duckdb.quotient); one level down it keeps a fixed
scale, so `SELECT * FROM (SELECT avg(g) ...) s` showed 1.0000000000000000 where
PostgreSQL shows 1.00000000000000000000. Merging the wrapper makes those outputs top-level
again, with the same rows in the same order.

The merge is exact only for a pure pass-through, so it applies when the outer SELECT has
nothing but its FROM and a projection of the inner outputs, all of them, in their order,
under their own names (a `*` or the columns one by one): no join, filter, grouping, order,
limit, DISTINCT or window of its own, no column aliases on the derived table, and a CTE
that is not recursive and is read only there. The outer SELECT keeps its identity (its
arguments are replaced by the inner one's), so references to the tree stay valid.
"""

from __future__ import annotations

from sqlglot import exp

_OUTER_ONLY = ("from_", "expressions", "with_")  # a pure pass-through has nothing else


def _worth_it(inner: exp.Select) -> bool:
    """Only outputs whose display scale depends on being top-level gain from the merge."""
    return any(item.find(exp.Avg, exp.Div) is not None for item in inner.expressions)


def _is_star(item: exp.Expression) -> bool:
    """`*` or `t.*` (not the `*` of count(*)): its columns are not known here."""
    return isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star))


def _passes_through(outer: exp.Select, inner: exp.Select, alias: str) -> bool:
    if not inner.expressions or any(_is_star(item.unalias()) for item in inner.expressions):
        return False
    projected = outer.expressions
    if len(projected) == 1 and isinstance(projected[0], exp.Star):
        return True  # the inner outputs as they are, unnamed ones under the same names
    names = [item.alias_or_name for item in inner.expressions]
    if not all(names) or len(set(names)) != len(names) or len(projected) != len(names):
        return False
    for item, name in zip(projected, names):
        column = item.unalias()
        if not isinstance(column, exp.Column) or column.name != name \
                or column.table not in ("", alias) or item.alias_or_name != name:
            return False
    return True


def _cte_read_once(outer: exp.Select, name: str) -> exp.CTE | None:
    """The CTE `name` of `outer`'s WITH, if it is not recursive and `outer`'s FROM is the
    only table read by that name in the statement."""
    with_ = outer.args.get("with_")
    if with_ is None or with_.args.get("recursive"):
        return None
    ctes = [c for c in with_.expressions if c.alias_or_name == name]
    reads = [t for t in outer.find_all(exp.Table) if not t.db and t.name == name]
    if len(ctes) != 1 or len(reads) != 1:
        return None
    return ctes[0]


def pass_through(tree: exp.Expression) -> exp.Expression:
    """Merge `tree`, a SELECT that only passes on one derived table's or CTE's rows, into
    that inner SELECT, in place; anything else is returned unchanged."""
    if not isinstance(tree, exp.Select) or any(
            value for key, value in tree.args.items() if key not in _OUTER_ONLY and value):
        return tree
    source = tree.args["from_"].this if tree.args.get("from_") else None
    cte = None
    if isinstance(source, exp.Subquery):
        inner, alias = source.this, source.args.get("alias")
        if alias is not None and alias.columns:
            return tree
        alias_name = source.alias
    elif isinstance(source, exp.Table) and not source.db:
        cte = _cte_read_once(tree, source.name)
        if cte is None or (cte.args.get("alias") and cte.args["alias"].columns):
            return tree
        inner, alias_name = cte.this, source.alias_or_name
    else:
        return tree
    if not isinstance(inner, exp.Select) or not _worth_it(inner) \
            or not _passes_through(tree, inner, alias_name):
        return tree
    others = [c for c in tree.args["with_"].expressions if c is not cte] if cte is not None else []
    if others and inner.args.get("with_") is not None:
        return tree  # two WITH lists to merge: names could clash
    args = dict(inner.args)
    for key in list(tree.args):
        tree.set(key, None)
    for key, value in args.items():
        tree.set(key, value)
    if others:
        tree.set("with_", exp.With(expressions=others))
    return tree
