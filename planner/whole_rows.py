"""A whole-row reference (`SELECT t FROM t`, `WHERE t IS NULL`) is refused in the engine.

PostgreSQL reads a table's name standing where a column may as the table's row, a value
of its row type. DuckDB binds the same name to a struct of the row, with semantics of its
own: `t IS NULL` is false for a row whose fields are all NULL (PostgreSQL: true), and
no struct goes out as the row type. So a statement the engine runs that holds one is
refused (0A000); one shipped whole to a PostgreSQL source is PostgreSQL's to answer
(connectors.postgres.records). A field of the row, `(t).id`, is the column itself and
stays.

    SELECT t FROM t WHERE t IS NOT NULL   -- over a Parquet table, or federated
    -> 0A000 a whole-row reference (t) is not supported by fedgate outside statements
       shipped whole to one PostgreSQL source
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from connectors.base import TableInfo
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError


def _field_access(column: exp.Column) -> bool:
    """`(t).id`: the column is the parenthesised operand of a field selection."""
    paren = column.parent
    return isinstance(paren, exp.Paren) and isinstance(paren.parent, exp.Dot) and \
        paren.parent.this is paren and isinstance(paren.parent.expression, exp.Identifier)


def _column_names(source: exp.Expression | Scope, columns_of: dict[int, set[str]]) -> set[str] | None:
    """The columns a FROM item shows (None: not known here, so not judged)."""
    if isinstance(source, exp.Table):
        return columns_of.get(id(source))
    if isinstance(source, Scope) and isinstance(source.expression, (exp.Select, exp.SetOperation)):
        node = source.expression
        holder = node.parent if isinstance(node.parent, (exp.Subquery, exp.CTE)) else None
        alias = holder.args.get("alias") if holder is not None else None
        if isinstance(alias, exp.TableAlias) and alias.columns:
            return {c.name for c in alias.columns}
        while isinstance(node, exp.SetOperation):
            node = node.this
        if isinstance(node, exp.Select) and not any(isinstance(p, exp.Star) or p.is_star
                                                    for p in node.expressions):
            return set(node.named_selects)
    return None


def _row_of(column: exp.Column, scope: Scope, columns_of: dict[int, set[str]]) -> bool:
    """Whether unqualified `column` names a FROM item of its scope (or an outer one)
    that no FROM item there has a column of that name."""
    while scope is not None:
        if column.name in scope.sources:
            for source in scope.sources.values():
                names = _column_names(source, columns_of)
                if names is None or column.name in names:
                    return False
            return True
        scope = scope.parent
    return False


def whole_rows(tree: exp.Expression, tables: list[tuple[exp.Table, TableInfo]]) -> None:
    """Raise 0A000 for the first whole-row reference in `tree` (the engine's statement)."""
    columns_of = {id(table): {f.name for f in info.schema} for table, info in tables}
    for scope in traverse_scope(tree):
        for column in scope.columns:
            if column.table or isinstance(column.this, exp.Star) or _field_access(column):
                continue
            if _row_of(column, scope, columns_of):
                raise PgError(FEATURE_NOT_SUPPORTED, f"a whole-row reference ({column.name}) is not "
                              "supported by fedgate outside statements shipped whole to one "
                              "PostgreSQL source")
