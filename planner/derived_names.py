"""The columns of derived tables, CTEs and VALUES lists named as PostgreSQL names them.

A `SELECT *` over a derived table shows that table's column names, and the outer query
may refer to them (`sub.count`). An engine or sqlglot's qualifier names an unaliased
expression its own way (`count_star()`, `_col_0`, `(id + 1)`), so every inner select
list gets explicit aliases with PostgreSQL's names (planner.colnames), and every VALUES
list in FROM gets `column1`, `column2` ... for the columns its alias list leaves out.

A select list whose PostgreSQL names repeat (`SELECT 1, 2` is `?column?` twice) keeps
the names it has: an outer reference or `*` could not tell two equal aliases apart.
"""

from __future__ import annotations

from sqlglot import exp

from planner.colnames import figure_colname


def _leftmost_select(query: exp.Expression) -> exp.Select | None:
    while isinstance(query, (exp.SetOperation, exp.Subquery)):
        query = query.this  # a set operation takes its names from its leftmost branch
    return query if isinstance(query, exp.Select) else None


def _name_select(select: exp.Select, sql: str) -> None:
    projections = list(select.expressions)
    if any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star))
           for p in projections):
        return
    names = [figure_colname(p, sql) for p in projections]
    if len(set(names)) != len(names):
        return
    for projection, name in zip(projections, names):
        if isinstance(projection, exp.Alias):
            if projection.alias != name:  # an unquoted alias folds to lower case
                projection.set("alias", exp.to_identifier(name, quoted=True))
        elif not isinstance(projection, exp.Column) or projection.name != name:
            projection.replace(exp.alias_(projection.copy(), name, quoted=True))


def _name_values(values: exp.Values) -> None:
    alias = values.args.get("alias")
    if alias is None or not values.expressions:
        return
    width = len(values.expressions[0].expressions)
    given = list(alias.columns)
    if len(given) >= width:
        return
    alias.set("columns", given + [exp.to_identifier(f"column{i + 1}", quoted=True)
                                  for i in range(len(given), width)])


def derived_names(tree: exp.Expression, sql: str) -> None:
    """Alias the columns of every derived table, CTE and VALUES list in `tree` (in place);
    `sql` is the text the tree was parsed from (function names as written)."""
    for node in list(tree.find_all(exp.Subquery, exp.CTE, exp.Values)):
        if isinstance(node, exp.Values):
            _name_values(node)
            continue
        alias = node.args.get("alias")
        if isinstance(node, exp.Subquery) and not isinstance(node.parent, (exp.From, exp.Join)):
            continue  # a scalar or IN subquery's column names are never seen
        if isinstance(alias, exp.TableAlias) and alias.columns:
            continue  # the alias list names them
        select = _leftmost_select(node.this)
        if select is not None:
            _name_select(select, sql)
