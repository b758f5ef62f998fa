"""What every session of one gateway process shares: the `ServerContext`.

Configuration, the sources, the catalog snapshot (and reading it again), the plan cache,
the executor and router, and the registry of sessions that CancelRequest looks in.
`gateway.server.listener.build_context` builds it. It sits low in the gateway so that the
relay and the session can be handed it without importing the server; what it holds of
the layers above it (the executor, the router, the emulated catalog's remount) is given
to it by the listener and typed here by what the context and its users call.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import pyarrow as pa

from connectors.base import BatchStream, OnDemandTables, Source
from gateway.config import Config
from gateway.state.health import HealthBoard
from gateway.state.metrics import Metrics, RecentStatements
from gateway.state.route import Route
from gateway.state.memory import EngineMemory, StatementMemory
from gateway.state.settings import VERSION_STRING
from pgwire.errors import PgError, source_unavailable
from planner import CatalogSnapshot, PlanCache, QueryPlan, SourceEntry
from planner.catalog import UndefinedRelation

log = logging.getLogger("fedgate")


class PlanExecutor(Protocol):
    """What sessions ask of `gateway.executor.execute.Executor`."""

    sources: Mapping[str, Source]
    engines: Mapping[str, Any]
    default: str

    async def run(self, plan: QueryPlan, params: Sequence[Any], engine: str | None = None,
                  dynamic_filtering: bool = True, memory: StatementMemory | None = None
                  ) -> BatchStream: ...

    async def describe(self, plan: QueryPlan, engine: str | None = None) -> pa.Schema: ...


class StatementRouter(Protocol):
    """What sessions ask of `gateway.relay.routing.Router`."""

    read_only: set[str]

    def route(self, sql: str, search_path: tuple[str, ...], in_transaction: bool = False,
              hidden: frozenset[str] = frozenset()) -> Route | None: ...


class CancelTarget(Protocol):
    """A session as the cancel registry sees it (`gateway.state.session.SessionState`)."""

    key: int
    user: str

    def cancel(self, reason: str = "user request") -> None: ...

    def terminate(self) -> None: ...


@dataclass
class ServerContext:
    config: Config
    sources: dict[str, Source]
    catalog: CatalogSnapshot
    executor: PlanExecutor
    plans: PlanCache = field(default_factory=PlanCache)
    sessions: dict[int, CancelTarget] = field(default_factory=dict)
    version_string: str = VERSION_STRING
    # The emulated pg_catalog's schemas (not read from a source) and how a new catalog
    # version gets them rebuilt (gateway.pg_catalog.mount.with_catalog).
    system_schemas: frozenset[str] = frozenset()
    remount: Callable[[CatalogSnapshot], Awaitable[CatalogSnapshot]] | None = None
    _pids: itertools.count = field(default_factory=lambda: itertools.count(os.getpid() * 1000 % 2**30 + 1))
    _refreshed: float = field(default_factory=time.monotonic)
    _refresh_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _reads_started: int = 0  # reads of the sources' tables begun so far (`_read_after`)
    # Set by the listener once the context exists (the router reads the context's catalog).
    router: StatementRouter = field(init=False)
    # DDL went to a source (through this worker or, announced, another): read the catalog
    # again before the next statement needs it.
    catalog_stale: bool = False
    # Several workers: tells every other worker that DDL ran through this one, and returns
    # once they all know (gateway.server.workers.CatalogAnnouncer).
    announce_catalog_change: Callable[[], Awaitable[None]] | None = None
    # Counts changes that may have reshaped tables (DDL here or announced, a catalog read
    # that found a change): what a session's links compare to forget statements they
    # prepared on a source before (connectors.postgres.link.PgLink.expire_statements).
    schema_epoch: int = 0
    # Several workers: backend pids encode the worker (pid % worker_count == worker_index),
    # and a CancelRequest for another worker's pid goes to `forward_cancel(owner, pid, key)`.
    worker_index: int = 0
    worker_count: int = 1
    forward_cancel: Callable[[int, int, int], None] | None = None
    # Each source's health (gateway.state.health): up, or down since when and why.
    health: HealthBoard = field(default_factory=HealthBoard)
    # /metrics and the status page (gateway.server.http): counts, and the last slow or
    # failed statements. The listener hands the executor the same Metrics.
    metrics: Metrics = field(default_factory=Metrics)
    recent: RecentStatements = field(default_factory=RecentStatements)
    # The engine's memory shared out to statements (gateway.state.memory); the listener
    # hands the executor the same pool. None: nothing is counted (a unit test's context).
    memory: EngineMemory | None = None
    # The relay's links to each PostgreSQL source, per (source, read-only login), shared by
    # this worker's sessions (gateway.relay.pool.LinkPool).
    pools: dict[tuple[str, bool], Any] = field(default_factory=dict)

    async def refresh_catalog(self, min_interval_s: float = 1.0) -> bool:
        """Re-read every source's tables; any change becomes a new catalog version (which
        also retires cached plans). At most one refresh per `min_interval_s`: the periodic
        refresh's pace, never what answers a statement (`refresh_if_stale`,
        `recheck_missing` are not rate-limited)."""
        async with self._refresh_lock:
            if time.monotonic() - self._refreshed < min_interval_s:
                return False
            return await self._read_sources()

    async def refresh_if_stale(self) -> None:
        """DDL ran through this worker or another one: read the catalog again before
        planning. A session that finds a read already under way waits for it."""
        if self.catalog_stale:
            await self._read_after(self._reads_started)

    async def recheck_missing(self) -> bool:
        """A statement named a table the catalog lacks: read the sources again before
        answering 42P01 (it may have been created since, here, through another worker or
        in the source itself). Not rate-limited: misses that arrive while a read is under
        way share the next read that starts after them, so a burst of misses costs one
        read at a time, never a wrong answer. True when the catalog changed."""
        version = self.catalog.version
        await self._read_after(self._reads_started)
        return self.catalog.version != version

    async def catalog_changed(self) -> None:
        """DDL through this worker is visible to other connections now: this worker reads
        the catalog again before its next plan, and every other worker is told (and has
        been, when this returns, so the client's next statement finds the change wherever
        it runs)."""
        self.note_catalog_change()
        if self.announce_catalog_change is not None:
            await self.announce_catalog_change()

    def note_catalog_change(self) -> None:
        """DDL ran (here, or announced by another worker): statements described before
        are not reused, and the catalog is read again before the next plan."""
        self.catalog_stale = True
        self.schema_epoch += 1

    async def _read_after(self, mark: int) -> None:
        """Make sure a read of the sources that started after read number `mark` has
        finished (reads are numbered as they start; one runs at a time)."""
        async with self._refresh_lock:
            if self._reads_started > mark:
                return  # one started after the caller's mark and, as we hold the lock, ended
            await self._read_sources()

    async def _read_sources(self) -> bool:
        """Under `_refresh_lock`: read every source's tables; a change is a new version."""
        self._reads_started += 1
        # Cleared before reading: a change announced from now on is read again next time.
        self.catalog_stale = False
        self._refreshed = time.monotonic()
        # Each source is read on its own (together, so a slow one delays no other);
        # a source that fails is marked down and keeps what we knew of it.
        names = [name for name in self.sources if name not in self.system_schemas]
        read = await asyncio.gather(*(self.health.read_tables(self.sources[name])
                                      for name in names))
        entries = {}
        for name, tables in zip(names, read):
            dialect = self.sources[name].dialect
            if tables is None:
                entries[name] = self.catalog.sources.get(name) or SourceEntry(name, dialect, {})
            else:
                entries[name] = SourceEntry(name, dialect, {t.ref.name: t for t in tables})
        reshaped = self._shapes(entries) != self._shapes(self.catalog.sources)
        # New estimates alone (ANALYZE ran, rows came and went) make a new version too: the
        # cached plans were decided on the old ones (planner.selectivity). Statements the
        # links prepared on the sources stay valid: their tables kept their shapes.
        if not reshaped and self._estimates(entries) == self._estimates(self.catalog.sources):
            return False
        snapshot = replace(self.catalog, version=self.catalog.version + 1, sources=entries)
        if self.remount is not None:
            snapshot = await self.remount(snapshot)
        self.catalog = snapshot
        if reshaped:
            self.schema_epoch += 1
        log.info("catalog refreshed: version %d", snapshot.version)
        return True

    def offer_missing(self, missing: PgError, search_path: Sequence[str]) -> None:
        """A relation not found may be one a source makes when asked (a Delta table's
        older version): tell those sources, so that the read `recheck_missing` starts
        next lists it."""
        if not isinstance(missing, UndefinedRelation):
            return
        for name in [missing.schema] if missing.schema else search_path:
            source = self.sources.get(name)
            if isinstance(source, OnDemandTables):
                source.wants_table(missing.name)

    def unavailable_instead(self, missing: PgError, search_path: Sequence[str]) -> PgError:
        """A relation not found (42P01) that may live in a source which is down: say the
        source is unavailable rather than that the relation does not exist. Qualified
        (`pg.t`): when its source is down. Unqualified: when no source that answered has
        it and a source on the search path is down (the first such one is named)."""
        if not isinstance(missing, UndefinedRelation):
            return missing  # not a name the catalog lacks (an engine's own 42P01)
        schema = missing.schema
        for name in [schema] if schema else search_path:
            health = self.health.get(name)
            if health is not None and health.down:
                shown = f"{schema}.{missing.name}" if schema else missing.name
                return source_unavailable(
                    name, health.last_error or "down",
                    detail=f'relation "{shown}" was not found; source "{name}" may have it, '
                           f"but has been down since {health.since.isoformat(timespec='seconds')}")
        return missing

    def _shapes(self, sources: Mapping[str, SourceEntry]) -> dict:
        """Each user source's tables and their schemas: what a refresh compares."""
        return {name: {table: info.schema for table, info in entry.tables.items()}
                for name, entry in sources.items() if name not in self.system_schemas}

    def _estimates(self, sources: Mapping[str, SourceEntry]) -> dict:
        """Each user source's row estimates and column statistics, per table."""
        return {name: {table: (info.row_estimate, info.column_stats) for table, info in entry.tables.items()}
                for name, entry in sources.items() if name not in self.system_schemas}

    def as_worker(self, index: int, count: int,
                  forward_cancel: Callable[[int, int, int], None]) -> None:
        self.worker_index, self.worker_count, self.forward_cancel = index, count, forward_cancel
        # Start where a restarted worker is unlikely to reuse its predecessor's pids; the
        # product stays below 2**31 (pids are int4 on the wire and in pg_backend_pid()).
        self._pids = itertools.count(os.getpid() * 1000 % (2**30 // count) + 1)

    def next_pid(self) -> int:
        return next(self._pids) * self.worker_count + self.worker_index

    def cancel(self, pid: int, key: int) -> None:
        owner = pid % self.worker_count
        if owner != self.worker_index:
            if self.forward_cancel is not None:
                self.forward_cancel(owner, pid, key)
            return
        session = self.sessions.get(pid)
        # Compare keys in constant time: the key is the only secret a cancel carries.
        if session is not None and hmac.compare_digest(session.key.to_bytes(4, "big"),
                                                       (key & 0xFFFFFFFF).to_bytes(4, "big")):
            session.cancel()

    async def close(self) -> None:
        for pool in self.pools.values():
            for link in pool.free:
                link.close()
            pool.free.clear()
        for source in self.sources.values():
            await source.close()
        for engine in self.executor.engines.values():
            await engine.close()

