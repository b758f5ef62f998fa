"""A file source's folder as a move's target: `CREATE TABLE files.x AS <query>` writes
`x.parquet` (or `x.csv` in a CSV source's folder) (connectors.bulk).

The rows are written to a hidden temporary file in the folder (a leading dot and no
table suffix: the source's listing never takes it for a table), flushed to disk, then
linked under the table's name, which is atomic and fails when the name is taken: a reader
sees the whole file or none, and two moves of one name cannot both win. A failure removes
the temporary file. Appending to a file (INSERT) is not supported.

A Parquet file keeps the engine's Arrow types (it holds what Arrow holds). A CSV file is
written as PostgreSQL's `COPY ... TO (FORMAT csv, HEADER)` writes it (a header line of
the column names; NULL empty, the empty string `""`), with two choices made for readers
of files rather than of COPY: booleans are `true`/`false` (PostgreSQL's `t`/`f` reads back
as text anywhere but in PostgreSQL), and timestamps with a zone are written in UTC
(`+00`), whatever the session's TimeZone, so the file does not depend on who wrote it.
A CSV file holds no types: its readers (this source too) infer them again.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from abc import ABC, abstractmethod
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from connectors.bulk import TargetColumn
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.copy_text import CSV_LAYOUT, copy_lines, header_line

# TargetColumn.pg_type of a file's column: the value is written as the engine gives it.
AS_GIVEN = "(as given)"


def check_target(source: Any, table: str, creates: bool) -> Path:
    """The file `table` becomes in `source`'s folder; refused for what cannot be written."""
    folder = source.path
    if not isinstance(folder, Path) or not folder.is_dir():
        raise PgError(FEATURE_NOT_SUPPORTED, f'source "{source.name}" takes no moves: only a '
                      "local folder of Parquet or CSV files is written to")
    if not creates:
        raise PgError(FEATURE_NOT_SUPPORTED, f'INSERT into a table of file source "{source.name}" '
                      "is not supported: a file is written whole, by CREATE TABLE ... AS")
    if not table or "/" in table or table.startswith((".", "_")):
        raise PgError("42602", f'invalid name for a file table: "{table}"')
    final = folder / f"{table}.{source.file_format}"
    if final.exists() or (folder / table).exists():
        raise PgError("42P07", f'relation "{table}" already exists')
    return final


def file_schema(schema: pa.Schema) -> pa.Schema:
    """The engine's types without their field metadata; a boolean held in a byte
    (arrow.bool8) arrives as a boolean (gateway.executor.assignment)."""
    return pa.schema([pa.field(f.name, pa.bool_() if isinstance(f.type, pa.BaseExtensionType)
                               and f.type.extension_name == "arrow.bool8" else f.type)
                      for f in schema])


class FileBulkWriter(ABC):
    """The temporary file and its linking into place; each format writes the rows."""

    def __init__(self, final: Path) -> None:
        self.final = final
        self.temporary = final.with_name(f".{final.stem}.{uuid.uuid4().hex}.tmp")
        self.schema: pa.Schema | None = None

    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        self.schema = file_schema(schema)
        await asyncio.to_thread(self._open)

    async def columns(self) -> list[TargetColumn]:
        assert self.schema is not None
        return [TargetColumn(name, AS_GIVEN) for name in self.schema.names]

    async def write(self, batch: pa.RecordBatch) -> int:
        assert self.schema is not None
        await asyncio.to_thread(self._write, pa.Table.from_batches([batch]).cast(self.schema))
        return batch.num_rows

    async def finish(self, commit: bool) -> None:
        await asyncio.to_thread(self._finish, commit)

    @abstractmethod
    def _open(self) -> None:
        """Make the temporary file (this and the two below run on a worker thread)."""

    @abstractmethod
    def _write(self, table: pa.Table) -> None:
        """Append `table`'s rows to the temporary file."""

    @abstractmethod
    def _close(self) -> None:
        """Close the temporary file, if it was made."""

    def _finish(self, commit: bool) -> None:
        try:
            self._close()
            if commit:
                with open(self.temporary, "rb") as written:
                    os.fsync(written.fileno())
                try:
                    os.link(self.temporary, self.final)  # atomic, and never over another file
                except FileExistsError as exc:
                    raise PgError("42P07", f'relation "{self.final.stem}" already exists') from exc
        finally:
            self.temporary.unlink(missing_ok=True)


class ParquetBulkWriter(FileBulkWriter):
    writer: pq.ParquetWriter | None = None

    def _open(self) -> None:
        self.writer = pq.ParquetWriter(self.temporary, self.schema)

    def _write(self, table: pa.Table) -> None:
        assert self.writer is not None
        self.writer.write_table(table)

    def _close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class CsvBulkWriter(FileBulkWriter):
    out: IO[bytes] | None = None

    def _open(self) -> None:
        assert self.schema is not None
        self.out = open(self.temporary, "xb")
        self.out.write(header_line(self.schema.names, CSV_LAYOUT))

    def _write(self, table: pa.Table) -> None:
        assert self.out is not None
        for batch in table.to_batches():
            spelled = pa.RecordBatch.from_arrays(
                [pc.cast(c, pa.string()) if pa.types.is_boolean(c.type) else c for c in batch.columns],
                names=batch.schema.names)
            self.out.writelines(copy_lines(spelled, CSV_LAYOUT, "UTC"))

    def _close(self) -> None:
        if self.out is not None:
            self.out.close()


def file_writer(source: Any, table: str, creates: bool) -> FileBulkWriter:
    final = check_target(source, table, creates)
    return CsvBulkWriter(final) if source.file_format == "csv" else ParquetBulkWriter(final)
