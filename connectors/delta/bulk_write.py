"""A Delta table as a move's target: `INSERT INTO lake.t <query>` appends the rows as one
new version, `CREATE TABLE lake.t AS <query>` makes the table with its first (connectors.bulk).

Delta's log is its transaction: a version exists once its commit file does, so readers
see all of a move's rows or none. The rows first wait in a temporary local Parquet file
(in `[engine] temp_directory`), so that deltalake starts writing the table's data files
only once the query has given all of them: a move that fails before commit (a conversion,
a source failing mid-read, a cancel) leaves nothing in the table's folder, not even files
no version lists. At commit, deltalake writes the data files from it and commits one
version; a concurrent writer's commit first is 40001. An append keeps the table's schema
and partitioning, its values converted by PostgreSQL's assignment casts to the table's
column types (`connectors.files.bulk_write.target_column`).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError

from connectors.bulk import TargetColumn
from connectors.files.bulk_write import AS_GIVEN, file_schema, fitted, target_column
from pgwire.errors import PgError


class DeltaBulkWriter:
    def __init__(self, table: str, uri: str, appends: pa.Schema | None,
                 spill_dir: str | None = None) -> None:
        self.table = table
        self.uri = uri
        self.appends = appends
        self.schema = appends
        handle, self.spill = tempfile.mkstemp(prefix="fedgate-delta-", suffix=".parquet",
                                               dir=spill_dir)
        os.close(handle)
        self.writer: pq.ParquetWriter | None = None
        self.written = 0

    @classmethod
    async def open(cls, source: Any, table: str, creates: bool,
                   spill_dir: str | None = None) -> DeltaBulkWriter:
        uri, appends = await asyncio.to_thread(source.write_target, table, creates)
        return cls(table, uri, appends, spill_dir)

    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        self.schema = file_schema(schema)

    async def columns(self) -> list[TargetColumn]:
        assert self.schema is not None
        if self.appends is not None:
            return [target_column(f) for f in self.appends]
        return [TargetColumn(name, AS_GIVEN) for name in self.schema.names]

    async def write(self, batch: pa.RecordBatch) -> int:
        assert self.schema is not None
        await asyncio.to_thread(self._spill, fitted(batch, self.schema, self.table))
        self.written += batch.num_rows
        return batch.num_rows

    def _spill(self, rows: pa.Table) -> None:
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.spill, self.schema)
        self.writer.write_table(rows)

    async def finish(self, commit: bool) -> None:
        await asyncio.to_thread(self._finish, commit)

    def _finish(self, commit: bool) -> None:
        try:
            if self.writer is not None:
                self.writer.close()
            if not commit or (self.appends is not None and not self.written):
                return  # an empty INSERT makes no version
            assert self.schema is not None
            data = (pq.ParquetFile(self.spill).iter_batches() if self.written
                    else iter(()))
            reader = pa.RecordBatchReader.from_batches(self.schema, data)
            try:
                write_deltalake(self.uri, reader,
                                mode="append" if self.appends is not None else "error")
            except CommitFailedError as exc:
                raise PgError("40001", f'could not append to delta table "{self.table}": '
                              f"another writer committed first: {exc}") from exc
            except DeltaError as exc:
                raise PgError("58030", f'writing delta table "{self.table}" failed: {exc}') from exc
        finally:
            os.unlink(self.spill)
