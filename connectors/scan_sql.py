"""A `ScanRequest` as a PostgreSQL-dialect sqlglot query, for sources that run SQL.

Semantics (docs/design.md §2): filter, then limit, then projection. Filters arrive with columns
qualified by the query's alias; the scan reads one table, so qualifiers are dropped.
"""

from __future__ import annotations

from sqlglot import exp

import pyarrow as pa

from connectors.base import ScanRequest, TableInfo


def scan_tree(req: ScanRequest) -> exp.Select:
    schema, name = req.table.remote
    table = exp.table_(name, db=schema, quoted=True)
    columns = [exp.column(c, quoted=True) for c in req.columns] or [exp.Literal.number(1)]
    query = exp.select(*columns).from_(table)
    for condition in req.filters:
        query = query.where(_unqualified(condition), copy=False)
    if req.limit is not None:
        query = query.limit(req.limit, copy=False)
    return query


def _unqualified(condition: exp.Expression) -> exp.Expression:
    condition = condition.copy()
    for column in condition.find_all(exp.Column):
        column.set("table", None)
        column.set("db", None)
        column.set("catalog", None)
    return condition


def scan_schema(tables: list[TableInfo], req: ScanRequest) -> pa.Schema | None:
    """The Arrow schema a scan's columns have in the catalog (None: let the rows tell)."""
    info = next((t for t in tables if t.ref.name == req.table.name), None)
    if info is None or not req.columns:
        return None
    return pa.schema([info.schema.field(c) for c in req.columns])
