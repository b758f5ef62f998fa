"""Parquet or CSV files in object storage (`path = "s3://bucket/prefix/"`) as a source.

The tables are those of a local folder (connectors.files.source): each object
`prefix/<name>.parquet` is a table, each "folder" `prefix/<name>/` a table whose objects
are read together, Hive-style `year=2024/` folders as columns. The datasets read through
`pyarrow.fs.S3FileSystem` (connectors.files.object_store); DuckDB reads none of the
objects itself (its native Parquet views are for local files: it would need its own S3
client and credentials), so every table is a pyarrow dataset registered per query, into
whose scanner DuckDB pushes projections and filters: a filter on a partition column skips
the folders it excludes, row-group statistics skip row groups inside files.

Unlike a local folder, the store is a server: nothing is read when the source is made, so
a store that cannot be reached at start-up leaves the source mounted down (as a database
server that is down is) instead of stopping the gateway. Every catalog read lists the
prefix again, so objects added and removed are noticed as a local folder's files are; and
every statement lists the objects of the tables it names and makes a table's dataset anew
when any was added, removed or rewritten (`_to_current`): until then a dataset, with the
footers pyarrow keeps in its fragments, serves statement after statement.
"""

from __future__ import annotations

import asyncio
import threading
import logging
from pathlib import PurePosixPath
from collections.abc import Callable
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from connectors.base import BatchStream, Storage, TableInfo
from connectors.duckdb.runner import DuckDBRunner
from connectors.files.object_store import S3Location, store_error, store_unreadable
from connectors.files.source import FilesSource
from connectors.statement_log import StatementLog
from pgwire.errors import DATATYPE_MISMATCH, UNDEFINED_TABLE, PgError

T = TypeVar("T")
log = logging.getLogger("fedgate.files")

Stamps = frozenset[tuple[str, int | None, int | None]]


class ObjectStoreSource(FilesSource):
    spark_cannot_read = ("its objects are read with the gateway's own store settings and "
                         "credentials; the gateway hands Spark their rows as Arrow")
    def __init__(self, name: str, location: S3Location, *, file_format: str = "parquet",
                 statement_log: str | None = None) -> None:
        if file_format not in ("parquet", "csv"):
            raise ValueError(f"file format must be parquet or csv, not {file_format!r}")
        self.name = name
        self.location = location
        self.file_format = file_format
        self.statement_log = StatementLog(statement_log)
        self._filesystem = location.filesystem()
        # Read at the first catalog read (tables()), not here: see the module's docstring.
        self._paths: dict[str, str] = {}  # type: ignore[assignment]
        self.datasets: dict[str, ds.Dataset] = {}
        self._runner = DuckDBRunner.open(":memory:", allowed_paths=())
        # Statements bring their tables up to date on worker threads, one at a time (a
        # DeltaTable is not to be updated from two threads at once).
        self._updating = threading.Lock()
        self._native = {}
        self._registered = {}
        # What each table's objects were when its dataset was made: (key, size, mtime).
        self._stamps: dict[str, Stamps] = {}
        self._objects: set[str] = set()  # the tables that are one object, not a prefix

    @property
    def path(self) -> str:  # type: ignore[override]
        return self.location.url

    def _entries(self) -> dict[str, str]:  # type: ignore[override]
        """Each table's name and the object or prefix it reads, as the store lists them now."""
        suffix = f".{self.file_format}"
        root = self.location.root
        bucket = self._filesystem.get_file_info(self.location.bucket)
        if bucket.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"NoSuchBucket: bucket {self.location.bucket} not found")
        info = self._filesystem.get_file_info(root)
        if info.type == pafs.FileType.File:
            self._objects = {root}
            return {PurePosixPath(root).stem: root}
        found, objects = {}, set()
        # A prefix that holds nothing yet lists as empty (object stores have no folders).
        listing = self._filesystem.get_file_info(pafs.FileSelector(root, allow_not_found=True))
        for entry in sorted(listing, key=lambda e: e.path):
            base = PurePosixPath(entry.path).name
            if entry.type == pafs.FileType.File and base.endswith(suffix):
                found[base[:-len(suffix)]] = entry.path
                objects.add(entry.path)
            elif entry.type == pafs.FileType.Directory and not base.startswith((".", "_")):
                found[base] = entry.path
        self._objects = objects
        return found

    def _rediscovered(self) -> tuple[dict[str, str], dict[str, ds.Dataset]]:  # type: ignore[override]
        return self._locked(self._listed)

    def _listed(self) -> tuple[dict[str, str], dict[str, ds.Dataset]]:
        """The tables as the store lists them now: every table's dataset is made again,
        so objects added to or removed from a prefix count. An object that cannot be read
        as a table is left out, with a warning, until a later read; a store that cannot
        be listed at all is the source's failure (08001)."""
        paths = self._entries()
        datasets, stamps = {}, {}
        for name, path in paths.items():
            try:
                stamps[name] = self._stamps_now(path)
                datasets[name] = self._dataset(path)
            except pa.ArrowInvalid as exc:
                log.warning("file source %s: %s is not readable as a table yet: %s",
                            self.name, path, exc)
        self._stamps = {name: stamps[name] for name in datasets}
        return {name: paths[name] for name in datasets}, datasets

    def _stamps_now(self, path: str) -> Stamps:
        """The objects a table reads now, with their sizes and modification times: one
        HEAD for a single object, one listing for a prefix."""
        if path in self._objects:
            info = self._filesystem.get_file_info(path)
            return frozenset({(info.path, info.size, info.mtime_ns)}
                             if info.type == pafs.FileType.File else ())
        listing = self._filesystem.get_file_info(
            pafs.FileSelector(path, recursive=True, allow_not_found=True))
        return frozenset((i.path, i.size, i.mtime_ns) for i in listing
                         if i.type == pafs.FileType.File)

    def _to_current(self, sql: str) -> None:
        """The tables `sql` names, read as the store holds them now (run on a worker
        thread, before the statement reads): a dataset keeps its objects' sizes, so an
        object rewritten since would be read at its old length. A table whose objects
        changed gets a dataset made anew; one whose objects are all gone is 42P01, or
        08006 when the bucket itself is gone. A table counts as named when its name
        occurs in the text at all (a false match costs one request)."""
        text = sql.lower()
        for name, path in list(self._paths.items()):
            if name.lower() not in text:
                continue
            stamps = self._stamps_now(path)
            if stamps == self._stamps.get(name):
                continue
            if not stamps:
                bucket = self._filesystem.get_file_info(self.location.bucket)
                if bucket.type == pafs.FileType.NotFound:
                    raise store_error(self.name, self.location, FileNotFoundError(
                        f"NoSuchBucket: bucket {self.location.bucket} not found"), lost=True)
                raise PgError(UNDEFINED_TABLE, f'relation "{self.name}.{name}" does not exist',
                              detail=f'its objects under "s3://{path}" were removed')
            dataset = self._dataset(path)
            if dataset.schema != self.datasets[name].schema:
                raise PgError(DATATYPE_MISMATCH,
                              f'the objects of table {self.name}.{name} under "s3://{path}" '
                              "changed their columns since the catalog was read",
                              detail=f"the catalog has {self.datasets[name].schema}, the objects "
                                     f"now {dataset.schema}",
                              hint="The next catalog read takes the new columns.")
            self.datasets[name] = self._registered[name] = dataset
            self._stamps[name] = stamps

    async def tables(self) -> list[TableInfo]:
        try:
            return await super().tables()
        except OSError as exc:
            raise store_unreadable(self.location, exc) from exc

    async def storage(self) -> dict[str, Storage]:
        """Each table's bytes in the store now: the sizes of its objects."""
        def sizes() -> dict[str, Storage]:
            found = {}
            for name, dataset in self.datasets.items():
                infos = self._filesystem.get_file_info(list(dataset.files))
                size = sum(info.size or 0 for info in infos)
                found[name] = Storage(size, 0, 0, 0, size, 0, size)
            return found
        try:
            return await asyncio.to_thread(sizes)
        except OSError as exc:
            raise store_error(self.name, self.location, exc) from exc

    def _locked(self, work: Callable[..., T], *args: Any) -> T:
        with self._updating:
            return work(*args)

    async def run_remote(self, sql: str, params: Any = ()) -> BatchStream:
        """`sql` over the tables as the store holds them now. The listing that says so
        (`_to_current`) and DuckDB's start over the datasets as last listed run at once:
        both wait on the store, and most statements find nothing changed. When the
        listing changed a dataset, the stream started over the old ones is closed unread
        (its errors, of objects read at their old sizes, are nobody's) and the statement
        starts again over the new ones: no row of a stale dataset reaches the client."""
        self.statement_log.write(sql)
        registered = dict(self._registered)
        started = asyncio.ensure_future(self._start(sql, params, registered))
        try:
            await asyncio.to_thread(self._locked, self._to_current, sql)
        except BaseException as exc:
            await _discard(started)
            if isinstance(exc, OSError):
                raise store_error(self.name, self.location, exc, lost=True) from exc
            raise
        if any(self._registered.get(name) is not dataset for name, dataset in registered.items()):
            await _discard(started)
            started = asyncio.ensure_future(self._start(sql, params, dict(self._registered)))
        return FailureMappedStream(await started, self._failure)

    async def _start(self, sql: str, params: Any, registered: dict[str, ds.Dataset]) -> BatchStream:
        try:
            return await self._runner.stream(sql, params, register=registered, gather=True)
        except PgError as exc:
            raise await asyncio.to_thread(self._failure, exc) from exc

    def _failure(self, exc: PgError) -> PgError:
        """What a failed read means: a table whose objects were all removed is 42P01 (as
        a local folder's), an object listed but gone is 58P01, a store that stopped
        answering is 08006; anything else is the error as DuckDB gave it."""
        try:
            bucket = self._filesystem.get_file_info(self.location.bucket)
            if bucket.type == pafs.FileType.NotFound:
                return store_error(self.name, self.location, FileNotFoundError(
                    f"NoSuchBucket: bucket {self.location.bucket} not found"), lost=True)
            missing = self._missing_file()
        except OSError as lost:
            return store_error(self.name, self.location, lost, lost=True)
        if missing is not None:
            return missing
        if "AWS Error" in exc.message:
            return store_error(self.name, self.location, exc, lost=True)
        return exc

    def _removed_table(self, names: Any) -> PgError | None:
        for name in names:
            path = self._paths.get(name)
            if path is not None and self._filesystem.get_file_info(path).type == \
                    pafs.FileType.NotFound:
                return PgError(UNDEFINED_TABLE, f'relation "{self.name}.{name}" does not exist',
                               detail=f'its objects under "s3://{path}" were removed')
        return None

    def _missing_file(self) -> PgError | None:
        removed = self._removed_table(list(self.datasets))
        if removed is not None:
            return removed
        for name, dataset in self.datasets.items():
            files = list(getattr(dataset, "files", ()))
            for info in self._filesystem.get_file_info(files):
                if info.type == pafs.FileType.NotFound:
                    return PgError("58P01", f'could not open object "s3://{info.path}" of table '
                                            f'{self.name}.{name}: it no longer exists')
        return None

    async def scan(self, req: Any) -> BatchStream:
        try:
            return await super().scan(req)
        except OSError as exc:
            raise store_error(self.name, self.location, exc, lost=True) from exc


async def _discard(started: asyncio.Future) -> None:
    """Close a stream started in vain, or stop its start; its failure is not the
    statement's (the statement reports its own). A cancel of the statement itself still
    comes through the wait."""
    if not started.done():
        started.cancel()
    await asyncio.wait([started])
    if started.cancelled() or started.exception() is not None:
        return
    await started.result().aclose()


class FailureMappedStream:
    """A stream whose failures part-way (an object or the bucket gone under the read) are
    said as the source says them (`ObjectStoreSource._failure`), not as DuckDB's text."""

    def __init__(self, stream: BatchStream, failure: Callable[[PgError], PgError]) -> None:
        self._stream = stream
        self._failure = failure
        self.schema = stream.schema

    def __aiter__(self) -> FailureMappedStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        try:
            return await self._stream.__anext__()
        except PgError as exc:
            raise await asyncio.to_thread(self._failure, exc) from exc

    async def aclose(self) -> None:
        await self._stream.aclose()
