"""A DuckDB database file as a federated source (opened read-only).

The embedded demo is one of these. Queries arrive already rendered in DuckDB's dialect by
the planner; this class only runs them and describes the catalog. With `statement_log`
(a path), every statement sent to DuckDB is appended to that file: DuckDB keeps no query
log of its own, and the tests read it to prove what was shipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from sqlglot import exp

from connectors.base import BatchStream, Pushdown, ScanRequest, TableInfo, TableRef
from connectors.dialects import duckdb as duckdb_dialect
from connectors.duckdb.runner import DuckDBRunner
from connectors.scan_sql import scan_tree
from connectors.statement_log import StatementLog


class DuckDBSource:
    dialect = duckdb_dialect.DIALECT

    def __init__(self, name: str, path: str | Path, *, schema: str = "main",
                 statement_log: str | Path | None = None) -> None:
        self.name = name
        self.path = Path(path)
        self.schema = schema
        self.statement_log = StatementLog(statement_log)
        self._runner = DuckDBRunner.open(str(self.path), read_only=True)

    async def tables(self) -> list[TableInfo]:
        return await asyncio.to_thread(self._tables)

    def _tables(self) -> list[TableInfo]:
        rows = self._runner.query_sync(
            "SELECT table_name, estimated_size FROM duckdb_tables() "
            "WHERE schema_name = $1 AND NOT internal ORDER BY table_name", [self.schema])
        # Primary keys, for the emulated pg_catalog (pg_index, pg_constraint).
        keys = self._runner.query_sync(
            "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
            "WHERE schema_name = $1 AND constraint_type = 'PRIMARY KEY'", [self.schema])
        primary = dict(zip(keys["table_name"].to_pylist(),
                           keys["constraint_column_names"].to_pylist()))
        infos = []
        for name, estimate in zip(rows["table_name"].to_pylist(), rows["estimated_size"].to_pylist()):
            table = exp.table_(name, db=self.schema, quoted=True).sql("duckdb")
            schema = self._runner.query_sync(f"SELECT * FROM {table} LIMIT 0").schema
            ref = TableRef(self.name, name, remote_schema=self.schema, remote_name=name)
            infos.append(TableInfo(ref, schema, row_estimate=estimate,
                                   primary_key=tuple(primary.get(name) or ())))
        return infos

    def classify(self, table: TableRef, filters: Sequence[exp.Expression]) -> list[Pushdown]:
        return [duckdb_dialect.classify(f).pushdown for f in filters]

    async def run_remote(self, sql: str, params: Sequence[Any] = ()) -> BatchStream:
        self.statement_log.write(sql)
        return await self._runner.stream(sql, params)

    async def scan(self, req: ScanRequest) -> BatchStream:
        return await self.run_remote(self.dialect.to_sql(scan_tree(req)))

    async def describe(self, sql: str, params: Sequence[Any] = ()) -> pa.Schema:
        stream = await self._runner.stream(f"SELECT * FROM ({sql}) AS described LIMIT 0", params)
        await stream.aclose()
        return stream.schema

    async def close(self) -> None:
        self._runner.close()
