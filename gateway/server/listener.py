"""The gateway process: opens the sources, builds the catalog, accepts connections.

`build_context` makes the `ServerContext` every session shares (gateway.state.context):
configuration, the catalog snapshot, the plan cache, the executor and router, and the
registry of sessions that CancelRequest looks in. With `[server] workers` above 1, `run`
hands over to the supervisor in gateway/server/workers.py, which starts each worker
process with `serve` (passed to it) and its own context.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
import tempfile
from collections.abc import Callable

import duckdb

from connectors.base import Source
from connectors.duckdb.runner import DuckDBLimits, limit_every_database
from connectors.duckdb.source import DuckDBSource
from connectors.engines.duckdb import DuckDBEngine
from connectors.engines.spark import SparkEngine
from connectors.files.object_store import S3Location
from gateway.config import (Config, ConfigError, SourceConfig, connect_command, demo_path,
                            listen_error, server_tls, source_path)
from gateway.config.object_store import CREDENTIALS, is_url, secret
from gateway.config.memory import memory_limit_bytes, parse_size, share_bytes, shown_bytes
from gateway.executor.execute import Executor
from gateway.pg_catalog.mount import CATALOG_FUNCTIONS, SYSTEM_SCHEMAS, with_catalog
from gateway.pg_catalog.mount import mount as mount_catalog
from gateway.relay.routing import Router
from gateway.server import workers
from gateway.server.connection import Connection, too_many_clients
from gateway.server.http.site import serve_http
from gateway.server.limits import Gate
from gateway.server.loop import run_loop
from gateway.server.shutdown import drain
from gateway.server.worker_listen import BalancedListener, WorkerSpec
from gateway.state.context import CancelTarget, ServerContext
from gateway.state import logs
from gateway.state.health import HealthBoard
from gateway.state.memory import EngineMemory, duckdb_share
from gateway.state.metrics import Metrics
from pgwire.errors import PgError
from pgwire.protocol import encoder
from pgwire.protocol.client import ROW_WALK
from gateway.relay.express.text_split import SPLIT_BUILD
from gateway.relay.express.memory import REPEATS
from planner import CatalogSnapshot, SourceEntry

log = logging.getLogger("fedgate")

# Sources behind a network connection: one that cannot be read at start-up is mounted
# down instead of stopping the gateway.
REMOTE_KINDS = ("postgres", "mysql")


def open_source(config: Config, name: str, kind: str, options: dict) -> Source:
    """Create the source of one `[sources.<name>]` table (docs/design.md §10); a file that
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
    if kind in ("parquet", "csv", "delta"):
        path = path_option()
        assert path is not None
        location = _object_store(config, name, options) if is_url(path) else None
        log_path = path_option("statement_log", required=False)
        if kind == "delta":
            from connectors.delta.source import DeltaSource
            return DeltaSource(name, location if location is not None else path,
                               statement_log=log_path)
        if location is not None:
            from connectors.files.object_source import ObjectStoreSource
            return ObjectStoreSource(name, location, file_format=kind, statement_log=log_path)
        from connectors.files.source import FilesSource
        return FilesSource(name, path, file_format=kind, statement_log=log_path)
    if kind == "iceberg":
        from connectors.iceberg.source import IcebergSource
        return IcebergSource(name, _catalog_uri(config, options["catalog_uri"]),
                             options["namespace"], catalog_name=options.get("catalog_name"),
                             warehouse=options.get("warehouse"),
                             statement_log=path_option("statement_log", required=False))
    raise ConfigError(f"[sources.{name}] kind {kind!r} is not supported")


def _object_store(config: Config, name: str, options: dict) -> S3Location:
    """The s3:// location of a file source, its secrets read from where they are kept."""
    where = f"[sources.{name}]"
    try:
        secrets = {key: secret(where, key, options[key], config.base_dir)
                   for key in CREDENTIALS if key in options}
    except ConfigError as exc:
        exc.file = config.file
        raise
    return S3Location.parse(options["path"], endpoint=options.get("endpoint"),
                            region=options.get("region"), **secrets)


def _catalog_uri(config: Config, uri: str) -> str:
    """An Iceberg catalog's SQLAlchemy URL; a SQLite file's relative path is relative to
    the configuration file's folder, as every path is."""
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri[len(prefix):].startswith("/"):
        return prefix + str((config.base_dir / uri[len(prefix):]).resolve())
    return uri


def is_remote(source_config: SourceConfig) -> bool:
    """Whether the source is behind a network connection: one that cannot be read at
    start-up is mounted down instead of stopping the gateway."""
    path = source_config.options.get("path")
    # An Iceberg catalog is a database, often a server's: a catalog that cannot be read
    # mounts the source down too.
    return source_config.kind in (*REMOTE_KINDS, "iceberg") or (isinstance(path, str)
                                                                  and is_url(path))


def engine_memory(config: Config) -> EngineMemory:
    """The process's engine memory pool, and every DuckDB it opens from now on limited to
    it, spilling into a folder of its own inside `[engine] temp_directory`."""
    engine = config.engine
    assert isinstance(config.server.workers, int)
    limit = memory_limit_bytes(engine.memory_limit, config.server.workers)
    spill_max = parse_size(engine.temp_directory_max_size) if engine.temp_directory_max_size else None
    limit_every_database(DuckDBLimits(duckdb_share(limit), engine.temp_directory or tempfile.gettempdir(),
                                      spill_max))
    share = share_bytes(engine.statement_memory, limit)
    log.info("engine memory: memory_limit %s, statement_memory %s (%s), spilling into %s",
             shown_bytes(limit), engine.statement_memory, shown_bytes(share or limit),
             engine.temp_directory or tempfile.gettempdir())
    return EngineMemory(limit, engine.memory_wait_s, share)


async def build_context(config: Config) -> ServerContext:
    sources: dict[str, Source] = {}
    entries = {}
    health = HealthBoard()
    memory = engine_memory(config)
    for source_config in config.sources:
        source = await asyncio.to_thread(open_source, config, source_config.name,
                                         source_config.kind, source_config.options)
        sources[source.name] = source
        # A server that cannot be read now, for whatever reason (down, a wrong password
        # or role in its dsn), does not keep the others from being served: it is mounted
        # down, its tables unknown until a refresh reaches it (gateway.state.health). A
        # local file that cannot be read is the operator's to fix: the start stops,
        # naming the source.
        if is_remote(source_config):
            tables = await health.read_tables(source) or []
        else:
            try:
                tables = await source.tables()
            except PgError as err:
                await source.close()
                raise ConfigError(f"[sources.{source.name}]: cannot read its tables: "
                                  f"{err.sqlstate} {err.message}", config.file) from err
            health.mark_up(source.name)
        entries[source.name] = SourceEntry(source.name, source.dialect,
                                           {t.ref.name: t for t in tables})
    # The emulated pg_catalog / information_schema: one more source, two schemas.
    sessions: dict[int, CancelTarget] = {}
    catalog_source = await mount_catalog(config.server.database, sources, entries, lambda: sessions)
    duckdb_engine = DuckDBEngine()
    memory.engine = duckdb_engine
    engines = {"duckdb": duckdb_engine,
               "spark": SparkEngine.from_config(config)}
    # The planner writes residuals in the first engine's dialect, DuckDB's (whichever
    # engine is the default), and renders them for the other when a query runs there.
    catalog = CatalogSnapshot(version=1, sources=entries,
                              engine_dialects=tuple(e.dialect for e in engines.values()),
                              catalog_functions=CATALOG_FUNCTIONS)
    metrics = Metrics()
    ctx = ServerContext(config, sources, catalog,
                        Executor(sources, engines, config.engine.default, metrics, memory),
                        sessions=sessions, metrics=metrics, memory=memory,
                        system_schemas=frozenset(SYSTEM_SCHEMAS),
                        remount=functools.partial(with_catalog, catalog=catalog_source),
                        health=health)
    ctx.router = Router(ctx)
    return ctx


async def serve(config: Config, worker: WorkerSpec | None = None,
                on_ready: Callable[[], None] | None = None) -> None:
    """Serve until SIGINT/SIGTERM: alone, or as one of several workers (`worker`)."""
    tls = server_tls(config)  # each worker loads its own: a context cannot be pickled
    if worker is None or worker.index == 0:
        # Which build of the compiled modules runs (pgwire.compiled): interpreted, relayed
        # results and the express lane answer the same, at more CPU per row and statement.
        for what, build in (("relayed results: the row walk is", ROW_WALK),
                            ("express lane: the answer walk is", ROW_WALK),
                            ("express lane: the Query split is", SPLIT_BUILD),
                            ("express lane: the repeats are", REPEATS)):
            if build == "compiled":
                log.info("%s %s", what, build)
            else:
                log.warning("%s %s", what, build)
    ctx = await build_context(config)
    gate = Gate.of(config.server)
    refusal = encoder.error_from(too_many_clients())

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Counted before the first await: concurrent connects cannot overshoot a limit.
        ticket = None if gate.draining else gate.admission.arrive()
        if ticket is None:  # too many sockets in their startup already: no reading, no task
            writer.write(refusal)
            writer.close()
            return
        await Connection(ctx, reader, writer, gate, ticket, tls).run()

    cancels: asyncio.Server | None = None
    server: asyncio.Server | BalancedListener
    if worker is None:
        try:
            server = await asyncio.start_server(accept, config.server.host, config.server.port)
        except OSError as exc:
            await ctx.close()
            raise listen_error(config, exc) from exc
    else:
        ctx.as_worker(worker.index, worker.count, workers.CancelForwarder(worker))
        ctx.announce_catalog_change = workers.CatalogAnnouncer(worker)
        cancels = await workers.serve_peers(ctx, worker)
        server = await workers.listen(worker, accept)
    try:
        # With TLS configured the HTTP port serves HTTPS with the certificate loaded at start.
        http = (await serve_http(ctx, tls.context if tls is not None else None)
                if config.server.http_port else None)
    except ConfigError:
        server.close()
        if cancels is not None:
            cancels.close()
        await ctx.close()
        raise
    refresher = asyncio.ensure_future(_refresh_periodically(ctx, config.catalog_refresh_s))
    stop, now = asyncio.Event(), asyncio.Event()

    def on_signal() -> None:  # the first asks for a graceful shutdown, the second for now
        (now if stop.is_set() else stop).set()

    loop = asyncio.get_running_loop()
    # A worker's signals come from its supervisor, which forwards SIGTERM; a terminal's
    # Ctrl-C reaches every process of the group and is the supervisor's to count.
    for sig in (signal.SIGTERM,) if worker is not None else (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    # SIGHUP re-reads the TLS certificate and key (workers: sent by the supervisor); without
    # TLS there is nothing to re-read, and a reload signal must not end the process.
    loop.add_signal_handler(signal.SIGHUP, tls.reload if tls is not None else _nothing_to_reload)
    tables = sum(len(e.tables) for e in ctx.catalog.sources.values())
    log.info("fedgate listening on %s:%d (database %s; sources: %s; %d tables)%s",
             config.server.host, config.server.port, config.server.database,
             ", ".join(ctx.sources), tables,
             "" if worker is not None else f"; connect with: {connect_command(config)}")
    if on_ready is not None:
        on_ready()
    async with server:
        await stop.wait()
        log.info("shutting down")
        server.close()  # no new connections from now on
        if cancels is not None:
            cancels.close()
        refresher.cancel()
        if http is not None:
            http[0].close()
            http[1].cancel()
        await drain(gate, config.server.shutdown_timeout_s, now)
        await asyncio.gather(refresher, return_exceptions=True)
    await ctx.close()
    log.info("shut down")


def _nothing_to_reload() -> None:
    log.info("SIGHUP: nothing to re-read (only [server] tls_cert and tls_key are re-read)")


async def _refresh_periodically(ctx: ServerContext, every_s: float) -> None:
    """Pick up tables created or changed in the sources while the gateway runs."""
    while every_s > 0:
        await asyncio.sleep(every_s)
        try:
            await ctx.refresh_catalog()
        except Exception:  # sources' failures stay in ctx.health: this is a bug of ours
            log.exception("catalog refresh failed")


def run(config: Config) -> int:
    """`fedgate serve`: one process, or a supervisor of `[server] workers` processes."""
    if config.server.workers > 1:
        return workers.supervise(config, serve)
    logs.configure(config.server.log_format)
    run_loop(serve(config))
    return 0
