"""Row estimates, primary keys and key bounds of source tables, cached for executors.

The executor and the Spark engine decide how to read a fragment (split it into page
ranges, partition a JDBC read on a key, share one read between copies) from what the
source says about the tables the fragment names. Asking `Source.tables()` for every
query would cost a catalog round trip each time, so answers are kept for
`CATALOG_TTL_S` seconds; they only steer how rows are read, never which rows.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any

import pyarrow as pa
from sqlglot import exp

from connectors.base import Source, TableInfo

CATALOG_TTL_S = 60.0


class SourceCatalog:
    """Row estimates, keys and key bounds per source, re-read every CATALOG_TTL_S."""

    def __init__(self) -> None:
        self._tables: dict[str, tuple[float, list[TableInfo]]] = {}
        self._bounds: dict[tuple[str, str, str], tuple[float, tuple[Any, Any]]] = {}
        self._versions: dict[str, str] = {}

    async def table(self, source: Source, table: exp.Table) -> TableInfo | None:
        found = self._tables.get(source.name)
        if found is None or time.monotonic() - found[0] > CATALOG_TTL_S:
            found = (time.monotonic(), await source.tables())
            self._tables[source.name] = found
        schema, name = (table.db or None), table.name
        for info in found[1]:
            remote_schema, remote_name = info.ref.remote
            if remote_name == name and (schema is None or remote_schema in (None, schema)):
                return info
        return None

    async def bounds(self, source: Source, table: exp.Table, column: str) -> tuple[Any, Any]:
        key = (source.name, table.sql(), column)
        found = self._bounds.get(key)
        if found is None or time.monotonic() - found[0] > CATALOG_TTL_S:
            target = exp.Table(this=exp.to_identifier(table.name, quoted=True),
                               db=exp.to_identifier(table.db, quoted=True) if table.db else None)
            col = exp.column(column, quoted=True)
            sql = exp.select(exp.Min(this=col), exp.Max(this=col.copy())).from_(target) \
                .sql(source.dialect.sqlglot)
            row = (await one_row(source, sql)) or (None, None)
            found = (time.monotonic(), (row[0], row[1]))
            self._bounds[key] = found
        return found[1]

    async def mysql_collation(self, source: Source) -> str:
        """The binary NO PAD collation the MySQL source's own sessions use."""
        if source.name not in self._versions:
            row = await one_row(source, "SELECT VERSION()")
            self._versions[source.name] = str(row[0]) if row else ""
        return "utf8mb4_nopad_bin" if "MariaDB" in self._versions[source.name] else "utf8mb4_0900_bin"

    async def largest(self, source: Source, tree: exp.Expression) -> int | None:
        """The largest row estimate among the tables `tree` reads (None: none known)."""
        rows = []
        for table in tree.find_all(exp.Table):
            info = await self.table(source, table)
            if info is not None and info.row_estimate is not None:
                rows.append(info.row_estimate)
        return max(rows) if rows else None


async def one_row(source: Source, sql: str) -> tuple | None:
    """The first row of a catalog-style query. It runs in a context of its own: it is no
    fragment of the user's query, so it must not join that query's shared snapshot
    (connectors.query_scope)."""
    async def read() -> tuple | None:
        stream = await source.run_remote(sql)
        try:
            batches = [batch async for batch in stream]
        finally:
            await stream.aclose()
        table = pa.Table.from_batches(batches, schema=stream.schema)
        return tuple(c[0].as_py() for c in table.columns) if table.num_rows else None

    return await asyncio.create_task(read(), context=contextvars.Context())
