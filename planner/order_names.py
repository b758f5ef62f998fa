"""PostgreSQL's 42703 for an ORDER BY name that is neither an output nor an input column.

PostgreSQL folds an unquoted name to lower case and matches names exactly: with
`SELECT id AS "Mixed" FROM t ORDER BY mixed`, `mixed` is no output column (that is
`Mixed`) and no column of t, so it is an error (`column "mixed" does not exist`). DuckDB
matches names case-insensitively and sorts by `Mixed`; and where it does find nothing
(`ORDER BY Mixed`), its message spells the name as written. So a statement's own ORDER
BY is checked here: a bare name must be an output name or a column of a table it reads,
a name inside an expression a column of a table (PostgreSQL resolves those against the
inputs only). Checked only where every relation of the FROM list is a catalog table
whose columns are known, and not in subqueries, whose names may be the outer query's.

The same holds for an output name used in the select list, WHERE or HAVING: PostgreSQL
resolves those against the inputs only, so `SELECT id AS k, k + 1 FROM t` and `SELECT id
AS k FROM t WHERE k = 1` are 42703, where DuckDB's lateral aliases answer rows. (GROUP BY
may name an output, in both.)
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope
from sqlglot.schema import Schema

from pgwire.errors import UNDEFINED_COLUMN, PgError

# Columns every PostgreSQL table has besides its own (a PostgreSQL source answers them).
_SYSTEM_COLUMNS = frozenset({"ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"})


def _folded(identifier: exp.Identifier) -> str:
    return identifier.name if identifier.quoted else identifier.name.lower()


def _output_names(select: exp.Select) -> set[str]:
    names = set()
    for projection in select.expressions:
        if isinstance(projection, exp.Alias):
            names.add(_folded(projection.args["alias"]))
        elif isinstance(projection, exp.Column) and isinstance(projection.this, exp.Identifier):
            names.add(_folded(projection.this))
    return names


def _input_names(scope: Scope, schema: Schema) -> set[str] | None:
    """Every column name of the tables the select reads; None where one is not known."""
    names = set(_SYSTEM_COLUMNS)
    for _, source in scope.selected_sources.values():
        if not isinstance(source, exp.Table) or not isinstance(source.this, exp.Identifier):
            return None
        columns = list(schema.column_names(source))
        if not columns:
            return None
        alias = source.args.get("alias")
        renamed = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
        names.update(renamed + columns[len(renamed):])
    return names


def _unqualified(order: exp.Order) -> list[tuple[exp.Column, bool]]:
    """Each unqualified column of the ORDER BY outside a subquery, and whether it is a
    bare sort key (which may name an output)."""
    found = []
    for ordered in order.expressions:
        key = ordered.this if isinstance(ordered, exp.Ordered) else ordered
        for column in key.find_all(exp.Column):
            if column.table or not isinstance(column.this, exp.Identifier) or \
                    column.find_ancestor(exp.Query, exp.Order) is not order:
                continue
            found.append((column, column is key))
    return found


def _aliases(select: exp.Select) -> set[str]:
    return {_folded(p.args["alias"]) for p in select.expressions if isinstance(p, exp.Alias)}


def _alias_uses(select: exp.Select, aliases: set[str]) -> list[exp.Column]:
    """The unqualified columns of the select list, WHERE and HAVING (outside subqueries)
    spelled as one of the select's output aliases."""
    clauses = [*select.expressions, select.args.get("where"), select.args.get("having")]
    return [column for clause in clauses if clause is not None for column in clause.find_all(exp.Column)
            if not column.table and isinstance(column.this, exp.Identifier)
            and _folded(column.this) in aliases and column.find_ancestor(exp.Query) is select]


def order_names(tree: exp.Expression, schema: Schema) -> None:
    """Raise PostgreSQL's 42703 for an ORDER BY name of `tree` neither resolves, or an
    output name used where only input columns are seen."""
    if not isinstance(tree, exp.Select):
        return
    order = tree.args.get("order")
    columns = _unqualified(order) if order is not None else []
    aliases = _aliases(tree)
    lateral = _alias_uses(tree, aliases) if aliases else []
    if not columns and not lateral:
        return  # a star's outputs are input columns (or renamed by the alias list): no matter
    scope = build_scope(tree)
    inputs = _input_names(scope, schema) if scope is not None else None
    if inputs is None:
        return
    for column in lateral:
        name = _folded(column.this)
        if name not in inputs:
            raise PgError(UNDEFINED_COLUMN, f'column "{name}" does not exist')
    outputs = _output_names(tree)
    for column, bare in columns:
        name = _folded(column.this)
        if name not in inputs and not (bare and name in outputs):
            raise PgError(UNDEFINED_COLUMN, f'column "{name}" does not exist')
