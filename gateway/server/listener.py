"""The gateway process: opens the sources, builds the catalog, accepts connections.

`ServerContext` is what every session shares: configuration, the catalog snapshot, the
plan cache, the executor, and the registry of sessions that CancelRequest looks in. With
`[server] workers` above 1, `run` hands over to the supervisor in gateway/server/workers.py and
each worker process runs `serve` with its own context.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import duckdb

from connectors.base import Source
from connectors.duckdb.source import DuckDBSource
from connectors.engines.duckdb import DuckDBEngine
from connectors.engines.spark import SparkEngine
from gateway.config import Config, ConfigError, SourceConfig, demo_path, listen_error, source_path
from gateway.server.connection import Connection
from pgwire.errors import PgError
from gateway.executor.execute import Executor
from gateway.pg_catalog.mount import CATALOG_FUNCTIONS, SYSTEM_SCHEMAS, with_catalog
from gateway.pg_catalog.mount import mount as mount_catalog
from gateway.pg_catalog.source import CatalogSource
from gateway.relay.routing import Router
from gateway.session.settings import VERSION_STRING
from planner import CatalogSnapshot, PlanCache, SourceEntry

if TYPE_CHECKING:
    from gateway.session.session import Session
    from gateway.server.worker_listen import BalancedListener
    from gateway.server.workers import WorkerSpec

log = logging.getLogger("fedgate")


@dataclass
class ServerContext:
    config: Config
    sources: dict[str, Source]
    catalog: CatalogSnapshot
    executor: Executor
    plans: PlanCache = field(default_factory=PlanCache)
    sessions: dict[int, Session] = field(default_factory=dict)
    version_string: str = VERSION_STRING
    catalog_source: CatalogSource | None = None
    _pids: itertools.count = field(default_factory=lambda: itertools.count(os.getpid() * 1000 % 2**30 + 1))
    _refreshed: float = field(default_factory=time.monotonic)
    _refresh_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    router: Router = field(init=False)
    # DDL went to a source: read the catalog again before the next statement needs it.
    catalog_stale: bool = False
    # Several workers: backend pids encode the worker (pid % worker_count == worker_index),
    # and a CancelRequest for another worker's pid goes to `forward_cancel(owner, pid, key)`.
    worker_index: int = 0
    worker_count: int = 1
    forward_cancel: Callable[[int, int, int], None] | None = None

    def __post_init__(self) -> None:
        self.router = Router(self)

    async def refresh_catalog(self, min_interval_s: float = 1.0) -> bool:
        """Re-read every source's tables; any change becomes a new catalog version (which
        also retires cached plans). At most one refresh per `min_interval_s`."""
        async with self._refresh_lock:
            if time.monotonic() - self._refreshed < min_interval_s:
                return False
            self._refreshed = time.monotonic()
            entries = {}
            for name, source in self.sources.items():
                if name in SYSTEM_SCHEMAS:
                    continue
                tables = await _tables_or_none(source)
                if tables is None:  # unreachable now: keep what we knew of it
                    previous = self.catalog.sources.get(name)
                    entries[name] = previous or SourceEntry(name, source.dialect, {})
                    continue
                entries[name] = SourceEntry(name, source.dialect, {t.ref.name: t for t in tables})
            if _shapes(entries) == _shapes(self.catalog.sources):
                return False
            snapshot = replace(self.catalog, version=self.catalog.version + 1, sources=entries)
            if self.catalog_source is not None:
                snapshot = await with_catalog(snapshot, self.catalog_source)
            self.catalog = snapshot
            log.info("catalog refreshed: version %d", snapshot.version)
            return True

    async def refresh_if_stale(self) -> None:
        if self.catalog_stale:
            self.catalog_stale = False
            await self.refresh_catalog(min_interval_s=0.0)

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
        for source in self.sources.values():
            await source.close()
        for engine in self.executor.engines.values():
            await engine.close()


def _shapes(sources: Mapping[str, SourceEntry]) -> dict:
    """Each user source's tables and their schemas: what a refresh compares."""
    return {name: {table: info.schema for table, info in entry.tables.items()}
            for name, entry in sources.items() if name not in SYSTEM_SCHEMAS}


async def _tables_or_none(source: Source) -> list | None:
    try:
        return await source.tables()
    except PgError as err:
        if not err.sqlstate.startswith(("08", "58", "57P")):
            raise
        log.warning("source %s is unreachable (%s %s); it has no tables until it answers",
                    source.name, err.sqlstate, err.message)
        return None


def open_source(config: Config, name: str, kind: str, options: dict) -> Source:
    """Create the source of one `[sources.<name>]` table (DESIGN.md §10); a file that
    cannot be opened is a ConfigError naming the source."""
    try:
        return _open_source(config, name, kind, options)
    except ConfigError:
        raise
    except (OSError, ValueError, duckdb.Error) as exc:
        what = "[demo] path" if options.get("demo") else f"[sources.{name}]"
        raise ConfigError(f"{what}: cannot open the {kind} source: {exc}", config.file) from exc


def _open_source(config: Config, name: str, kind: str, options: dict) -> Source:
    source_config = SourceConfig(name, kind, options)

    def path_option(key: str = "path", required: bool = True) -> str | None:
        path = source_path(config, source_config, key)
        if path is None and required:
            raise ConfigError(f"[sources.{name}] needs {key}", config.file)
        return path

    def dsn_option() -> str:
        if not isinstance(options.get("dsn"), str):
            raise ConfigError(f"[sources.{name}] needs dsn", config.file)
        return options["dsn"]

    if kind == "duckdb":
        if options.get("demo"):
            from gateway.server.demo import ensure_demo  # generating data is only the demo's job
            ensure_demo(demo_path(config.demo), config.demo.scale, progress=True)
        return DuckDBSource(name, path_option(), schema=options.get("schema", "main"),
                            statement_log=path_option("statement_log", required=False))
    # Driver imports stay inside their branch: a gateway without MySQL sources does not
    # need the MySQL driver to start.
    if kind == "postgres":
        from connectors.postgres.source import PostgresSource
        return PostgresSource(name, dsn_option(), schema=options.get("schema", "public"),
                              pool_size=int(options.get("pool_size", 10)))
    if kind == "mysql":
        from connectors.mysql.source import MySQLSource
        return MySQLSource(name, dsn_option(), pool_size=int(options.get("pool_size", 10)))
    if kind == "sqlite":
        from connectors.sqlite.source import SQLiteSource
        return SQLiteSource(name, path_option(),
                            statement_log=path_option("statement_log", required=False))
    if kind in ("parquet", "csv"):
        from connectors.files.source import FilesSource
        return FilesSource(name, path_option(), file_format=kind,
                           statement_log=path_option("statement_log", required=False))
    raise ConfigError(f"[sources.{name}] kind {kind!r} is not supported")


async def build_context(config: Config) -> ServerContext:
    sources: dict[str, Source] = {}
    entries = {}
    for source_config in config.sources:
        source = await asyncio.to_thread(open_source, config, source_config.name,
                                         source_config.kind, source_config.options)
        sources[source.name] = source
        # A source that cannot be reached does not keep the others from being served: its
        # tables appear once a catalog refresh reaches it. Any other error stops the start,
        # naming the source to fix.
        try:
            tables = await _tables_or_none(source) or []
        except PgError as err:
            await source.close()
            raise ConfigError(f"[sources.{source.name}]: cannot read its tables: {err.sqlstate} "
                              f"{err.message}", config.file) from err
        entries[source.name] = SourceEntry(source.name, source.dialect,
                                           {t.ref.name: t for t in tables})
    # The emulated pg_catalog / information_schema: one more source, two schemas.
    sessions: dict[int, Session] = {}
    catalog_source = await mount_catalog(config.server.database, sources, entries, lambda: sessions)
    engines = {"duckdb": DuckDBEngine(),
               "spark": SparkEngine.from_config(config)}
    # The planner writes residuals in the first engine's dialect, DuckDB's (whichever
    # engine is the default), and renders them for the other when a query runs there.
    catalog = CatalogSnapshot(version=1, sources=entries,
                              engine_dialects=tuple(e.dialect for e in engines.values()),
                              catalog_functions=CATALOG_FUNCTIONS)
    return ServerContext(config, sources, catalog,
                         Executor(sources, engines, config.engine.default), sessions=sessions,
                         catalog_source=catalog_source)


async def serve(config: Config, worker: WorkerSpec | None = None,
                on_ready: Callable[[], None] | None = None) -> None:
    """Serve until SIGINT/SIGTERM: alone, or as one of several workers (`worker`)."""
    ctx = await build_context(config)
    connections: set[asyncio.Task] = set()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        try:
            await Connection(ctx, reader, writer).run()
        finally:
            connections.discard(task)

    cancels: asyncio.Server | None = None
    server: asyncio.Server | BalancedListener
    if worker is None:
        try:
            server = await asyncio.start_server(accept, config.server.host, config.server.port)
        except OSError as exc:
            await ctx.close()
            raise listen_error(config, exc) from exc
    else:
        from gateway.server import workers
        ctx.as_worker(worker.index, worker.count, workers.CancelForwarder(worker))
        cancels = await workers.serve_cancels(ctx, worker)
        server = await workers.listen(worker, accept)
    refresher = asyncio.ensure_future(_refresh_periodically(ctx, config.catalog_refresh_s))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    tables = sum(len(e.tables) for e in ctx.catalog.sources.values())
    log.info("fedgate listening on %s:%d (database %s; sources: %s; %d tables)",
             config.server.host, config.server.port, config.server.database,
             ", ".join(ctx.sources), tables)
    if on_ready is not None:
        on_ready()
    async with server:
        await stop.wait()
        log.info("shutting down")
        server.close()
        if cancels is not None:
            cancels.close()
        refresher.cancel()
        for task in list(connections):
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)
    await ctx.close()


async def _refresh_periodically(ctx: ServerContext, every_s: float) -> None:
    """Pick up tables created or changed in the sources while the gateway runs."""
    while every_s > 0:
        await asyncio.sleep(every_s)
        try:
            await ctx.refresh_catalog()
        except Exception:  # a source that is down now is tried again next round
            log.exception("catalog refresh failed")


def run(config: Config) -> int:
    """`fedgate serve`: one process, or a supervisor of `[server] workers` processes."""
    if config.server.workers > 1:
        from gateway.server.workers import supervise
        return supervise(config)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run_loop(serve(config))
    return 0


def run_loop(main: Coroutine[object, object, None]) -> None:
    try:
        import uvloop  # the faster event loop, when installed
        loop_factory = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main)
