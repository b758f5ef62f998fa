"""The gateway's configuration as frozen dataclasses: what `gateway.config.load_config`
returns after checking every key against `gateway.config.schema`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEMO_SOURCE = "demo"
DEFAULT_MAX_STARTUP = 1000  # the default max_startup_connections at most
# [engine] spark_threshold_rows when a cluster is configured (spark_remote, or a
# spark_master that is not local[...]) and the key is not written: a federated query
# estimated to send more rows than this into the engine runs on Spark. Measured by
# tests/bench/bench_crossover.py (BENCHMARKS.md, "Engine crossover: DuckDB or Spark by rows
# entering the engine"): on the 2-core machine DuckDB won at every size, Spark's handicap
# falling to under 2x from a million rows on; so the figure is where one statement's engine
# input costs the gateway about 1 GB of peak memory (about 100 bytes a row), rounded.
SPARK_CLUSTER_THRESHOLD_ROWS = 10_000_000


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 15432
    database: str = "fedgate"
    max_connections: int = 500
    statement_timeout_ms: int = 0
    # Used for every configured user unless the user names its own method.
    auth_method: str = "scram-sha-256"
    # Frontend messages other than startup are capped here (PostgreSQL allows up to 1 GB).
    max_message_bytes: int = 256 * 1024 * 1024
    # Large messages (over 4 MiB) being received at once, over all connections of a
    # process: beyond, their clients wait. At least max_message_bytes.
    max_inflight_message_bytes: int = 1024 * 1024 * 1024
    # Worker processes sharing the port (each with its own sources, catalog and plan
    # cache); 0 or "auto" means one per CPU. Parsed into an int >= 1.
    workers: int | str = 1
    # TLS for clients: the certificate chain and key (PEM; resolved against the config
    # file's folder) and "on" (offered: SSLRequest is answered S) or "require" (a plaintext
    # startup is refused). Both None: no TLS, SSLRequest is answered N.
    tls_cert: str | None = None
    tls_key: str | None = None
    tls: str | None = None
    # "text" (one line, with session= and statement= tags) or "json" (one object a line).
    log_format: str = "text"
    # Statements running at least this long are logged with their duration, as
    # PostgreSQL's log_min_duration_statement: -1 = none, 0 = all.
    log_min_duration_ms: int = -1
    # The HTTP side port (gateway/server/http/): 0 is off. With several workers, worker i
    # serves http_port + i (each its own metrics and sessions). http_host: None is `host`.
    http_port: int = 0
    http_host: str | None = None

    @property
    def http_bind_host(self) -> str:
        return self.http_host if self.http_host is not None else self.host
    # A socket that has not authenticated after this long is closed (PostgreSQL's
    # authentication_timeout).
    authentication_timeout_s: float = 60.0
    # Sockets in their startup/authentication at once; beyond, new ones are closed at
    # once. Default: 2 x max_connections, at most DEFAULT_MAX_STARTUP.
    max_startup_connections: int | None = None
    # A failed login is answered after this delay; max_auth_failures failures of one
    # (user, address) within auth_lockout_s lock that pair out for auth_lockout_s
    # (0 failures: no lockout).
    auth_failure_delay_ms: int = 500
    max_auth_failures: int = 10
    auth_lockout_s: float = 60.0
    # SIGTERM: running statements may finish for this long, then their sessions end.
    shutdown_timeout_s: float = 30.0

    @property
    def startup_limit(self) -> int:
        """max_startup_connections, or its default."""
        if self.max_startup_connections is not None:
            return self.max_startup_connections
        return min(2 * self.max_connections, DEFAULT_MAX_STARTUP)


@dataclass(frozen=True)
class EngineConfig:
    default: str = "duckdb"
    spark_master: str = "local[*]"
    spark_remote: str | None = None
    # A federated query whose fragments are estimated to send more rows than this runs on
    # Spark unless the session chose an engine; 0 turns the automatic choice off. Not
    # written: SPARK_CLUSTER_THRESHOLD_ROWS on a cluster, off on a local Spark
    # (`size_threshold`).
    spark_threshold_rows: int | None = None
    # A federated statement of one PostgreSQL source whose other tables are estimated at
    # no more rows than this runs whole on that source, those tables' rows sent with it
    # (planner.inline_sides); 0 turns it off (`SET fedgate.engine = source` still asks).
    inline_rows: int = 100
    # Which fragments Spark reads from their sources itself (JDBC, spark.read) instead of
    # receiving them from the gateway as Arrow: "auto" (those estimated at
    # spark_read_threshold_rows or more, PostgreSQL ones never on a local Spark; every one
    # it can on a cluster), "always", "never".
    spark_reads_sources: str = "auto"
    spark_read_threshold_rows: int = 1_000_000
    # A JDBC read is split on a numeric key into about this many rows per partition
    # (at most one partition per Spark core).
    spark_partition_rows: int = 500_000
    # More Spark settings for the session the gateway starts, e.g. {"spark.driver.memory" = "8g"}.
    spark_conf: dict[str, str] = field(default_factory=dict)
    # A master or Spark Connect server that cannot be reached within this many seconds
    # fails the statement with 08001 (the next statement tries again).
    spark_connect_timeout_s: float = 30.0
    # A Spark job still running after this many seconds is cancelled (57014), so a lost
    # worker cannot keep a statement waiting forever; 0 leaves only statement_timeout.
    spark_job_timeout_s: float = 3600.0
    # The Spark session (and the cluster cores it holds) is stopped after this many
    # seconds without Spark statements and started again on demand; 0 keeps it.
    spark_idle_stop_s: float = 600.0
    # A statement whose cluster looks lost (its master unreachable, or every executor the
    # application had gone) for this many seconds fails with 08006 and the session is
    # rebuilt on the next Spark statement (connectors.engines.spark_watch); 0: no watch.
    spark_stall_timeout_s: float = 60.0
    # Memory (gateway/config/memory.py): the DuckDB engine's memory_limit and the pool the
    # statements' shares come from (a size, or a share of the memory the process may use;
    # None: the default formula), per worker process; where DuckDB spills beyond it (a
    # folder of the process's own is made inside, and a move into Delta spills its rows
    # there; None: the system's temporary folder)
    # and how much it may write there (None: DuckDB's own limit, 90 % of the free disk);
    # each statement's default share (SET fedgate.statement_memory); how long a
    # statement waits for a share before 53200.
    memory_limit: str | None = None
    temp_directory: str | None = None
    temp_directory_max_size: str | None = None
    statement_memory: str = "25%"
    memory_wait_s: float = 30.0

    @property
    def on_cluster(self) -> bool:
        """Spark runs elsewhere: Spark Connect, or a master that is not `local[...]`."""
        return self.spark_remote is not None or not self.spark_master.startswith("local")

    @property
    def size_threshold(self) -> int:
        """The spark_threshold_rows in force (0: no automatic choice). On a local Spark the
        default is off: on the same cores DuckDB beat it on every federated TPC-H query
        (BENCHMARKS.md, "Federated TPC-H")."""
        if self.spark_threshold_rows is not None:
            return self.spark_threshold_rows
        return SPARK_CLUSTER_THRESHOLD_ROWS if self.on_cluster else 0


@dataclass(frozen=True)
class UserConfig:
    name: str
    password: str | None = None  # plain text, "md5<hex>" or "SCRAM-SHA-256$..."
    # The sources this user sees ("*": all of them); others are invisible to the user
    # (gateway.state.access).
    sources: tuple[str, ...] = ()
    auth_method: str | None = None
    read_only: bool = False  # every write refused with 25006
    admin: bool = False  # sees and may cancel/terminate every session
    # PostgreSQL source -> the role the user's statements run under there (SET ROLE).
    source_roles: dict[str, str] = field(default_factory=dict)
    # PostgreSQL source -> this user's pool_mode there, instead of the source's.
    pool_modes: dict[str, str] = field(default_factory=dict)

    @property
    def all_sources(self) -> bool:
        return "*" in self.sources


@dataclass(frozen=True)
class SourceConfig:
    name: str
    kind: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DemoConfig:
    scale: float = 0.2  # about 1.2M lineitem rows
    path: str | None = None  # the cached DuckDB file; default under the user cache dir


@dataclass(frozen=True)
class Config:
    server: ServerConfig = ServerConfig()
    engine: EngineConfig = EngineConfig()
    search_path: tuple[str, ...] = (DEMO_SOURCE,)
    users: tuple[UserConfig, ...] = ()
    sources: tuple[SourceConfig, ...] = ()
    demo: DemoConfig = DemoConfig()
    base_dir: Path = Path(".")  # relative paths in the file are relative to this folder
    file: Path | None = None  # the file read; error messages name it
    from_command_line: frozenset[str] = frozenset()  # [server] keys given as --host, --port ...
    catalog_refresh_s: float = 60.0  # [catalog] refresh_seconds; 0 turns the periodic refresh off

    @property
    def uses_demo(self) -> bool:
        return any(s.name == DEMO_SOURCE and s.options.get("demo") for s in self.sources)

    def user(self, name: str) -> UserConfig | None:
        return next((u for u in self.users if u.name == name), None)
