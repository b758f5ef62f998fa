"""PostgreSQL's 42803 for a column outside any aggregate of a query without grouping columns.

`SELECT g, count(*) FROM t` and `SELECT g, count(*) FROM t GROUP BY GROUPING SETS (())`
are errors in PostgreSQL (`column "t.g" must appear in the GROUP BY clause or be used in
an aggregate function`), found when the statement is analysed; DuckDB's binder says so in
other words and SQLSTATE, and `grouping(g)` there fails with a sentence of its own. With
grouping columns PostgreSQL also accepts columns a primary key determines, which needs
the catalog: only queries without grouping columns are checked here (the engine's error
stays for the rest). Only a query that cannot see an outer query's columns is checked
(the statement itself, a derived table, a CTE), so an unqualified name always belongs to
its FROM list; only one with a single FROM item, which PostgreSQL's message names; and
only one whose calls are all known to sqlglot (an unknown one, such as every() or an
aggregate a source defines, may be an aggregate).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from pgwire.errors import GROUPING_ERROR, PgError


def _no_grouping_columns(select: exp.Select) -> bool:
    """No GROUP BY, `GROUP BY ()`, grouping sets that are all empty, or keys that name no
    column (`GROUP BY 1 + 1`: one group, as without keys). A key that is a position
    (planner.constant_keys checked it) stands for the output it names."""
    group = select.args.get("group")
    if group is None:
        return True
    keys: list[exp.Expression] = []
    for item in group.expressions:
        if isinstance(item, (exp.GroupingSets, exp.Rollup, exp.Cube)):
            for member in item.expressions:
                keys += member.expressions if isinstance(member, exp.Tuple) else [member]
        else:
            keys.append(item)
    for key in keys:
        while isinstance(key, exp.Paren):
            key = key.this
        if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit() \
                and 1 <= int(key.this) <= len(select.expressions):
            key = select.expressions[int(key.this) - 1].unalias()
        if key.find(exp.Column) is not None or key.find(exp.Star) is not None:
            return False
    return True


def _own(node: exp.Expression, select: exp.Select) -> bool:
    """`node` belongs to `select` itself, not to a subquery inside it."""
    return node.find_ancestor(exp.Select) is select


def _inside(node: exp.Expression, select: exp.Select, kinds: tuple[type, ...]) -> bool:
    parent = node.parent
    while parent is not None and parent is not select:
        if isinstance(parent, kinds):
            return True
        parent = parent.parent
    return False


def _aggregated(select: exp.Select) -> bool:
    """An aggregate of this query level (not a window's, not a subquery's)."""
    return any(_own(call, select) and not _inside(call, select, (exp.Window,))
               for call in select.find_all(exp.AggFunc))


def _checked(scope: Scope) -> bool:
    select = scope.expression
    if not isinstance(select, exp.Select) or not (scope.is_root or scope.is_derived_table
                                                  or scope.is_cte):
        return False
    if any(join.args.get("lateral") or isinstance(join.this, exp.Lateral)
           for join in select.args.get("joins") or []):
        return False
    if any(_own(call, select) for call in select.find_all(exp.Anonymous)):
        return False  # an unknown call may be an aggregate (every(), one a source defines)
    return len(scope.selected_sources) == 1 and _no_grouping_columns(select) \
        and (select.args.get("group") is not None or select.args.get("having") is not None
             or _aggregated(select))


# An aggregate's arguments, its FILTER and its WITHIN GROUP ordering are read per row.
_AGGREGATING = (exp.AggFunc, exp.Filter, exp.WithinGroup)


def _grouped_columns(select: exp.Select) -> list[exp.Column]:
    """The columns of this query level read after grouping: in the select list, HAVING
    and ORDER BY (WHERE and the FROM list are read before)."""
    parts = [*select.expressions, select.args.get("having"), select.args.get("order")]
    return [column for part in parts if part is not None
            for column in part.find_all(exp.Column) if _own(column, select)]


def _output_alias(column: exp.Column, select: exp.Select) -> bool:
    """An unqualified ORDER BY name that is an output column of the select."""
    return not column.table and column.find_ancestor(exp.Order) is not None and \
        column.name in {p.alias_or_name for p in select.expressions}


def ungrouped_columns(tree: exp.Expression) -> None:
    """Raise PostgreSQL's 42803 where a query without grouping columns uses a column of
    its FROM item outside an aggregate, or calls grouping()."""
    for scope in traverse_scope(tree):
        if not _checked(scope):
            continue
        select = scope.expression
        for call in select.find_all(exp.Grouping):
            if _own(call, select):
                raise PgError(GROUPING_ERROR, "arguments to GROUPING must be grouping "
                              "expressions of the associated query level")
        (source_name,) = scope.selected_sources
        for column in _grouped_columns(select):
            if column.table and column.table != source_name or isinstance(column.this, exp.Star):
                continue
            if _inside(column, select, _AGGREGATING) or _output_alias(column, select):
                continue
            raise PgError(GROUPING_ERROR, f'column "{source_name}.{column.name}" must appear '
                          "in the GROUP BY clause or be used in an aggregate function")
