"""PostgreSQL's 42702 for a reference to a derived table column whose name repeats.

`SELECT a FROM (SELECT id AS a, s AS a FROM t) x` is an error in PostgreSQL (`column
reference "a" is ambiguous`); an engine or sqlglot's qualifier takes the first `a` or
renames the second (`a_1`), and answers. `SELECT *` over such a table is not an error
(PostgreSQL shows both columns), nor is an ORDER BY naming an output column of the
outer select list.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from pgwire.errors import AMBIGUOUS_COLUMN, PgError


def _repeated_names(source: Scope) -> set[str]:
    """The column names a derived table or CTE shows more than once."""
    node = source.expression
    holder = node.parent if isinstance(node.parent, (exp.Subquery, exp.CTE)) else None
    alias = holder.args.get("alias") if holder is not None else None
    if isinstance(alias, exp.TableAlias) and alias.columns:
        names = [c.name for c in alias.columns]
    else:
        while isinstance(node, exp.SetOperation):
            node = node.this  # a set operation's names are its leftmost branch's
        if not isinstance(node, exp.Select) or any(
                isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star))
                for p in node.expressions):
            return set()
        names = [p.alias_or_name for p in node.expressions]
    return {n for n in names if names.count(n) > 1}


def _outer_alias(column: exp.Column, scope: Scope) -> bool:
    """An unqualified ORDER BY name that is an output column of the select itself."""
    select = scope.expression
    return not column.table and isinstance(select, exp.Select) and \
        column.find_ancestor(exp.Order) is not None and \
        column.name in {p.alias_or_name for p in select.expressions}


def ambiguous_columns(tree: exp.Expression) -> None:
    """Raise PostgreSQL's 42702 where `tree` refers to a repeated derived column name."""
    for scope in traverse_scope(tree):
        repeated = {name: _repeated_names(source) for name, source in scope.sources.items()
                    if isinstance(source, Scope)}
        if not any(repeated.values()):
            continue
        for column in scope.columns:
            names = [repeated.get(column.table, set())] if column.table else repeated.values()
            if any(column.name in n for n in names) and not _outer_alias(column, scope):
                raise PgError(AMBIGUOUS_COLUMN, f'column reference "{column.name}" is ambiguous')
