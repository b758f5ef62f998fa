"""A file source's folder as a move's target: `CREATE TABLE files.x AS <query>` writes
`x.parquet` (or `x.csv` in a CSV source's folder) (connectors.bulk).

The rows are written to a hidden temporary file in the folder (a leading dot and no
table suffix: the source's listing never takes it for a table), flushed to disk, then
linked under the table's name, which is atomic and fails when the name is taken: a reader
sees the whole file or none, and two moves of one name cannot both win. A failure removes
the temporary file. An INSERT into a table that is a folder of files adds one file to the
folder the same way (`part-<hex>.parquet`), in the folder's schema; a table of one file
is written whole and takes no INSERT.

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
from pgwire.types.copy_text import CSV_LAYOUT, copy_text, header_line
from pgwire.types.from_arrow import pg_type_for_arrow

# TargetColumn.pg_type of a file's column: the value is written as the engine gives it.
AS_GIVEN = "(as given)"


def _folder(source: Any) -> Path:
    folder = source.path
    if not isinstance(folder, Path) or not folder.is_dir():
        raise PgError(FEATURE_NOT_SUPPORTED, f'source "{source.name}" takes no moves: only a '
                      "local folder of Parquet or CSV files is written to")
    return folder


def new_file(source: Any, table: str) -> Path:
    """The file a CREATE TABLE AS of `table` makes in `source`'s folder."""
    folder = _folder(source)
    if not table or "/" in table or table.startswith((".", "_")):
        raise PgError("42602", f'invalid name for a file table: "{table}"')
    final = folder / f"{table}.{source.file_format}"
    if final.exists() or (folder / table).exists():
        raise PgError("42P07", f'relation "{table}" already exists')
    return final


def new_part(source: Any, table: str) -> tuple[Path, pa.Schema]:
    """The file an INSERT into folder table `table` adds, and the schema it must have."""
    folder = _folder(source)
    if (folder / f"{table}.{source.file_format}").is_file():
        raise PgError(FEATURE_NOT_SUPPORTED, f'INSERT into table "{table}" of file source '
                      f'"{source.name}" is not supported: it is one file, written whole by '
                      "CREATE TABLE ... AS (a table that is a folder of files takes INSERTs)")
    schema = source.folder_schema(table) if "/" not in table else None
    if schema is None:
        raise PgError("42P01", f'relation "{table}" does not exist')
    if any(p.is_dir() and not p.name.startswith((".", "_")) for p in (folder / table).iterdir()):
        raise PgError(FEATURE_NOT_SUPPORTED, f'INSERT into table "{table}" of file source '
                      f'"{source.name}" is not supported: its files are in partition folders')
    return folder / table / f"part-{uuid.uuid4().hex}.{source.file_format}", schema


def target_column(field: pa.Field) -> TargetColumn:
    """A file column as the PostgreSQL type a move converts its values to: its Arrow
    type's, as results present it; a type with none is taken as given."""
    try:
        pg = pg_type_for_arrow(field.type)
    except PgError:
        return TargetColumn(field.name, AS_GIVEN, not_null=not field.nullable)
    t = field.type
    decimal = pa.types.is_decimal(t)
    return TargetColumn(field.name, pg.name, precision=t.precision if decimal else None,
                        scale=t.scale if decimal else None, not_null=not field.nullable)


def file_schema(schema: pa.Schema) -> pa.Schema:
    """The engine's types without their field metadata; a boolean held in a byte
    (arrow.bool8) arrives as a boolean (gateway.executor.assignment)."""
    return pa.schema([pa.field(f.name, pa.bool_() if isinstance(f.type, pa.BaseExtensionType)
                               and f.type.extension_name == "arrow.bool8" else f.type)
                      for f in schema])


def written_columns(schema: pa.Schema, appends: bool) -> list[TargetColumn]:
    """The columns of a target of files in `schema`: an appended table's, typed for the
    assignment casts, or (a CREATE TABLE AS) the result's own, taken as given."""
    if appends:
        return [target_column(f) for f in schema]
    return [TargetColumn(name, AS_GIVEN) for name in schema.names]


def fitted(batch: pa.RecordBatch, schema: pa.Schema, table: str) -> pa.Table:
    """`batch` in `schema`, the schema of the files of `table`: a column the INSERT did
    not name is NULL."""
    columns = []
    same = batch.schema.names == schema.names  # (by position: a result may repeat a name)
    for i, field in enumerate(schema):
        given = batch.column(i) if same else batch.column(field.name) \
            if field.name in batch.schema.names else pa.nulls(batch.num_rows, field.type)
        try:
            columns.append(given.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise PgError("42804", f'column "{field.name}" is of type {field.type} in the '
                          f'files of "{table}" but a value of type {given.type} cannot be '
                          f"written as one: {exc}") from exc
    return pa.Table.from_arrays(columns, schema=schema)


class FileBulkWriter(ABC):
    """The temporary file and its linking into place; each format writes the rows.
    `appends`: the schema of the folder table a new file is added to (None: the file of a
    CREATE TABLE AS, made of the result's types)."""

    def __init__(self, final: Path, appends: pa.Schema | None = None) -> None:
        self.final = final
        self.temporary = final.with_name(f".{final.stem}.{uuid.uuid4().hex}.tmp")
        self.appends = appends
        self.table = final.parent.name if appends is not None else final.stem
        self.schema: pa.Schema | None = appends
        self.written = 0

    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        self.schema = file_schema(schema)
        await asyncio.to_thread(self._open)

    async def columns(self) -> list[TargetColumn]:
        assert self.schema is not None
        return written_columns(self.schema, appends=self.appends is not None)

    async def write(self, batch: pa.RecordBatch) -> int:
        assert self.schema is not None
        if self.appends is not None and not self.written:
            if not batch.num_rows:
                return 0  # an append's file is made with its first row
            await asyncio.to_thread(self._open)
        await asyncio.to_thread(self._write, fitted(batch, self.schema, self.table))
        self.written += batch.num_rows
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
            if commit and (self.written or self.appends is None):  # an empty INSERT adds no file
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
            self.out.write(copy_text(spelled, CSV_LAYOUT, "UTC"))

    def _close(self) -> None:
        if self.out is not None:
            self.out.close()


async def file_writer(source: Any, table: str, creates: bool) -> FileBulkWriter:
    """The writer of a CREATE TABLE AS (`creates`) or an INSERT into `table` of `source`."""
    final, appends = (new_file(source, table), None) if creates else \
        await asyncio.to_thread(new_part, source, table)
    kind = CsvBulkWriter if source.file_format == "csv" else ParquetBulkWriter
    return kind(final, appends)
