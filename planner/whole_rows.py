"""A whole-row reference (`SELECT t FROM t`, `WHERE t IS NULL`) in the engine: refused,
but as an output column of a DuckDB source's own statement.

PostgreSQL reads a table's name standing where a column may as the table's row, a value
of its row type. DuckDB binds the same name to a struct of the row, with semantics of its
own: `t IS NULL` is false for a row whose fields are all NULL (PostgreSQL: true). So a
statement the engine runs that holds one is refused (0A000); one shipped whole to a
PostgreSQL source is PostgreSQL's to answer (connectors.postgres.records). Shipped whole
to a DuckDB source (Parquet/CSV files), a row that is an output column by itself is that
struct, which the executor describes as the table's row type (its fields are the
columns, as the catalog's row type has them): allowed there, with its position and table
returned. A field of the row, `(t).id`, is the column itself and stays.

    SELECT t FROM t WHERE t IS NOT NULL   -- over a Parquet table, or federated
    -> 0A000 a whole-row reference (t) is not supported by fedgate outside statements
       shipped whole to one PostgreSQL source or a file source's own rows
    SELECT t FROM t WHERE id = 1          -- over a Parquet table: (0, t's TableInfo)
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


def _output_row(column: exp.Column, tree: exp.Expression, scope: Scope,
                tables: list[tuple[exp.Table, TableInfo]]) -> tuple[int, TableInfo] | None:
    """(output position, table) when `column` is, by itself, an output column of the
    statement `tree` naming a catalog table of its FROM; else None."""
    output = column.parent if isinstance(column.parent, exp.Alias) else column
    if not isinstance(tree, exp.Select) or scope.expression is not tree or output.parent is not tree \
            or output.arg_key != "expressions" or tree.args.get("distinct") is not None:
        return None  # (DISTINCT compares rows, whose equality is not shown to be PostgreSQL's)
    source = scope.sources.get(column.name)
    info = next((info for table, info in tables if table is source), None)
    return (output.index, info) if info is not None else None


def whole_rows(tree: exp.Expression, tables: list[tuple[exp.Table, TableInfo]],
               outputs: bool = False) -> tuple[tuple[int, TableInfo], ...]:
    """Raise 0A000 for the first whole-row reference in `tree` (the engine's statement);
    with `outputs`, one that is an output column by itself of a table's row is allowed:
    its (position, table) is returned (planner.plan: a DuckDB source's struct of the row)."""
    columns_of = {id(table): {f.name for f in info.schema} for table, info in tables}
    allowed: list[tuple[int, TableInfo]] = []
    for scope in traverse_scope(tree):
        for column in scope.columns:
            if column.table or isinstance(column.this, exp.Star) or _field_access(column):
                continue
            if _row_of(column, scope, columns_of):
                row = _output_row(column, tree, scope, tables) if outputs else None
                if row is None:
                    raise PgError(FEATURE_NOT_SUPPORTED, f"a whole-row reference ({column.name}) is not "
                                  "supported by fedgate outside statements shipped whole to one "
                                  "PostgreSQL source or a file source's own rows")
                allowed.append(row)
    return tuple(allowed)
