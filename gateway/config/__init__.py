"""The gateway's TOML configuration, checked key by key (gateway/config/schema.py) and
parsed into frozen dataclasses.

With no file (or a file without `[sources]`) the gateway serves the embedded demo: one
DuckDB source named `demo` holding the TPC-H tables, generated on first run.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import socket
import ssl
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gateway.config.schema import (AUTH_METHODS, CATALOG, DEMO, ENGINE, MAX_WORKERS, SERVER,
                                   SOURCE_KINDS, USER, ConfigError, check_source, check_table,
                                   check_top_level, check_value)
from gateway.config.tls import ServerTls

DEMO_SOURCE = "demo"
DEFAULT_MAX_STARTUP = 1000  # the default max_startup_connections at most


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


def demo_path(demo: DemoConfig) -> Path:
    if demo.path:
        return Path(demo.path).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fedgate"
    return cache / f"demo-tpch-sf{demo.scale:g}.duckdb"


def _resolve_workers(value: int | str) -> int:
    """`[server] workers` (already checked): 0 or "auto" mean one worker per CPU."""
    if value == "auto" or value == 0:
        # The CPUs this process may run on (a container's cpuset), not the machine's.
        if hasattr(os, "sched_getaffinity"):
            return min(len(os.sched_getaffinity(0)), MAX_WORKERS)
        return min(os.cpu_count() or 1, MAX_WORKERS)
    assert isinstance(value, int)
    return value


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _tls(raw_server: dict[str, Any], base_dir: Path) -> dict[str, str | None]:
    """`[server] tls_cert`, `tls_key` and `tls`, checked together; the files' paths made
    relative to the config file's folder (whether they load: gateway.config.tls)."""
    cert, key = raw_server.get("tls_cert"), raw_server.get("tls_key")
    if (cert is None) != (key is None):
        given, missing = ("tls_cert", "tls_key") if key is None else ("tls_key", "tls_cert")
        raise ConfigError(f"[server] {given} needs {missing} too (the certificate and its "
                          "private key, PEM files)")
    if cert is None:
        if "tls" in raw_server:
            raise ConfigError(f"[server] tls = {json.dumps(raw_server['tls'])} needs tls_cert "
                              "and tls_key (the certificate and its private key, PEM files)")
        return {}
    return {"tls_cert": str(base_dir / Path(cert).expanduser()),
            "tls_key": str(base_dir / Path(key).expanduser()),
            "tls": raw_server.get("tls", "on")}


def _users(data: dict[str, Any]) -> tuple[UserConfig, ...]:
    users: list[UserConfig] = []
    for number, raw in enumerate(data.get("users", []), 1):
        name = raw.get("name")
        where = f"[[users]] {json.dumps(name)}" if isinstance(name, str) else f"[[users]] #{number}"
        check_table(where, raw, USER)
        if any(user.name == name for user in users):
            raise ConfigError(f"{where} appears twice in [[users]]")
        users.append(UserConfig(name=name, password=raw.get("password"),
                                sources=tuple(raw["sources"]),
                                auth_method=raw.get("auth_method"),
                                read_only=raw.get("read_only", False),
                                admin=raw.get("admin", False),
                                source_roles=dict(raw.get("source_roles", {}))))
    return tuple(users)


def _check_user_sources(users: tuple[UserConfig, ...], sources: tuple[SourceConfig, ...]) -> None:
    """Each user's `sources` and `source_roles` name configured sources ("*" stands
    alone); a role is set on PostgreSQL sources only."""
    kinds = {s.name: s.kind for s in sources}
    for user in users:
        where = f"[[users]] {json.dumps(user.name)}"
        if "*" in user.sources and len(user.sources) > 1:
            raise ConfigError(f'{where} sources: "*" means every source; list nothing else with it')
        for name in user.sources:
            if name != "*" and name not in kinds:
                raise ConfigError(f"{where} sources names {name!r}, which is not a source "
                                  f"(the sources: {', '.join(sorted(kinds))})")
        for name in user.source_roles:
            if name not in kinds:
                raise ConfigError(f"{where} source_roles names {name!r}, which is not a source "
                                  f"(the sources: {', '.join(sorted(kinds))})")
            if kinds[name] != "postgres":
                raise ConfigError(f"{where} source_roles: {name!r} is a {kinds[name]} source; "
                                  "a role can be set on postgres sources only")


def _sources(data: dict[str, Any], demo: DemoConfig) -> tuple[SourceConfig, ...]:
    sources = []
    for name, raw in data.get("sources", {}).items():
        kind = check_source(name, raw)
        sources.append(SourceConfig(name=name, kind=kind,
                                    options={k: v for k, v in raw.items() if k != "kind"}))
    if sources and "demo" in data:
        raise ConfigError("[demo] is used only when no [sources] are configured; remove [demo]")
    if not sources:
        sources.append(SourceConfig(DEMO_SOURCE, "duckdb",
                                    {"path": str(demo_path(demo)), "demo": True}))
    return tuple(sources)


def parse_config(data: dict[str, Any], base_dir: Path = Path("."), file: Path | None = None,
                 from_command_line: frozenset[str] = frozenset()) -> Config:
    """The configuration of the parsed TOML `data`; relative paths are relative to
    `base_dir`. Every key is checked: an unknown key or a value of the wrong type is a
    ConfigError naming the section and the key (and `file`). `from_command_line`: the
    [server] keys that --host, --port ... set."""
    try:
        return _parse(data, base_dir, file, from_command_line)
    except ConfigError as exc:
        if exc.file is None and not exc.from_command_line:
            exc.file = file
        raise


def _parse(data: dict[str, Any], base_dir: Path, file: Path | None,
           from_command_line: frozenset[str]) -> Config:
    check_top_level(data)
    raw_server = check_table("[server]", data.get("server", {}), SERVER)
    raw_engine = check_table("[engine]", data.get("engine", {}), ENGINE)
    raw_catalog = check_table("[catalog]", data.get("catalog", {}), CATALOG)
    raw_demo = check_table("[demo]", data.get("demo", {}), DEMO)

    server = ServerConfig(**raw_server)
    server = replace(server, workers=_resolve_workers(server.workers), **_tls(raw_server, base_dir))
    if server.max_inflight_message_bytes < server.max_message_bytes:
        raise ConfigError(f"[server] max_inflight_message_bytes "
                          f"({server.max_inflight_message_bytes}) must be at least "
                          f"max_message_bytes ({server.max_message_bytes}): one message of "
                          "the largest size must fit")
    engine = EngineConfig(**raw_engine)
    if "spark_master" in raw_engine and "spark_remote" in raw_engine:
        raise ConfigError("[engine] spark_master and spark_remote: set one, not both "
                          "(spark_remote, Spark Connect, would win)")
    if "path" in raw_demo:  # relative to the file, as every path is
        raw_demo = {**raw_demo, "path": str(base_dir / Path(raw_demo["path"]).expanduser())}
    demo = DemoConfig(**raw_demo)

    sources = _sources(data, demo)
    users = _users(data)
    _check_user_sources(users, sources)
    if "auth_method" in raw_server and not users:
        raise ConfigError("[server] auth_method applies to [[users]]; without [[users]] every "
                          "connection is trusted (loopback only): remove auth_method or add users")

    search_path = tuple(raw_catalog.get("search_path", [s.name for s in sources[:1]]))
    names = {s.name for s in sources}
    for schema in search_path:
        if schema not in names:
            raise ConfigError(f"[catalog] search_path names {schema!r}, which is not a source "
                              f"(the sources: {', '.join(sorted(names))})")

    if not is_loopback(server.host) and not users:
        where = "--host" if "host" in from_command_line else "[server] host"
        raise ConfigError(f"{where}: a non-loopback address requires [[users]] (trust is "
                          "loopback-only)", from_command_line="host" in from_command_line)
    _check_http(server, users)
    return Config(server=server, engine=engine, search_path=search_path, users=users,
                  sources=sources, demo=demo, base_dir=base_dir, file=file,
                  from_command_line=from_command_line,
                  catalog_refresh_s=float(raw_catalog.get("refresh_seconds", 60)))


def _check_http(server: ServerConfig, users: tuple[UserConfig, ...]) -> None:
    """The HTTP side port: within range for every worker, apart from the SQL port, and
    open (no [[users]] to authenticate against) only on loopback."""
    if not server.http_port:
        if server.http_host is not None:
            raise ConfigError("[server] http_host needs http_port (the HTTP port is off without it)")
        return
    assert isinstance(server.workers, int)
    ports = range(server.http_port, server.http_port + server.workers)
    if ports[-1] > 65535:
        raise ConfigError(f"[server] http_port {server.http_port}: worker i serves http_port + i, "
                          f"and {ports[-1]} is above 65535")
    if server.port in ports:
        raise ConfigError(f"[server] http_port {server.http_port}: port {server.port} is the SQL port")
    if not users and not is_loopback(server.http_bind_host):
        raise ConfigError(f"[server] http_host {server.http_bind_host}: without [[users]] the HTTP "
                          "port is open to anyone, so it may listen on loopback only")


def load_config(path: str | os.PathLike[str] | None = None, **server_overrides: Any) -> Config:
    """Read the TOML file at `path` (None: defaults) and apply the `--host`/`--port`/
    `--workers` overrides; check that the sources' files exist."""
    data: dict[str, Any] = {}
    base_dir = Path(".")
    file = None
    if path is not None:
        file = Path(path)
        try:
            data = tomllib.loads(file.read_text())
        except FileNotFoundError as exc:
            raise ConfigError(f"config file not found: {file}") from exc
        except OSError as exc:
            raise ConfigError(f"cannot read the config file: {exc.strerror or exc}", file) from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"not valid TOML: {exc}", file) from exc
        base_dir = file.parent
    overrides = {k: v for k, v in server_overrides.items() if v is not None}
    for key, value in overrides.items():  # named as the command line spells them
        check_value("", f"--{key}", value, SERVER.keys[key])
    if overrides:
        # The file's own values are checked too: a wrong one is not hidden by the override.
        try:
            check_table("[server]", data.get("server", {}), SERVER)
        except ConfigError as exc:
            exc.file = file
            raise
        server = data.get("server", {})
        data = {**data, "server": {**server, **overrides} if isinstance(server, dict) else server}
    config = parse_config(data, base_dir, file, frozenset(overrides))
    check_source_files(config)
    server_tls(config)  # the certificate and key load, or the start stops here
    return config


def server_tls(config: Config) -> ServerTls | None:
    """The `[server]` TLS settings with their certificate and key loaded (None: no TLS);
    a ConfigError naming the key and the file when they cannot be used."""
    server = config.server
    if server.tls is None or server.tls_cert is None or server.tls_key is None:
        return None
    try:
        return ServerTls(server.tls, server.tls_cert, server.tls_key)
    except ConfigError as exc:
        exc.file = config.file
        raise


def server_ssl_context(config: Config) -> ssl.SSLContext | None:
    """The SSLContext a listener of this gateway serves TLS with (None: no TLS), freshly
    read from `[server] tls_cert` and `tls_key`."""
    tls = server_tls(config)
    return tls.context if tls is not None else None


def source_path(config: Config, source: SourceConfig, key: str = "path") -> str | None:
    """The `[sources.<name>] <key>` path, relative to the configuration file's folder."""
    value = source.options.get(key)
    if value is None:
        return None
    return str(config.base_dir / Path(value).expanduser())


def check_source_files(config: Config) -> None:
    """The database files and folders the sources name exist (a read-only open would fail
    later, with a driver's traceback); the folder of each statement_log exists."""
    for source in config.sources:
        if source.options.get("demo"):
            continue  # generated on first start
        where = f"[sources.{source.name}]"
        path = source_path(config, source)
        if path is not None:
            _check_exists(config, where, source, Path(path))
        log = source_path(config, source, "statement_log")
        if log is not None and not Path(log).parent.is_dir():
            shown = json.dumps(source.options["statement_log"])
            raise ConfigError(f"{where} statement_log {shown}: the folder {Path(log).parent} "
                              "does not exist", config.file)


def _check_exists(config: Config, where: str, source: SourceConfig, path: Path) -> None:
    shown = json.dumps(source.options["path"])
    if not path.exists():
        raise ConfigError(f"{where} path {shown}: {path} does not exist", config.file)
    if source.kind in ("sqlite", "duckdb") and not path.is_file():
        raise ConfigError(f"{where} path {shown}: {path} is not a {source.kind} database file",
                          config.file)


def listen_error(config: Config, exc: OSError) -> ConfigError:
    """Binding the listening socket failed: which setting to change."""
    host, port = config.server.host, config.server.port
    unresolvable = isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL
    key = "host" if unresolvable else "port"
    given_as_option = key in config.from_command_line
    where = f"--{key}" if given_as_option else f"[server] {key}"
    # asyncio words its bind errors its own way; the errno's text is the same everywhere.
    reason = exc.strerror if unresolvable or not exc.errno else os.strerror(exc.errno)
    return ConfigError(f"{where}: cannot listen on {host}:{port}: {reason}",
                       None if given_as_option else config.file)


__all__ = ["AUTH_METHODS", "Config", "ConfigError", "DemoConfig", "EngineConfig",
           "SOURCE_KINDS", "ServerConfig", "SourceConfig", "UserConfig", "check_source_files",
           "demo_path", "is_loopback", "listen_error", "load_config", "parse_config", "replace",
           "server_ssl_context", "server_tls", "source_path"]
