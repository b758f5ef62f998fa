"""Apache Iceberg tables as a federated source, read through pyiceberg.

`catalog_uri` names an Iceberg SQL catalog (SQLAlchemy's URL: `sqlite:///catalog.db`, or
`postgresql+psycopg2://...`); the tables of its namespace `namespace` are the source's
tables, their Arrow schemas (pyiceberg's mapping of Iceberg's types) the catalog's.

A shipped fragment runs in an in-process DuckDB ("duckdb-over-files", as the file
sources), over one Iceberg scan per table it names: the scan carries the fragment's
conjuncts that convert exactly (connectors.iceberg.expressions) as its row filter, so
Iceberg skips the data files whose partition values or column statistics exclude them,
and the columns the fragment names as its projection. DuckDB applies every conjunct
again, so the scan's filter may over-select but never under-select.

Snapshots. Each statement reads the snapshot that is current when it starts (the table's
metadata is read again for the tables its SQL names), the same one for every scan of the
statement. An older snapshot is a table of its own name, `"<table>@s<snapshot id>"`,
made when a statement names it (connectors.base.OnDemandTables) and fixed from then on.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import sqlglot
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.table import Table
from sqlalchemy.exc import SQLAlchemyError
from sqlglot import exp
from sqlglot.errors import ParseError

from connectors.base import BatchStream, Storage, TableInfo, TableRef
from connectors.duckdb.runner import DuckDBRunner
from connectors.files.pruning import single_table_selects
from connectors.files.source import FilesSource
from connectors.iceberg.expressions import to_iceberg
from connectors.statement_log import StatementLog
from pgwire.errors import (DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED,
                           SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, PgError)

T = TypeVar("T")
log = logging.getLogger("fedgate.iceberg")

# `name@s123`: snapshot 123 of table `name`.
AT_SNAPSHOT = re.compile(r"^(?P<table>.+)@s(?P<snapshot>[1-9][0-9]{0,19})$")


@dataclass
class IcebergEntry:
    table: Table
    snapshot_id: int | None  # None: the table has no snapshot yet (no rows)
    schema: pa.Schema
    pinned: bool


class IcebergSource(FilesSource):
    file_format = "iceberg"
    spark_cannot_read = ("an Iceberg table is the files its metadata lists at one snapshot; "
                         "the gateway hands Spark its rows as Arrow")

    def __init__(self, name: str, catalog_uri: str, namespace: str, *,
                 catalog_name: str | None = None, warehouse: str | None = None,
                 statement_log: str | None = None) -> None:
        self.name = name
        self.namespace = namespace
        self.statement_log = StatementLog(statement_log)
        # The gateway only reads: it never creates the catalog's tables in its database.
        self._properties = {"uri": catalog_uri, "init_catalog_tables": "false"}
        if warehouse is not None:
            self._properties["warehouse"] = warehouse
        # A SQL catalog's database may hold several catalogs, told apart by name.
        self._catalog_name = catalog_name or name
        # Connected at the first catalog read, not here: the catalog's database is a
        # server as often as a file, and one that is down mounts the source down.
        self._catalog: SqlCatalog | None = None
        self._entries_now: dict[str, IcebergEntry] = {}
        self._wanted: dict[str, int] = {}
        self._paths: dict[str, str] = {}  # type: ignore[assignment]
        self.datasets = {}
        self._runner = DuckDBRunner.open(":memory:", allowed_paths=())
        self._native = {}
        self._registered = {}
        self._updating = threading.Lock()

    @property
    def path(self) -> str:  # type: ignore[override]
        return f"{self.namespace} in {self._properties['uri']}"

    def _locked(self, work: Callable[..., T], *args: Any) -> T:
        with self._updating:
            return work(*args)

    def _connected(self) -> SqlCatalog:
        """The catalog, connected at its first use (see __init__)."""
        if self._catalog is None:
            self._catalog = SqlCatalog(self._catalog_name, **self._properties)
        return self._catalog

    # -- discovery --------------------------------------------------------------------
    def _entry(self, table: Table, snapshot_id: int | None, pinned: bool) -> IcebergEntry:
        schema = table.schema() if snapshot_id is None or table.snapshot_by_id(snapshot_id) is None \
            else table.scan(snapshot_id=snapshot_id).projection()
        return IcebergEntry(table, snapshot_id, schema.as_arrow(), pinned)

    def _read(self) -> dict[str, IcebergEntry]:
        catalog = self._connected()
        entries = {}
        for identifier in catalog.list_tables(self.namespace):
            name = identifier[-1]
            table = catalog.load_table(identifier)
            snapshot = table.current_snapshot()
            entries[name] = self._entry(table, snapshot.snapshot_id if snapshot else None, False)
        for name, snapshot_id in self._wanted.items():
            base = AT_SNAPSHOT.match(name)
            assert base is not None
            current = entries.get(base["table"])
            if current is None or current.table.snapshot_by_id(snapshot_id) is None:
                continue
            kept = self._entries_now.get(name)
            entries[name] = kept if kept is not None else \
                self._entry(current.table, snapshot_id, True)
        return entries

    def wants_table(self, name: str) -> bool:
        match = AT_SNAPSHOT.match(name)
        if match is None or name in self._wanted:
            return False
        self._wanted[name] = int(match["snapshot"])
        return True

    async def tables(self) -> list[TableInfo]:
        try:
            entries = await asyncio.to_thread(self._locked, self._read)
        except NoSuchNamespaceError as exc:
            raise _unreadable(f"the catalog {self._catalog_name!r} has no namespace "
                              f"{self.namespace!r}") from exc
        except (OSError, NoSuchTableError) as exc:
            raise _unreadable(_first_line(exc)) from exc
        except SQLAlchemyError as exc:  # the catalog's database
            raise _unreadable(f"its catalog cannot be read: {_first_line(exc)}") from exc
        self._entries_now = entries
        self._paths = {name: name for name in entries}
        return [TableInfo(TableRef(self.name, name, remote_name=name), entry.schema,
                          row_estimate=_rows(entry))
                for name, entry in entries.items()]

    async def storage(self) -> dict[str, Storage]:
        """Each table's bytes: the sizes of its snapshot's data files, from the manifests."""
        def sizes() -> dict[str, Storage]:
            found = {}
            for name, entry in self._entries_now.items():
                size = sum(task.file.file_size_in_bytes for task in _tasks(entry, AlwaysTrue()))
                found[name] = Storage(size, 0, 0, 0, size, 0, size)
            return found
        return await asyncio.to_thread(sizes)

    # -- writing (a move's target, connectors.iceberg.bulk_write) ------------------------
    def write_target(self, name: str, creates: bool) -> tuple[SqlCatalog, tuple[str, str],
                                                              Table | None]:
        """The catalog and identifier a move writes, and for an append the table as its
        catalog has it now (run on a worker thread)."""
        if AT_SNAPSHOT.match(name):
            raise PgError(FEATURE_NOT_SUPPORTED, f'iceberg table "{name}" is an old snapshot: '
                          "it takes no writes")
        identifier = (self.namespace, name)
        try:
            with self._updating:
                catalog = self._connected()
                exists = catalog.table_exists(identifier)
                if creates:
                    if exists:
                        raise PgError("42P07", f'relation "{name}" already exists')
                    if "warehouse" not in self._properties:
                        raise PgError(FEATURE_NOT_SUPPORTED,
                                      f'CREATE TABLE AS into iceberg source "{self.name}" needs '
                                      "a place for the new table's files",
                                      hint=f"Set warehouse in [sources.{self.name}].")
                    return catalog, identifier, None
                if not exists:
                    raise PgError("42P01", f'relation "{name}" does not exist')
                return catalog, identifier, catalog.load_table(identifier)
        except SQLAlchemyError as exc:
            raise _unreadable(f"its catalog cannot be read: {_first_line(exc)}") from exc

    # -- reading ------------------------------------------------------------------------
    async def run_remote(self, sql: str, params: Any = ()) -> BatchStream:
        self.statement_log.write(sql)
        scans = await asyncio.to_thread(self._locked, self._scans, sql)
        return await self._runner.stream(sql, params, register=scans)

    def _scans(self, sql: str) -> dict[str, Any]:
        """One Arrow input per table `sql` names, at the snapshot current now, filtered
        and projected as far as the fragment allows."""
        try:
            tree = sqlglot.parse_one(sql, read="duckdb")
        except ParseError:
            tree = None
        named = [t.name for t in tree.find_all(exp.Table)] if tree is not None else []
        filters = {name: conjuncts for name, conjuncts in
                   single_table_selects(sql, self._entries_now)}
        inputs: dict[str, Any] = {}
        for name in dict.fromkeys(named):
            entry = self._entries_now.get(name)
            if entry is None:
                continue
            entry = self._to_current(name, entry)
            columns = _columns(tree, entry.schema) if tree is not None else None
            condition = to_iceberg(filters.get(name, []), entry.schema)
            scan = entry.table.scan(row_filter=condition, snapshot_id=entry.snapshot_id,
                                    selected_fields=columns or ("*",))
            # A table read twice in one fragment (a self-join) needs its rows twice: a
            # reader streams once, so it gets them as a table.
            inputs[name] = scan.to_arrow() if named.count(name) > 1 else \
                scan.to_arrow_batch_reader()
        return inputs

    def _to_current(self, name: str, entry: IcebergEntry) -> IcebergEntry:
        """The table at the snapshot current now (a pinned one stays where it is)."""
        if entry.pinned:
            return entry
        table = entry.table.refresh()
        snapshot = table.current_snapshot()
        newest = self._entry(table, snapshot.snapshot_id if snapshot else None, False)
        if newest.schema != entry.schema:
            raise PgError(DATATYPE_MISMATCH,
                          f"iceberg table {self.name}.{name} changed its columns since the "
                          "catalog was read",
                          detail=f"the catalog has {entry.schema.names}, the table now "
                                 f"{newest.schema.names}",
                          hint="The next catalog read takes the new columns.")
        self._entries_now[name] = newest
        return newest

    def explain_fragment(self, sql: str) -> list[str]:
        """The data files each table's snapshot has, and how many the scan's filter plans."""
        lines = []
        for name, conjuncts in single_table_selects(sql, self._entries_now):
            entry = self._entries_now[name]
            every = len(_tasks(entry, AlwaysTrue()))
            condition = to_iceberg(conjuncts, entry.schema)
            kept = len(_tasks(entry, condition))
            lines.append(f"Files of {self.name}.{name} (snapshot {entry.snapshot_id}): {kept} of "
                         f"{every} read, {every - kept} skipped by the Iceberg filter {condition}")
        return lines


def _unreadable(reason: str) -> PgError:
    """A catalog read that failed: the health board names the source (08001)."""
    return PgError(SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, reason)


def _tasks(entry: IcebergEntry, condition: BooleanExpression) -> list:
    if entry.snapshot_id is None:
        return []
    return list(entry.table.scan(row_filter=condition, snapshot_id=entry.snapshot_id).plan_files())


def _columns(tree: exp.Expression, schema: pa.Schema) -> tuple[str, ...] | None:
    """The columns of `schema` the fragment names (None: a star, so all of them)."""
    if any(isinstance(star, exp.Star) for star in tree.find_all(exp.Star)):
        return None
    names = {column.name for column in tree.find_all(exp.Column)}
    found = tuple(name for name in schema.names if name in names)
    # count(*) names no column: read the narrowest schema there is, one column.
    return found or tuple(schema.names[:1])


def _rows(entry: IcebergEntry) -> int | None:
    if entry.snapshot_id is None:
        return 0
    summary = entry.table.snapshot_by_id(entry.snapshot_id).summary
    total = summary.get("total-records") if summary is not None else None
    return int(total) if total is not None else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
