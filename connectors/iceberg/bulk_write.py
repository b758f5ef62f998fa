"""An Iceberg table as a move's target: `INSERT INTO ice.t <query>` appends the rows as one
commit of the table, `CREATE TABLE ice.t AS <query>` makes the table and its rows in one
(connectors.bulk, connectors.spilled_write).

An Iceberg commit swaps the table's metadata pointer in its catalog, so readers see all
of a move's rows or none. At commit, pyiceberg writes the data files from the spill: as
one stream (one snapshot) into an unpartitioned table; a partitioned one takes the rows
as tables of about APPEND_BYTES each (pyiceberg streams into unpartitioned tables only),
one snapshot each, all in one transaction, so still one commit. A CREATE TABLE AS is
pyiceberg's create-table transaction: the table appears with its rows. A concurrent
writer's commit first is 40001.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError
from pyiceberg.table import Table, Transaction

from connectors.spilled_write import SpilledBulkWriter
from pgwire.errors import PgError

APPEND_BYTES = 256 * 1024 * 1024


class IcebergBulkWriter(SpilledBulkWriter):
    def __init__(self, catalog: SqlCatalog, identifier: tuple[str, str], table: Table | None,
                 spill_dir: str | None = None) -> None:
        super().__init__(identifier[-1], table.schema().as_arrow() if table is not None else None,
                         spill_dir)
        self.catalog = catalog
        self.identifier = identifier
        self.iceberg = table

    @classmethod
    async def open(cls, source: Any, table: str, creates: bool,
                   spill_dir: str | None = None) -> IcebergBulkWriter:
        catalog, identifier, found = await asyncio.to_thread(source.write_target, table, creates)
        return cls(catalog, identifier, found, spill_dir)

    def commit(self, rows: pa.RecordBatchReader) -> None:
        try:
            if self.iceberg is None:
                assert self.schema is not None
                with self.catalog.create_table_transaction(self.identifier, self.schema) as made:
                    self._append(made, rows)
            elif self.iceberg.spec().is_unpartitioned():
                self.iceberg.append(rows)
            else:
                with self.iceberg.transaction() as appended:
                    self._append(appended, rows)
        except CommitFailedException as exc:
            raise PgError("40001", f'could not write iceberg table "{self.table}": another '
                          f"writer committed first: {exc}") from exc
        except TableAlreadyExistsError as exc:
            raise PgError("42P07", f'relation "{self.table}" already exists') from exc

    @staticmethod
    def _append(transaction: Transaction, rows: pa.RecordBatchReader) -> None:
        for part in _parts(rows):
            transaction.append(part)


def _parts(rows: pa.RecordBatchReader) -> Iterator[pa.Table]:
    """`rows` as tables of about APPEND_BYTES each."""
    held: list[pa.RecordBatch] = []
    size = 0
    for batch in rows:
        held.append(batch)
        size += batch.nbytes
        if size >= APPEND_BYTES:
            yield pa.Table.from_batches(held, schema=rows.schema)
            held, size = [], 0
    if held:
        yield pa.Table.from_batches(held, schema=rows.schema)
