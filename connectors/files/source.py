"""Parquet or CSV files as a federated source: one table per file or folder.

`path` is a folder: each `*.parquet`/`*.csv` file in it is a table named after the file
stem, and each sub-folder is a table whose files are read together, with Hive-style
partitions (`year=2024/`) as columns. `path` may also be a single file (one table).

Tables are pyarrow datasets; their Arrow schemas are the catalog. `scan()` hands
projection and filters to the dataset scanner (row groups whose statistics exclude the
filter are not read); shipped SQL runs in an in-process DuckDB ("duckdb-over-files").
There, a table that is one Parquet file is a view over DuckDB's own `read_parquet` when
DuckDB types its columns exactly as it types the dataset's (connectors.files.parquet_views:
several times faster, and held to those types on every query); other tables (CSV,
folders) are the pyarrow datasets, registered with DuckDB, which pushes its projections
and filters into the dataset scanner.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.fs as pafs
from sqlglot import exp

from connectors.base import BatchStream, Pushdown, ScanRequest, Storage, TableInfo, TableRef
from connectors.dialects import files as files_dialect
from connectors.duckdb.runner import DuckDBRunner, gathered_batch
from connectors.files.filters import to_arrow_filter
from connectors.files.parquet_stats import parquet_estimates
from connectors.files.pruning import partition_lines
from connectors.files.parquet_views import (UNDEFINED_FILE, NativeTable, check, create_views,
                                            native_candidates)
from connectors.scan_sql import scan_tree
from connectors.statement_log import StatementLog
from pgwire.errors import UNDEFINED_TABLE, PgError

log = logging.getLogger("fedgate.files")

BATCH_ROWS = 65_536
# CSV as PostgreSQL's COPY writes it: an unquoted empty field is NULL, a quoted one is the
# empty string, and "NaN" is a float (pyarrow's default null markers include NaN, NA, null).
CSV_FORMAT = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
    null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=False))
# A file changed this recently may change again within one tick of its file system's
# clock (a second on some, two on FAT) keeping its size and times: it has no version yet.
SETTLED_NS = 2_000_000_000
# A table of more files than this has no version: a stat of each would cost what a read of
# a small table does.
VERSIONED_FILES = 64


class FilesSource:
    dialect = files_dialect.DIALECT
    # Where the datasets read from: None is the local file system (connectors.files.
    # object_source sets an object store's).
    _filesystem: pafs.FileSystem | None = None
    # Why a Spark engine may not read the files itself by their paths (None: it may, with
    # spark.read; connectors.engines.spark_jdbc), so the gateway hands their rows over.
    spark_cannot_read: str | None = None

    def __init__(self, name: str, path: str | Path, *, file_format: str = "parquet",
                 statement_log: str | Path | None = None) -> None:
        if file_format not in ("parquet", "csv"):
            raise ValueError(f"file format must be parquet or csv, not {file_format!r}")
        self.name = name
        self.path = Path(path)
        self.file_format = file_format
        self.statement_log = StatementLog(statement_log)
        self._paths = self._entries()
        self.datasets = {name: self._dataset(path) for name, path in self._paths.items()}
        # DuckDB reads nothing but the single Parquet files it may view natively.
        self._runner = DuckDBRunner.open(":memory:", allowed_paths=native_candidates(
            self.datasets) if file_format == "parquet" else ())
        self._native: dict[str, NativeTable] = \
            create_views(self._runner, self.datasets) if file_format == "parquet" else {}
        # What DuckDB is handed per query: the tables that have no view of their own.
        self._registered = {n: d for n, d in self.datasets.items() if n not in self._native}

    @property
    def native_tables(self) -> frozenset[str]:
        """The tables DuckDB reads with its own Parquet reader (the rest: pyarrow)."""
        return frozenset(self._native)

    def _entries(self) -> dict[str, Path]:
        """Each table's name and the file or folder it reads, as the folder is now."""
        suffix = f".{self.file_format}"
        if self.path.is_file():
            return {self.path.stem: self.path}
        if not self.path.is_dir():
            raise FileNotFoundError(f"{self.path} is neither a file nor a folder")
        found = {}
        for entry in sorted(self.path.iterdir()):
            if entry.is_file() and entry.suffix == suffix:
                found[entry.stem] = entry
            elif entry.is_dir() and not entry.name.startswith((".", "_")):
                found[entry.name] = entry
        return found

    def _rediscovered(self) -> tuple[dict[str, Path], dict[str, ds.Dataset]]:
        """The tables as the folder holds them now (run on a worker thread). A single file
        keeps the dataset it had (a rewritten file is caught per query, see
        connectors.files.parquet_views); folders are listed again, so files added to or
        removed from them count. A new file that cannot be read yet (still being written)
        is left out, with a warning, until a later read."""
        paths = self._entries()
        datasets = {}
        for name, path in paths.items():
            if path == self._paths.get(name) and path.is_file() and name in self.datasets:
                datasets[name] = self.datasets[name]
                continue
            try:
                datasets[name] = self._dataset(path)
            except (OSError, pa.ArrowInvalid) as exc:
                log.warning("file source %s: %s is not readable as a table yet: %s",
                            self.name, path, exc)
        return {name: paths[name] for name in datasets}, datasets

    def _dataset(self, path: Path | str) -> ds.Dataset:
        where = self._filesystem
        if self.file_format == "parquet":
            return ds.dataset(str(path), format="parquet", partitioning="hive", filesystem=where)
        dataset = ds.dataset(str(path), format=CSV_FORMAT, partitioning="hive", filesystem=where)
        # CSV types are inferred: timestamps come out in nanoseconds, PostgreSQL keeps
        # microseconds (and DuckDB will not compare the two without a cast).
        schema = pa.schema([f.with_type(pa.timestamp("us", f.type.tz))
                            if pa.types.is_timestamp(f.type) else f for f in dataset.schema])
        if schema == dataset.schema:
            return dataset
        return ds.dataset(str(path), format=CSV_FORMAT, partitioning="hive", schema=schema,
                          filesystem=where)

    def folder_schema(self, name: str) -> pa.Schema | None:
        """The schema of table `name` if it is a folder of files, as they are now (for a
        move that appends a file to it; run on a worker thread); None otherwise."""
        path = self.path / name
        if name.startswith((".", "_")) or not path.is_dir():
            return None
        return self._dataset(path).schema

    async def tables(self) -> list[TableInfo]:
        """The folder's tables as it holds them now: every catalog read (periodic, after a
        statement named a table the catalog lacks) notices files added and removed.
        Tables new since start-up are read by pyarrow (DuckDB's own reader is restricted
        to the files it was allowed at start-up)."""
        paths, datasets = await asyncio.to_thread(self._rediscovered)
        self._native = {n: t for n, t in self._native.items() if paths.get(n) == self._paths.get(n)}
        self._paths, self.datasets = paths, datasets
        self._registered = {n: d for n, d in datasets.items() if n not in self._native}
        found = []
        for name, dataset in self.datasets.items():
            rows, stats = await asyncio.to_thread(parquet_estimates, dataset)
            found.append(TableInfo(TableRef(self.name, name, remote_name=name), dataset.schema,
                                   row_estimate=rows, column_stats=stats))
        return found

    async def storage(self) -> dict[str, Storage]:
        """Each table's bytes on disk now (its file, or the files of its folder), as
        pg_relation_size, pg_table_size and pg_total_relation_size: the main fork and
        all there is; a file has no other forks and no indexes (0, as PostgreSQL says of a
        fork a relation lacks)."""
        def sizes() -> dict[str, Storage]:
            found = {}
            for name, dataset in self.datasets.items():
                size = sum(os.path.getsize(f) for f in dataset.files)
                found[name] = Storage(size, 0, 0, 0, size, 0, size)
            return found
        return await asyncio.to_thread(sizes)

    def table_version(self, name: str) -> tuple | None:
        """Table `name`'s version (connectors.base.VersionedTables): each of its files'
        path, inode, size, mtime and ctime, read now. None for an unknown table, one on an
        object store (a stat is a request there), one of many files, one with a file
        missing (a read reports it) or changed within SETTLED_NS (its times may not show
        the next change). The ctime counts because a writer cannot set it back."""
        dataset = self.datasets.get(name)
        files = getattr(dataset, "files", None)
        if self._filesystem is not None or files is None or len(files) > VERSIONED_FILES:
            return None
        now = time.time_ns()
        version: list = [name, str(self._paths.get(name))]
        for path in files:
            try:
                st = os.stat(path)
            except OSError:
                return None
            if now - max(st.st_mtime_ns, st.st_ctime_ns) < SETTLED_NS:
                return None
            version.append((path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        return tuple(version)

    def classify(self, table: TableRef, filters: Sequence[exp.Expression]) -> list[Pushdown]:
        return [self.dialect.classify(f, None).pushdown for f in filters]

    async def run_remote(self, sql: str, params: Sequence[Any] = ()) -> BatchStream:
        self.statement_log.write(sql)
        await self._check(sql)
        try:
            return await self._runner.stream(sql, params, register=dict(self._registered),
                                             gather=True)
        except PgError as exc:
            missing = self._missing_file()
            if missing is None:
                raise
            raise missing from exc

    async def _check(self, sql: str) -> None:
        """The files behind the native views `sql` may read are still the ones described.
        A table counts as named when its name occurs in the text at all (a false match
        only costs one `stat`)."""
        if self._native:
            text = sql.lower()
            named = [n for n in self._native if n.lower() in text]
            removed = self._removed_table(named)
            if removed is not None:
                raise removed
            await check(self._runner, [self._native[n] for n in named], self.name)

    def _removed_table(self, names: Sequence[str]) -> PgError | None:
        """42P01 for a table of `names` whose file or folder was removed since the catalog
        was read (the next catalog read drops it; until then it answers as if it had)."""
        for name in names:
            path = self._paths.get(name)
            if path is not None and not path.exists():
                return PgError(UNDEFINED_TABLE, f'relation "{self.name}.{name}" does not exist',
                               detail=f'its file or folder "{path}" was removed')
        return None

    def _missing_file(self) -> PgError | None:
        """The error to report when a file a dataset lists is gone (checked on failure
        only: a stat per file on every query would cost too much for large datasets)."""
        removed = self._removed_table(list(self.datasets))
        if removed is not None:
            return removed
        for name, dataset in self.datasets.items():
            for path in getattr(dataset, "files", ()):
                if not os.path.exists(path):
                    return PgError(UNDEFINED_FILE, f'could not open file "{path}" of table '
                                                   f'{self.name}.{name}: it no longer exists')
        return None

    def explain_fragment(self, sql: str) -> list[str]:
        """The partition folders `sql` reads and prunes (connectors.files.pruning)."""
        return partition_lines(self.name, sql, self.datasets,
                               {name: str(path) for name, path in self._paths.items()})

    async def describe(self, sql: str, params: Sequence[Any] = ()) -> pa.Schema:
        stream = await self.run_remote(f"SELECT * FROM ({sql}) AS described LIMIT 0", params)
        await stream.aclose()
        return stream.schema

    async def scan(self, req: ScanRequest) -> BatchStream:
        """Filters pyarrow can evaluate exactly go into the dataset scanner; else DuckDB."""
        name = req.table.remote_name or req.table.name
        dataset = self.datasets[name]
        removed = self._removed_table([name])
        if removed is not None:
            raise removed
        if name in self._native:
            await check(self._runner, [self._native[name]], self.name)
        arrow_filter = to_arrow_filter(req.filters, dataset.schema)
        if arrow_filter is None and req.filters:
            return await self.run_remote(self.dialect.to_sql(scan_tree(req)))
        self.statement_log.write(f"scan {req.table.name} columns={req.columns} "
                                 f"filter={arrow_filter} limit={req.limit}")
        scanner = dataset.scanner(columns=req.columns or None, filter=arrow_filter,
                                  batch_size=BATCH_ROWS)
        return ScannerStream(scanner, req.limit)

    async def close(self) -> None:
        self._runner.close()


class ScannerStream:
    """Batches of a pyarrow scanner, read on worker threads; stops at `limit` rows. The
    scanner's batches (one per row group) are handed over gathered, as DuckDB's are."""

    def __init__(self, scanner: ds.Scanner, limit: int | None) -> None:
        self.schema = scanner.projected_schema
        self._reader: pa.RecordBatchReader | None = scanner.to_reader()
        self._left = limit

    def __aiter__(self) -> ScannerStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        reader = self._reader
        if reader is None or self._left == 0:
            await self.aclose()
            raise StopAsyncIteration
        # No more rows are read than the limit leaves to send.
        wanted = BATCH_ROWS if self._left is None else min(BATCH_ROWS, self._left)
        batch = await asyncio.to_thread(gathered_batch, reader, wanted)
        if batch is None:
            await self.aclose()
            raise StopAsyncIteration
        if self._left is not None:
            batch = batch.slice(0, self._left)
            self._left -= batch.num_rows
        return batch

    async def aclose(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()
