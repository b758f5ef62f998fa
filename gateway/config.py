"""The gateway's TOML configuration, parsed into frozen dataclasses.

With no file (or a file without `[sources]`) the gateway serves the embedded demo: one
DuckDB source named `demo` holding the TPC-H tables, generated on first run.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DEMO_SOURCE = "demo"
AUTH_METHODS = ("trust", "password", "md5", "scram-sha-256")
SOURCE_KINDS = ("duckdb", "postgres", "mysql", "sqlite", "parquet", "csv")


class ConfigError(ValueError):
    """The configuration cannot be used; the message says which key and why."""


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 15432
    database: str = "fedgate"
    tls_cert: str | None = None
    tls_key: str | None = None
    max_connections: int = 500
    statement_timeout_ms: int = 0
    metrics_port: int | None = None
    # Used for every configured user unless the user names its own method.
    auth_method: str = "scram-sha-256"
    # Frontend messages other than startup are capped here (PostgreSQL allows up to 1 GB).
    max_message_bytes: int = 256 * 1024 * 1024
    # Worker processes sharing the port (each with its own sources, catalog and plan
    # cache); 0 or "auto" means one per CPU. Parsed into an int >= 1.
    workers: int | str = 1


@dataclass(frozen=True)
class EngineConfig:
    default: str = "duckdb"
    spark_master: str = "local[*]"
    spark_remote: str | None = None
    # A federated query whose fragments are estimated to send more rows than this runs on
    # Spark unless the session chose an engine; 0 turns the automatic choice off.
    spark_threshold_rows: int = 0
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


@dataclass(frozen=True)
class UserConfig:
    name: str
    password: str | None = None  # plain text, "md5<hex>" or "SCRAM-SHA-256$..."
    sources: tuple[str, ...] = ()
    auth_method: str | None = None


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
    base_dir: Path = Path(".")
    catalog_refresh_s: float = 60.0  # [catalog] refresh_seconds; 0 turns the periodic refresh off

    @property
    def uses_demo(self) -> bool:
        return any(s.name == DEMO_SOURCE and s.options.get("demo") for s in self.sources)

    def user(self, name: str) -> UserConfig | None:
        return next((u for u in self.users if u.name == name), None)


def demo_path(demo: DemoConfig) -> Path:
    if demo.path:
        return Path(demo.path).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fedgate"
    return cache / f"demo-tpch-sf{demo.scale:g}.duckdb"


def _section(data: dict[str, Any], key: str, cls: type, where: str) -> Any:
    raw = data.get(key, {})
    if not isinstance(raw, dict):
        raise ConfigError(f"[{where}] must be a table")
    known = set(cls.__dataclass_fields__)
    unknown = set(raw) - known
    if unknown:
        raise ConfigError(f"unknown key(s) in [{where}]: {', '.join(sorted(unknown))}")
    try:
        return cls(**raw)
    except TypeError as exc:
        raise ConfigError(f"[{where}]: {exc}") from exc


MAX_WORKERS = 64


def _workers(value: Any) -> int:
    """`[server] workers`: a count, or 0 / "auto" for one worker per CPU."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if value == "auto" or (is_int and value == 0):
        # The CPUs this process may run on (a container's cpuset), not the machine's.
        if hasattr(os, "sched_getaffinity"):
            return min(len(os.sched_getaffinity(0)), MAX_WORKERS)
        return min(os.cpu_count() or 1, MAX_WORKERS)
    if not is_int or not 0 < value <= MAX_WORKERS:
        raise ConfigError(f'[server] workers must be "auto" or a number from 0 to {MAX_WORKERS}')
    return value


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_config(data: dict[str, Any], base_dir: Path = Path(".")) -> Config:
    unknown = set(data) - {"server", "engine", "catalog", "users", "sources", "demo"}
    if unknown:
        raise ConfigError(f"unknown section(s): {', '.join(sorted(unknown))}")
    server = _section(data, "server", ServerConfig, "server")
    engine = _section(data, "engine", EngineConfig, "engine")
    demo = _section(data, "demo", DemoConfig, "demo")
    if engine.default not in ("duckdb", "spark"):
        raise ConfigError('[engine] default must be "duckdb" or "spark"')
    if engine.spark_reads_sources not in ("auto", "always", "never"):
        raise ConfigError('[engine] spark_reads_sources must be "auto", "always" or "never"')
    if not isinstance(engine.spark_conf, dict) or not all(
            isinstance(v, (str, int, float, bool)) for v in engine.spark_conf.values()):
        raise ConfigError("[engine] spark_conf must be a table of Spark settings")
    if engine.spark_connect_timeout_s <= 0 or engine.spark_job_timeout_s < 0 \
            or engine.spark_idle_stop_s < 0:
        raise ConfigError("[engine] spark_connect_timeout_s must be > 0, spark_job_timeout_s and "
                          "spark_idle_stop_s >= 0")
    if engine.spark_read_threshold_rows < 0 or engine.spark_partition_rows < 1:
        raise ConfigError("[engine] spark_read_threshold_rows must be >= 0 and "
                          "spark_partition_rows >= 1")
    if server.auth_method not in AUTH_METHODS:
        raise ConfigError(f"[server] auth_method must be one of {', '.join(AUTH_METHODS)}")
    server = replace(server, workers=_workers(server.workers))

    users = []
    for raw in data.get("users", []):
        if "name" not in raw:
            raise ConfigError("every [[users]] entry needs a name")
        if raw.get("password") is not None and not isinstance(raw["password"], str):
            raise ConfigError(f"user {raw['name']}: password must be a string")
        method = raw.get("auth_method")
        if method is not None and method not in AUTH_METHODS:
            raise ConfigError(f"user {raw['name']}: auth_method must be one of {', '.join(AUTH_METHODS)}")
        users.append(UserConfig(name=raw["name"], password=raw.get("password"),
                                sources=tuple(raw.get("sources", ())), auth_method=method))

    sources = []
    for name, raw in data.get("sources", {}).items():
        kind = raw.get("kind")
        if kind not in SOURCE_KINDS:
            raise ConfigError(f"[sources.{name}] kind must be one of {', '.join(SOURCE_KINDS)}")
        options = {k: v for k, v in raw.items() if k != "kind"}
        sources.append(SourceConfig(name=name, kind=kind, options=options))
    if not sources:
        sources.append(SourceConfig(DEMO_SOURCE, "duckdb", {"path": str(demo_path(demo)), "demo": True}))

    catalog = data.get("catalog", {})
    unknown_catalog = set(catalog) - {"search_path", "refresh_seconds"}
    if unknown_catalog:
        raise ConfigError(f"unknown key(s) in [catalog]: {', '.join(sorted(unknown_catalog))}")
    refresh_s = catalog.get("refresh_seconds", 60)
    if not isinstance(refresh_s, (int, float)) or refresh_s < 0:
        raise ConfigError("[catalog] refresh_seconds must be a number of seconds >= 0")
    search_path = tuple(catalog.get("search_path", [s.name for s in sources[:1]]))
    names = {s.name for s in sources}
    for schema in search_path:
        if schema not in names:
            raise ConfigError(f"[catalog] search_path names {schema!r}, which is not a source")

    if not is_loopback(server.host) and not users:
        raise ConfigError("a non-loopback [server] host requires [[users]] (trust is loopback-only)")
    return Config(server=server, engine=engine, search_path=search_path, users=tuple(users),
                  sources=tuple(sources), demo=demo, base_dir=base_dir,
                  catalog_refresh_s=float(refresh_s))


def load_config(path: str | os.PathLike[str] | None = None, **server_overrides: Any) -> Config:
    """Read the TOML file at `path` (None: defaults) and apply `--host`/`--port`/`--workers`
    overrides."""
    data: dict[str, Any] = {}
    base_dir = Path(".")
    if path is not None:
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text())
        except FileNotFoundError as exc:
            raise ConfigError(f"config file not found: {p}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: {exc}") from exc
        base_dir = p.parent
    overrides = {k: v for k, v in server_overrides.items() if v is not None}
    if overrides:
        data = {**data, "server": {**data.get("server", {}), **overrides}}
    return parse_config(data, base_dir)


__all__ = ["Config", "ConfigError", "DemoConfig", "EngineConfig", "ServerConfig",
           "SourceConfig", "UserConfig", "demo_path", "is_loopback", "load_config",
           "parse_config", "replace"]
