"""The gateway process: opens the sources, builds the catalog, accepts connections.

`ServerContext` is what every session shares: configuration, the catalog snapshot, the
plan cache, the executor, and the registry of sessions that CancelRequest looks in.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from connectors.base import Source
from connectors.duckdb_source import DuckDBSource
from connectors.engines.duckdb import DuckDBEngine
from connectors.engines.spark import SparkEngine
from gateway.config import Config, ConfigError, demo_path
from gateway.connection import Connection
from gateway.execute import Executor
from gateway.pg_catalog.mount import mount as mount_catalog
from gateway.settings import VERSION_STRING
from planner import CatalogSnapshot, PlanCache, SourceEntry

if TYPE_CHECKING:
    from gateway.session import Session

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
    _pids: itertools.count = field(default_factory=lambda: itertools.count(os.getpid() * 1000 % 2**30 + 1))

    def next_pid(self) -> int:
        return next(self._pids)

    def cancel(self, pid: int, key: int) -> None:
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


def open_source(config: Config, name: str, kind: str, options: dict) -> Source:
    """Create the source of one `[sources.<name>]` table (DESIGN.md §10)."""

    def path_option(key: str = "path", required: bool = True) -> str | None:
        value = options.get(key)
        if value is None:
            if required:
                raise ConfigError(f"[sources.{name}] needs {key}")
            return None
        return str(config.base_dir / value) if not os.path.isabs(value) else value

    def dsn_option() -> str:
        if not isinstance(options.get("dsn"), str):
            raise ConfigError(f"[sources.{name}] needs dsn")
        return options["dsn"]

    if kind == "duckdb":
        if options.get("demo"):
            from gateway.demo import ensure_demo  # generating data is only the demo's job
            ensure_demo(demo_path(config.demo), config.demo.scale, progress=True)
        return DuckDBSource(name, path_option(), schema=options.get("schema", "main"),
                            statement_log=path_option("statement_log", required=False))
    # Driver imports stay inside their branch: a gateway without MySQL sources does not
    # need the MySQL driver to start.
    if kind == "postgres":
        from connectors.postgres import PostgresSource
        return PostgresSource(name, dsn_option(), schema=options.get("schema", "public"),
                              pool_size=int(options.get("pool_size", 10)))
    if kind == "mysql":
        from connectors.mysql import MySQLSource
        return MySQLSource(name, dsn_option(), pool_size=int(options.get("pool_size", 10)))
    if kind == "sqlite":
        from connectors.sqlite import SQLiteSource
        return SQLiteSource(name, path_option(),
                            statement_log=path_option("statement_log", required=False))
    if kind in ("parquet", "csv"):
        from connectors.files import FilesSource
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
        tables = await source.tables()
        entries[source.name] = SourceEntry(source.name, source.dialect,
                                           {t.ref.name: t for t in tables})
    # The emulated pg_catalog / information_schema: one more source, two schemas.
    sessions: dict[int, Session] = {}
    await mount_catalog(config.server.database, sources, entries, lambda: sessions)
    catalog = CatalogSnapshot(version=1, sources=entries)
    engines = {"duckdb": DuckDBEngine(),
               "spark": SparkEngine(config.engine.spark_master, config.engine.spark_remote)}
    return ServerContext(config, sources, catalog,
                         Executor(sources, engines, config.engine.default), sessions=sessions)


async def serve(config: Config) -> None:
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

    server = await asyncio.start_server(accept, config.server.host, config.server.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    tables = sum(len(e.tables) for e in ctx.catalog.sources.values())
    log.info("fedgate listening on %s:%d (database %s; sources: %s; %d tables)",
             config.server.host, config.server.port, config.server.database,
             ", ".join(ctx.sources), tables)
    async with server:
        await stop.wait()
        log.info("shutting down")
        server.close()
        for task in list(connections):
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)
    await ctx.close()


def run(config: Config) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        import uvloop  # the faster event loop, when installed
        loop_factory = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(serve(config))
