"""A Delta table as a move's target: `INSERT INTO lake.t <query>` appends the rows as one
new version, `CREATE TABLE lake.t AS <query>` makes the table with its first
(connectors.bulk, connectors.spilled_write).

Delta's log is its transaction: a version exists once its commit file does, so readers
see all of a move's rows or none. At commit, deltalake writes the data files from the
spill and commits one version, keeping an appended table's partitioning; a concurrent
writer's commit first is 40001.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError

from connectors.spilled_write import SpilledBulkWriter
from pgwire.errors import PgError


class DeltaBulkWriter(SpilledBulkWriter):
    def __init__(self, table: str, uri: str, appends: pa.Schema | None,
                 spill_dir: str | None = None) -> None:
        super().__init__(table, appends, spill_dir)
        self.uri = uri

    @classmethod
    async def open(cls, source: Any, table: str, creates: bool,
                   spill_dir: str | None = None) -> DeltaBulkWriter:
        uri, appends = await asyncio.to_thread(source.write_target, table, creates)
        return cls(table, uri, appends, spill_dir)

    def commit(self, rows: pa.RecordBatchReader) -> None:
        try:
            write_deltalake(self.uri, rows, mode="append" if self.appends is not None else "error")
        except CommitFailedError as exc:
            raise PgError("40001", f'could not append to delta table "{self.table}": '
                          f"another writer committed first: {exc}") from exc
        except DeltaError as exc:
            raise PgError("58030", f'writing delta table "{self.table}" failed: {exc}') from exc
