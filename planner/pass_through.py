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

The merge is exact only for a pass-through, so it applies when the outer SELECT has
nothing but its FROM, a projection of the inner outputs, all of them, in their order,
under their own names (a `*` or the columns one by one), and at most a filter and an
order by those outputs: no join, grouping, limit, DISTINCT or window of its own, no column
aliases on the derived table, and a CTE that is not recursive and is read only there.
The filter moves into the inner SELECT over its expressions, as a HAVING when it groups
(not past the inner SELECT's LIMIT, OFFSET, DISTINCT or window):

    SELECT * FROM (SELECT t.d AS d, avg(t.k) AS a FROM t GROUP BY t.d) AS s WHERE s.d > 1
    ->  SELECT t.d AS d, avg(t.k) AS a FROM t GROUP BY t.d HAVING (t.d) > 1

An outer ORDER BY of output names replaces the inner one (there is no LIMIT to keep). The outer SELECT keeps its identity (its
arguments are replaced by the inner one's), so references to the tree stay valid.
"""

from __future__ import annotations

from sqlglot import exp

_OUTER_ONLY = ("from_", "expressions", "with_", "where", "order")  # a pass-through has nothing else


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


def _groups(inner: exp.Select) -> bool:
    """`inner` forms groups: a GROUP BY, a HAVING, or an aggregate in its outputs."""
    return bool(inner.args.get("group") or inner.args.get("having")) or any(
        item.find(exp.AggFunc) is not None for item in inner.expressions)


def _condition_inside(condition: exp.Expression, inner: exp.Select, alias: str) -> exp.Expression | None:
    """The outer WHERE `condition` over `inner`'s outputs, written over `inner`'s own
    expressions, to filter its rows before they leave it (its WHERE, or its HAVING when it
    groups: the same rows either way); None when it cannot move: it reads no output or
    something else (a subquery), or `inner` has a window function, LIMIT or OFFSET
    (filtered before them, other rows would be counted or kept), or is DISTINCT (left
    as it is: not shown to be the same)."""
    if condition.find(exp.Subquery, exp.Select, exp.Star) is not None \
            or any(inner.args.get(key) for key in ("limit", "offset", "fetch", "distinct")) \
            or any(item.find(exp.Window) is not None for item in inner.expressions):
        return None
    outputs = {item.alias_or_name: item.unalias() for item in inner.expressions}
    if "" in outputs or len(outputs) != len(inner.expressions):
        return None
    moved = condition.copy()
    for column in list(moved.find_all(exp.Column)):
        if column.table not in ("", alias) or column.name not in outputs:
            return None
        column.replace(exp.paren(outputs[column.name].copy(), copy=False))
    return moved


def _order_outside(order: exp.Order, inner: exp.Select, alias: str) -> exp.Order | None:
    """The outer ORDER BY over `inner`'s outputs, by their names (a top-level ORDER BY
    reads output names) or positions, to replace `inner`'s own; None when it reads anything else or
    `inner` limits its rows (ordered after the limit, they are other rows)."""
    if any(inner.args.get(key) for key in ("limit", "offset", "fetch")) \
            or order.find(exp.Subquery, exp.Select) is not None:
        return None
    names = {item.alias_or_name for item in inner.expressions}
    moved = order.copy()
    for key in moved.expressions:
        if isinstance(key.this, exp.Literal) and key.this.is_int \
                and 1 <= int(key.this.this) <= len(inner.expressions):
            continue  # a position: the same outputs in the same order
        if not isinstance(key.this, exp.Column) or key.this.table not in ("", alias) \
                or key.this.name not in names:
            return None
        key.this.replace(exp.column(key.this.name, quoted=key.this.this.quoted))
    return moved


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
    where = tree.args.get("where")
    condition = None if where is None else _condition_inside(where.this, inner, alias_name)
    if where is not None and condition is None:
        return tree
    order = tree.args.get("order")
    order = None if order is None else _order_outside(order, inner, alias_name)
    if tree.args.get("order") is not None and order is None:
        return tree
    others = [c for c in tree.args["with_"].expressions if c is not cte] if cte is not None else []
    if others and inner.args.get("with_") is not None:
        return tree  # two WITH lists to merge: names could clash
    args = dict(inner.args)
    for key in list(tree.args):
        tree.set(key, None)
    for key, value in args.items():
        tree.set(key, value)
    if order is not None:  # the outer order, of the same rows
        tree.set("order", order)
    if condition is not None:  # the outer filter, on the inner rows: HAVING of a grouping
        place = "having" if _groups(inner) else "where"
        found = tree.args.get(place)
        tree.set(place, exp.Having(this=condition) if place == "having" else exp.Where(this=condition))
        if found is not None:
            tree.args[place].set("this", exp.and_(found.this, condition))
    if others:
        tree.set("with_", exp.With(expressions=others))
    return tree
