"""`*` and `x.*` in a select list, expanded to the columns PostgreSQL shows.

A star's columns are named and typed by the relation it reads, which the engine names its
own way: a table whose alias list renames a column to a name another column has
(`SELECT x.* FROM t AS x(a, b)` shows `b` twice in PostgreSQL, the engine `b` and `b_1`),
and types a derived column by its own (`SELECT * FROM (SELECT s::varchar FROM t) AS sub`
is varchar in PostgreSQL, text in the engine). So a star over one relation is expanded
here: a catalog table's columns (renamed by the alias list), or a derived table's, CTE's
or VALUES list's outputs as planner.result_types names and types them. A star over a join
is not expanded (None: the engine's names and types stay).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.optimizer.scope import Scope
from sqlglot.schema import Schema

Column = tuple[str, "str | None"]  # a column's name and PostgreSQL type (None: not known)


def is_star(projection: exp.Expression) -> bool:
    return isinstance(projection, exp.Star) or (isinstance(projection, exp.Column)
                                                and isinstance(projection.this, exp.Star))


def star_columns(projection: exp.Expression, scope: Scope | None, schema: Schema,
                 table_type: Callable[[exp.Table, str], str | None],
                 query_columns: Callable[[exp.Expression], list[Column] | None]) -> list[Column] | None:
    """The columns `projection` (a star) stands for in `scope`; None where not known."""
    if scope is None:
        return None
    sources = scope.selected_sources
    if isinstance(projection, exp.Star):
        if len(sources) != 1 or projection.args.get("except") or projection.args.get("replace"):
            return None
        _, source = next(iter(sources.values()))
    else:
        entry = sources.get(projection.table)
        if entry is None:
            return None
        _, source = entry
    if isinstance(source, exp.Table):
        return _table_columns(source, schema, table_type)
    if isinstance(source, Scope):
        return query_columns(source.expression)
    return None


def _table_columns(table: exp.Table, schema: Schema,
                   table_type: Callable[[exp.Table, str], str | None]) -> list[Column] | None:
    names = list(schema.column_names(table))
    if not names:
        return None
    alias = table.args.get("alias")
    renamed = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    if len(renamed) > len(names):
        return None  # PostgreSQL's error, which the engine raises too
    return [(renamed[i] if i < len(renamed) else name, table_type(table, name))
            for i, name in enumerate(names)]


def renamed(query: exp.Expression, columns: list[Column]) -> list[Column]:
    """`columns` with the names the alias list of `query`'s derived table, CTE or VALUES
    list gives the first of them (`(SELECT a, b ...) AS sub(x)` is x, b)."""
    alias = query.args.get("alias")
    if alias is None and isinstance(query.parent, (exp.CTE, exp.Subquery)):
        alias = query.parent.args.get("alias")
    given = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    return [(given[i] if i < len(given) else name, kind) for i, (name, kind) in enumerate(columns)]
