"""A move into a table format whose commit is one call (Delta, Iceberg): the rows wait in
a local Parquet spill until the query has given them all, then one commit takes them.

The library that writes the table's data files starts only once the query is done, so a
move that fails before commit (a conversion, a source failing mid-read, a cancel) leaves
nothing in the table's storage, not even data files no snapshot lists; the spill may be
larger than memory (it is read back as a stream). The spill is in `[engine]
temp_directory` (None: the system's temporary folder). An append keeps the table's
schema, its values converted by PostgreSQL's assignment casts to the table's column
types (`connectors.files.bulk_write.target_column`); an INSERT of no rows commits nothing.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from abc import ABC, abstractmethod

import pyarrow as pa
import pyarrow.parquet as pq

from connectors.bulk import TargetColumn
from connectors.files.bulk_write import file_schema, fitted, written_columns


class SpilledBulkWriter(ABC):
    """`appends`: the schema of the table appended to (None: a CREATE TABLE AS, whose
    table is made of the result's types)."""

    def __init__(self, table: str, appends: pa.Schema | None, spill_dir: str | None) -> None:
        self.table = table
        self.appends = appends
        self.schema = appends
        handle, self.spill = tempfile.mkstemp(prefix="fedgate-move-", suffix=".parquet",
                                              dir=spill_dir)
        os.close(handle)
        self.writer: pq.ParquetWriter | None = None
        self.written = 0

    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        self.schema = file_schema(schema)

    async def columns(self) -> list[TargetColumn]:
        assert self.schema is not None
        return written_columns(self.schema, appends=self.appends is not None)

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
                return
            assert self.schema is not None
            batches = pq.ParquetFile(self.spill).iter_batches() if self.written else iter(())
            self.commit(pa.RecordBatchReader.from_batches(self.schema, batches))
        finally:
            os.unlink(self.spill)

    @abstractmethod
    def commit(self, rows: pa.RecordBatchReader) -> None:
        """Write `rows` into the table as one commit (on a worker thread)."""
