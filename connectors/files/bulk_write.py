"""A Parquet file source's folder as a move's target: `CREATE TABLE files.x AS <query>`
writes `x.parquet` (connectors.bulk).

The rows are written to a hidden temporary file in the folder (a leading dot and no
`.parquet` suffix: the source's listing never takes it for a table), flushed to disk,
then linked under the table's name, which is atomic and fails when the name is taken: a
reader sees the whole file or none, and two moves of one name cannot both win. A failure
removes the temporary file. The values keep the engine's Arrow types (a Parquet file
holds what Arrow holds); appending to a file (INSERT) is not supported.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from connectors.bulk import TargetColumn
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

# TargetColumn.pg_type of a file's column: the value is written as the engine gives it.
AS_GIVEN = "(as given)"


def check_target(source: Any, table: str, creates: bool) -> Path:
    """The file `table` becomes in `source`'s folder; refused for what cannot be written."""
    if getattr(source, "file_format", None) != "parquet" or not source.path.is_dir():
        raise PgError(FEATURE_NOT_SUPPORTED, f'source "{source.name}" takes no moves: only a '
                      "folder of Parquet files is written to")
    if not creates:
        raise PgError(FEATURE_NOT_SUPPORTED, f'INSERT into a table of file source "{source.name}" '
                      "is not supported: a file is written whole, by CREATE TABLE ... AS")
    if not table or "/" in table or table.startswith((".", "_")):
        raise PgError("42602", f'invalid name for a file table: "{table}"')
    final = source.path / f"{table}.parquet"
    if final.exists() or (source.path / table).exists():
        raise PgError("42P07", f'relation "{table}" already exists')
    return final


class ParquetBulkWriter:
    def __init__(self, final: Path) -> None:
        self.final = final
        self.temporary = final.with_name(f".{final.stem}.{uuid.uuid4().hex}.tmp")
        self.writer: pq.ParquetWriter | None = None
        self.schema: pa.Schema | None = None

    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        # The engine's types without their field metadata; a boolean held in a byte
        # (arrow.bool8) arrives as a boolean (gateway.executor.assignment).
        self.schema = pa.schema([pa.field(f.name, pa.bool_() if isinstance(f.type, pa.BaseExtensionType)
                                          and f.type.extension_name == "arrow.bool8" else f.type)
                                 for f in schema])
        self.writer = await asyncio.to_thread(pq.ParquetWriter, self.temporary, self.schema)

    async def columns(self) -> list[TargetColumn]:
        assert self.schema is not None
        return [TargetColumn(name, AS_GIVEN) for name in self.schema.names]

    async def write(self, batch: pa.RecordBatch) -> int:
        assert self.writer is not None and self.schema is not None
        table = pa.Table.from_batches([batch]).cast(self.schema)
        await asyncio.to_thread(self.writer.write_table, table)
        return batch.num_rows

    async def finish(self, commit: bool) -> None:
        await asyncio.to_thread(self._finish, commit)

    def _finish(self, commit: bool) -> None:
        try:
            if self.writer is not None:
                self.writer.close()
            if commit:
                with open(self.temporary, "rb") as written:
                    os.fsync(written.fileno())
                try:
                    os.link(self.temporary, self.final)  # atomic, and never over another file
                except FileExistsError as exc:
                    raise PgError("42P07", f'relation "{self.final.stem}" already exists') from exc
        finally:
            self.temporary.unlink(missing_ok=True)
