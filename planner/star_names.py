"""The names a `*` in the outer select list shows, as PostgreSQL shows them.

PostgreSQL lets a derived table, a VALUES list or a column alias list repeat a name, and
`*` shows every column under its own name: `SELECT * FROM (SELECT 1 AS t, 2 AS t) sub` is
`t, t`. An engine renames the second (`t_1`), or, where its qualifier cannot expand the
star, names every column `*`. So the outer stars are expanded into names here, from the
catalog's tables and the select lists of derived tables and CTEs, and the result columns
are named by position (`QueryPlan.column_names`):

    SELECT * FROM (SELECT 1 AS t, 2 AS t) sub, nation AS n(key)
      → t, t, key, n_name, n_regionkey, n_comment

Where a star's columns are not known here (a USING or NATURAL join, which
`planner.using_star` expands itself, a table function, LATERAL, a source of another kind),
None leaves the names to the rows.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from connectors.base import TableInfo
from planner.colnames import figure_colname

Tables = Mapping[int, TableInfo]  # id() of each catalog table node → what it holds


def star_names(tree: exp.Expression, sql: str, tables: Tables) -> tuple[str, ...] | None:
    """The output names of `tree`'s outer select list with its stars expanded, or None."""
    names = _query_names(tree, sql, tables)
    return tuple(names) if names is not None else None


def _query_names(query: exp.Expression, sql: str, tables: Tables) -> list[str] | None:
    while isinstance(query, (exp.SetOperation, exp.Subquery)):
        query = query.this  # the leftmost branch names a set operation's columns
    if not isinstance(query, exp.Select):
        return None
    names: list[str] = []
    for projection in query.expressions:
        if isinstance(projection, exp.Star):
            found = _from_names(query, None, sql, tables)
        elif isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
            found = _from_names(query, projection.table, sql, tables)
        else:
            found = [figure_colname(projection, sql)]
        if found is None:
            return None
        names.extend(found)
    return names


def _from_names(select: exp.Select, qualifier: str | None, sql: str, tables: Tables) -> list[str] | None:
    """The columns of the select's FROM items (of the one named `qualifier`, if given)."""
    from_ = select.args.get("from_")
    if from_ is None:
        return None  # `SELECT *` without FROM is PostgreSQL's error, not ours to name
    items = [from_.this]
    for join in select.args.get("joins") or []:
        if join.args.get("using") or join.args.get("method"):
            return None  # NATURAL and USING merge columns (planner.using_star)
        items.append(join.this)
    names: list[str] = []
    matched = False
    for item in items:
        if qualifier is not None and item.alias_or_name.lower() != qualifier.lower():
            continue
        matched = True
        found = _item_names(item, sql, tables)
        if found is None:
            return None
        names.extend(found)
    return names if matched else None


def _item_names(item: exp.Expression, sql: str, tables: Tables) -> list[str] | None:
    if isinstance(item, exp.Table) and id(item) in tables:
        own = [field.name for field in tables[id(item)].schema]
    elif isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier) and not item.db:
        cte = _cte(item, item.name)
        own = _aliased(_query_names(cte.this, sql, tables), cte.args.get("alias")) if cte else None
    elif isinstance(item, exp.Subquery) and not item.args.get("lateral"):
        own = _query_names(item.this, sql, tables)
    elif isinstance(item, exp.Values):
        rows = item.expressions
        width = len(rows[0].expressions) if rows and isinstance(rows[0], exp.Tuple) else None
        own = [f"column{i + 1}" for i in range(width)] if width else None
    else:
        return None
    return _aliased(own, item.args.get("alias"))


def _aliased(names: list[str] | None, alias: exp.Expression | None) -> list[str] | None:
    """A column alias list renames the first columns; the others keep their names."""
    if names is None or not isinstance(alias, exp.TableAlias) or not alias.columns:
        return names
    given = [column.name for column in alias.columns]
    if len(given) > len(names):
        return None  # PostgreSQL's error (42P10), not ours to name
    return given + names[len(given):]


def _cte(node: exp.Expression, name: str) -> exp.CTE | None:
    """The CTE `name` visible from `node`: the nearest WITH that defines it."""
    parent = node.parent
    while parent is not None:
        with_ = parent.args.get("with_")
        if isinstance(with_, exp.With):
            for cte in with_.expressions:
                if cte.alias_or_name.lower() == name.lower():
                    return cte
        parent = parent.parent
    return None
