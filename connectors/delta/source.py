"""Delta Lake tables as a federated source, read through delta-rs (`deltalake`).

`path` is a folder or an `s3://bucket/prefix/` (connectors.files.object_store): each
folder under it that holds a `_delta_log/` is a table named after the folder (or `path`
is itself one table). A table is the pyarrow dataset of one version's files
(`DeltaTable.to_pyarrow_dataset`), whose fragments carry each file's partition values
and column statistics from the log; the catalog's types are its Arrow schema's, mapped as
a Parquet file's are. Shipped SQL runs in an in-process DuckDB over those datasets
("duckdb-over-files", as connectors.files.source), which pushes projections and filters
into the scanner: a filter skips the files whose partition values or min/max statistics
exclude it, without opening them.

Versions. Each statement reads the version that is newest when it starts (the log is
listed again for the tables its SQL names) and nothing newer while it runs: its dataset
is fixed. An older version is a table of its own name, `"<table>@v<N>"` (quoted, as the
`@` needs), for example `SELECT * FROM lake."sales@v3"`: a statement naming one the
catalog lacks makes the source open that version (`wants_table`), and it stays listed,
never moving, from then on.
"""

from __future__ import annotations

import asyncio
import threading
import logging
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from collections.abc import Callable
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError

from connectors.base import BatchStream, Storage, TableInfo, TableRef
from connectors.duckdb.runner import DuckDBRunner
from connectors.files.object_store import S3Location, store_error, store_unreadable
from connectors.files.pruning import file_lines
from connectors.files.source import FilesSource
from connectors.statement_log import StatementLog
from pgwire.errors import DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, PgError

T = TypeVar("T")
log = logging.getLogger("fedgate.delta")

LOG_FOLDER = "_delta_log"
# `name@v12`: version 12 of table `name`.
VERSIONED = re.compile(r"^(?P<table>.+)@v(?P<version>0|[1-9][0-9]{0,17})$")


@dataclass
class DeltaEntry:
    """One table of the catalog: a Delta table at a version (`pinned`: never moves)."""

    uri: str  # what deltalake opens: a local path or s3://bucket/key
    root: str  # the table's folder, as the source's filesystem names it
    table: DeltaTable
    dataset: ds.Dataset
    pinned: bool


class DeltaSource(FilesSource):
    file_format = "delta"
    spark_cannot_read = ("a Delta table is the files its log lists at one version, which "
                         "spark.read of a folder does not know; the gateway hands Spark its "
                         "rows as Arrow")

    def __init__(self, name: str, where: str | S3Location, *,
                 statement_log: str | None = None) -> None:
        self.name = name
        self.location = where if isinstance(where, S3Location) else None
        self.root = where.root if isinstance(where, S3Location) else str(Path(where))
        self.statement_log = StatementLog(statement_log)
        self._filesystem = (self.location.filesystem() if self.location is not None
                            else pafs.LocalFileSystem())
        self._entries_now: dict[str, DeltaEntry] = {}
        self._wanted: dict[str, int] = {}  # "<table>@v<N>" asked for -> N
        self._paths: dict[str, str] = {}  # type: ignore[assignment]
        self.datasets: dict[str, ds.Dataset] = {}
        self._runner = DuckDBRunner.open(":memory:", allowed_paths=())
        # Statements bring their tables up to date on worker threads, one at a time (a
        # DeltaTable is not to be updated from two threads at once).
        self._updating = threading.Lock()
        self._native = {}
        self._registered = {}

    @property
    def path(self) -> str:  # type: ignore[override]
        return self.location.url if self.location is not None else self.root

    # -- what deltalake is told -------------------------------------------------------
    def _uri(self, root: str) -> str:
        return f"s3://{root}" if self.location is not None else root

    def _storage_options(self) -> dict[str, str] | None:
        location = self.location
        if location is None:
            return None
        options = {"AWS_REGION": location.region or "us-east-1"}
        if location.endpoint is not None:
            options["AWS_ENDPOINT_URL"] = location.endpoint
            options["AWS_ALLOW_HTTP"] = str(location.endpoint.startswith("http://")).lower()
        if location.access_key_id is not None:
            options["AWS_ACCESS_KEY_ID"] = location.access_key_id
            options["AWS_SECRET_ACCESS_KEY"] = location.secret_access_key or ""
        return options

    def _open(self, root: str, version: int | None) -> DeltaEntry:
        table = DeltaTable(self._uri(root), version=version,
                           storage_options=self._storage_options())
        return DeltaEntry(self._uri(root), root, table, self._dataset_of(table, root),
                          pinned=version is not None)

    def _dataset_of(self, table: DeltaTable, root: str) -> ds.Dataset:
        # The files are read through pyarrow's filesystem (the source's own client and
        # credentials), rooted at the table's folder as deltalake names files relative to it.
        return table.to_pyarrow_dataset(filesystem=pafs.SubTreeFileSystem(root, self._filesystem))

    # -- discovery --------------------------------------------------------------------
    def _table_roots(self) -> dict[str, str]:
        """Each Delta table under the path: name -> folder."""
        fs = self._filesystem
        if self.location is not None:
            bucket = fs.get_file_info(self.location.bucket)
            if bucket.type == pafs.FileType.NotFound:
                raise FileNotFoundError(f"NoSuchBucket: bucket {self.location.bucket} not found")
        if fs.get_file_info(f"{self.root}/{LOG_FOLDER}").type == pafs.FileType.Directory:
            return {PurePosixPath(self.root).name: self.root}
        found = {}
        listing = fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True))
        for entry in sorted(listing, key=lambda e: e.path):
            base = PurePosixPath(entry.path).name
            if entry.type != pafs.FileType.Directory or base.startswith((".", "_")):
                continue
            if fs.get_file_info(f"{entry.path}/{LOG_FOLDER}").type == pafs.FileType.Directory:
                found[base] = entry.path
        return found

    def _read(self) -> dict[str, DeltaEntry]:
        """The tables as the path holds them now (run on a worker thread): the newest
        version of each, and the older versions asked for. A table whose log cannot be
        read is left out with a warning until a later read."""
        entries: dict[str, DeltaEntry] = {}
        roots = self._table_roots()
        for name, root in roots.items():
            try:
                entries[name] = self._newest(name, root)
            except (DeltaError, pa.ArrowInvalid) as exc:
                log.warning("delta source %s: table %s is not readable: %s", self.name, root, exc)
        for name, version in self._wanted.items():
            base = VERSIONED.match(name)
            assert base is not None
            if base["table"] not in roots:
                continue
            kept = self._entries_now.get(name)
            try:
                entries[name] = kept if kept is not None else \
                    self._open(roots[base["table"]], version)
            except (DeltaError, pa.ArrowInvalid) as exc:
                log.warning("delta source %s: version %d of %s is not readable: %s",
                            self.name, version, base["table"], exc)
        return entries

    def _newest(self, name: str, root: str) -> DeltaEntry:
        kept = self._entries_now.get(name)
        if kept is None or kept.root != root:
            return self._open(root, None)
        before = kept.table.version()
        kept.table.update_incremental()
        if kept.table.version() != before:
            kept.dataset = self._dataset_of(kept.table, root)
        return kept

    def _install(self, entries: dict[str, DeltaEntry]) -> None:
        self._entries_now = entries
        self._paths = {name: entry.root for name, entry in entries.items()}
        self.datasets = {name: entry.dataset for name, entry in entries.items()}
        self._registered = dict(self.datasets)

    def wants_table(self, name: str) -> bool:
        """A statement named `name`, which the catalog lacks: True when it is a version
        of a table (`sales@v3`) that the next catalog read will list."""
        match = VERSIONED.match(name)
        if match is None or name in self._wanted:
            return False
        self._wanted[name] = int(match["version"])
        return True

    async def tables(self) -> list[TableInfo]:
        try:
            entries = await asyncio.to_thread(self._locked, self._read)
        except OSError as exc:
            if self.location is not None:
                raise store_unreadable(self.location, exc) from exc
            raise PgError("58P01", f"cannot read {self.root}: {exc}") from exc
        self._install(entries)
        return [TableInfo(TableRef(self.name, name, remote_name=name), entry.dataset.schema,
                          row_estimate=_rows(entry.table))
                for name, entry in entries.items()]

    def _unavailable(self, exc: BaseException, lost: bool = False) -> PgError:
        if self.location is not None:
            return store_error(self.name, self.location, exc, lost=lost)
        return PgError("58P01", f'delta source "{self.name}": cannot read {self.root}: {exc}')

    async def storage(self) -> dict[str, Storage]:
        """Each table's bytes: the sizes its version's files have in the log."""
        found = {}
        for name, entry in self._entries_now.items():
            adds = entry.table.get_add_actions(flatten=True)
            size = sum(pa.table(adds).column("size_bytes").to_pylist()) if len(adds) else 0
            found[name] = Storage(size, 0, 0, 0, size, 0, size)
        return found

    # -- writing (a move's target, connectors.delta.bulk_write) --------------------------
    def write_target(self, name: str, creates: bool) -> tuple[str, pa.Schema | None]:
        """Where a move writes table `name` (the uri deltalake opens) and, for an append,
        the schema of its newest version (run on a worker thread)."""
        if self.location is not None:
            raise PgError(FEATURE_NOT_SUPPORTED, f'delta source "{self.name}" takes no moves: '
                          "a Delta table in object storage needs a commit lock the gateway "
                          "does not hold")
        if VERSIONED.match(name):
            raise PgError(FEATURE_NOT_SUPPORTED, f'delta table "{name}" is an old version: '
                          "it takes no writes")
        if not name or "/" in name or name.startswith((".", "_")):
            raise PgError("42602", f'invalid name for a delta table: "{name}"')
        if (Path(self.root) / LOG_FOLDER).is_dir():  # the path is one table
            if creates or name != PurePosixPath(self.root).name:
                raise PgError(FEATURE_NOT_SUPPORTED, f'delta source "{self.name}" is one '
                              "table: it takes appends to that table only")
            root = self.root
        else:
            root = str(Path(self.root) / name)
        exists = (Path(root) / LOG_FOLDER).is_dir()
        if creates:
            if exists or Path(root).is_file():
                raise PgError("42P07", f'relation "{name}" already exists')
            return root, None
        if not exists:
            raise PgError("42P01", f'relation "{name}" does not exist')
        with self._updating:
            entry = self._newest(name, root)
        return root, entry.dataset.schema

    # -- reading ------------------------------------------------------------------------
    def _locked(self, work: Callable[..., T], *args: Any) -> T:
        with self._updating:
            return work(*args)

    async def run_remote(self, sql: str, params: Any = ()) -> BatchStream:
        """`sql` over the newest versions of the tables it names, fixed for the statement."""
        self.statement_log.write(sql)
        await asyncio.to_thread(self._locked, self._to_newest, sql)
        try:
            return await self._runner.stream(sql, params, register=dict(self._registered))
        except PgError as exc:
            if "AWS Error" in exc.message or "Object at location" in exc.message:
                raise self._unavailable(exc, lost=True) from exc
            raise

    def _to_newest(self, sql: str) -> None:
        text = sql.lower()
        for name, entry in list(self._entries_now.items()):
            if entry.pinned or name.lower() not in text:
                continue
            try:
                newest = self._newest(name, entry.root)
            except (DeltaError, TableNotFoundError, OSError) as exc:
                raise self._unavailable(exc, lost=True) from exc
            if newest.dataset.schema != self.datasets[name].schema:
                raise PgError(DATATYPE_MISMATCH,
                              f"delta table {self.name}.{name} changed its columns at version "
                              f"{newest.table.version()}",
                              detail=f"the catalog has {self.datasets[name].schema.names}, the "
                                     f"table now {newest.dataset.schema.names}",
                              hint="The next statement reads the catalog again.")
            self.datasets[name] = self._registered[name] = newest.dataset

    def explain_fragment(self, sql: str) -> list[str]:
        """The files of each version `sql` reads, and how many its filters skip."""
        versions = {name: entry.table.version() for name, entry in self._entries_now.items()}
        return file_lines(self.name, sql, self.datasets, versions)

    async def close(self) -> None:
        self._runner.close()


def _rows(table: DeltaTable) -> int | None:
    adds = pa.table(table.get_add_actions(flatten=True))
    if "num_records" not in adds.column_names:
        return None
    counts = adds.column("num_records").to_pylist()
    return None if any(c is None for c in counts) else sum(counts)
