"""Shared machinery of the per-dialect capability tables (docs/design.md §4).

A capability table is a whitelist: every node of an expression must be a construct the
dialect evaluates exactly as PostgreSQL does, or the expression is not EXACT. A dialect
gives a dict from sqlglot node class to a checker; a checker returns None when the node is
fine, or a `Classification` (INEXACT or UNSUPPORTED, with the reason EXPLAIN shows). The
answer for the whole expression is the worst answer of its nodes. Nodes missing from the
table are UNSUPPORTED: a construct nobody checked against the real server does not ship.

Column facts (Arrow type, collation) come from the `TableInfo`: collations travel as the
Arrow field metadata key `collation` (see `connectors.base.COLLATION_KEY`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pyarrow as pa
from sqlglot import exp

from connectors.base import (COLLATION_KEY, EXACT, Classification, Pushdown, TableInfo,
                             volatile_reason)

Checker = Callable[[exp.Expression, TableInfo | None], Classification | None]

_RANK = {Pushdown.EXACT: 0, Pushdown.INEXACT: 1, Pushdown.UNSUPPORTED: 2}


def call(name: str, *arguments: exp.Expression) -> exp.Expression:
    """A call of the engine's own function `name`, as written: anonymous, so no rewrite of
    PostgreSQL's function of that name (hex() is to_hex(), regexp_replace() reads
    PostgreSQL's patterns) takes it for one. The arguments are placed as given."""
    return exp.Anonymous(this=name, expressions=list(arguments))


def raised(message: str) -> exp.Expression:
    """DuckDB's error(message): the engine raises PostgreSQL's words where the dialect's
    rewrite met an argument PostgreSQL raises on (pgwire.engine_words gives the SQLSTATE)."""
    return call("error", exp.Literal.string(message))


def ok(node: exp.Expression, table: TableInfo | None) -> None:
    return None


def unsupported(reason: str) -> Classification:
    return Classification(Pushdown.UNSUPPORTED, reason)


def inexact(reason: str) -> Classification:
    return Classification(Pushdown.INEXACT, reason)


def never(reason: str) -> Checker:
    return lambda node, table: unsupported(reason)


# Structural nodes every SQL dialect spells and evaluates the same way.
STRUCTURAL: dict[type[exp.Expression], Checker] = {
    exp.Column: ok, exp.Identifier: ok, exp.Null: ok, exp.Boolean: ok, exp.Paren: ok,
    exp.Alias: ok, exp.Star: ok, exp.Tuple: ok, exp.And: ok, exp.Or: ok, exp.Not: ok,
    exp.Is: ok, exp.In: ok, exp.Between: ok, exp.Case: ok, exp.If: ok, exp.Coalesce: ok,
    exp.Neg: ok, exp.Ordered: ok, exp.Placeholder: ok, exp.Parameter: ok, exp.Var: ok,
    exp.DataType: ok, exp.TableAlias: ok,
}


def classify_with(table_rules: Mapping[type[exp.Expression], Checker], dialect: str,
                  expression: exp.Expression, table: TableInfo | None) -> Classification:
    """The worst answer over every node of `expression` (volatile functions first)."""
    reason = volatile_reason(expression)
    if reason is not None:
        return unsupported(reason)
    worst = EXACT
    for node in expression.walk():
        checker = table_rules.get(type(node))
        if checker is None:
            answer: Classification | None = unsupported(
                f"{_node_name(node)} is not in the {dialect} capability table")
        else:
            answer = checker(node, table)
        if answer is not None and _RANK[answer.pushdown] > _RANK[worst.pushdown]:
            worst = answer
            if worst.pushdown is Pushdown.UNSUPPORTED:
                break
    return worst


def _node_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return f"function {node.name}()"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name().lower()}()"
    return f"operator {type(node).__name__}"


def column_field(column: exp.Expression, table: TableInfo | None) -> pa.Field | None:
    """The Arrow field of a column reference, when `table` is known and has it."""
    if table is None or not isinstance(column, exp.Column):
        return None
    index = table.schema.get_field_index(column.name)
    return table.schema.field(index) if index >= 0 else None


def column_collation(field: pa.Field) -> str | None:
    meta = field.metadata or {}
    value = meta.get(COLLATION_KEY.encode())
    return value.decode() if value is not None else None


def is_text_type(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def operand_kind(node: exp.Expression, table: TableInfo | None) -> str:
    """'int', 'float', 'decimal', 'text', 'temporal', 'bool', 'other' or 'unknown'."""
    if isinstance(node, exp.Paren):
        return operand_kind(node.this, table)
    if isinstance(node, exp.Neg):
        return operand_kind(node.this, table)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return "text"
        return "int" if node.is_int else "decimal"  # PostgreSQL types 1.5 as numeric
    if isinstance(node, exp.Boolean):
        return "bool"
    field = column_field(node, table)
    if field is not None:
        return arrow_kind(field.type)
    if isinstance(node, exp.Cast):
        return sqlglot_kind(node.to)
    if node.type is not None and node.type.this != exp.DataType.Type.UNKNOWN:
        return sqlglot_kind(node.type)
    return "unknown"


def arrow_kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_boolean(t):
        return "bool"
    if is_text_type(t):
        return "text"
    if pa.types.is_temporal(t):
        return "temporal"
    return "other"


def sqlglot_kind(datatype: exp.DataType) -> str:
    T = exp.DataType.Type
    if datatype.this in exp.DataType.INTEGER_TYPES:
        return "int"
    if datatype.this in exp.DataType.REAL_TYPES - {T.DECIMAL, T.BIGDECIMAL, T.MONEY}:
        return "float"
    if datatype.this in (T.DECIMAL, T.BIGDECIMAL, T.MONEY):
        return "decimal"
    if datatype.this in exp.DataType.TEXT_TYPES:
        return "text"
    if datatype.this in exp.DataType.TEMPORAL_TYPES:
        return "temporal"
    if datatype.this == T.BOOLEAN:
        return "bool"
    return "other"


def is_nonzero_number(node: exp.Expression) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string and float(node.this) != 0


# What `CAST($n AS type)` may name when a dialect drops the cast: the planner wraps every
# bind parameter in a cast to the type the gateway already decoded it as
# (planner.params), so the bound value carries that type itself. Sized types (char(n),
# varchar(n), numeric(p, s)) pad, truncate or round: those are real casts, never dropped.
PARAM_INTEGERS = frozenset({exp.DataType.Type.SMALLINT, exp.DataType.Type.INT,
                            exp.DataType.Type.BIGINT})
PARAM_TEXT = frozenset({exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR})


def is_param_cast(node: exp.Expression) -> bool:
    """Whether `node` is the planner's typing of a bind parameter: CAST($n AS type)."""
    return isinstance(node, exp.Cast) and isinstance(node.this, (exp.Parameter, exp.Placeholder))


def param_type(node: exp.Expression) -> exp.DataType.Type | None:
    """The simple type of CAST($n AS type), or None for anything else (or a sized type)."""
    if not is_param_cast(node):
        return None
    return None if node.to.expressions else node.to.this


def drop_param_casts(node: exp.Expression, allowed: frozenset) -> exp.Expression:
    """CAST($n AS t) -> $n for the types a dialect binds natively (a tree transform)."""
    if param_type(node) in allowed:
        return node.this.copy()
    return node


def with_escape(node: exp.Expression, escape: str = "\\") -> exp.Expression:
    """`x LIKE p` with PostgreSQL's default escape spelled out (sources differ on it)."""
    if isinstance(node, (exp.Like, exp.ILike)) and not isinstance(node.parent, exp.Escape):
        return exp.Escape(this=node.copy(), expression=exp.Literal.string(escape))
    return node


def rewrite_bottom_up(tree: exp.Expression,
                      rewrite: Callable[[exp.Expression], exp.Expression]) -> exp.Expression:
    """A copy of `tree` with `rewrite` applied to every node, children before parents."""
    tree = tree.copy()
    for node in reversed(list(tree.dfs())):
        new = rewrite(node)
        if new is not node:
            if node is tree:
                tree = new
            else:
                node.replace(new)
    return tree
