"""Schemas the session's user may not see: a statement naming one is refused.

A source outside a user's `[[users]] sources` is, to that user, a schema without USAGE
privilege: PostgreSQL refuses any reference to it with 42501 `permission denied for
schema <name>` before it looks for the table, so the answer is the same whether the table
exists or not. The gateway hands the hidden names in (`PlanSettings.hidden_schemas`, part
of the plan-cache key) and leaves them off the search path; this check covers the names a
statement qualifies with one of them.

    SELECT * FROM wh.orders          -- user limited to ["pg"]
    ERROR:  permission denied for schema wh   (42501)
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from pgwire.errors import INSUFFICIENT_PRIVILEGE, PgError


def schema_of(table: exp.Table) -> str | None:
    """The schema a table reference names, folded as PostgreSQL folds identifiers."""
    node = table.args.get("db")
    if not isinstance(node, exp.Identifier) or not node.this:
        return None
    return node.this if node.quoted else node.this.lower()


def check_schemas(tables: Iterable[exp.Table], hidden: frozenset[str]) -> None:
    """Refuse the first table reference qualified with a hidden schema."""
    if not hidden:
        return
    for table in tables:
        schema = schema_of(table)
        if schema is not None and schema in hidden:
            raise PgError(INSUFFICIENT_PRIVILEGE, f"permission denied for schema {schema}")
