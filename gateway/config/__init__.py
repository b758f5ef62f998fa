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
from dataclasses import replace
from pathlib import Path
from typing import Any

from gateway.config.schema import (AUTH_METHODS, CATALOG, DEMO, ENGINE, MAX_WORKERS, SERVER,
                                   SOURCE_KINDS, USER, ConfigError, check_source, check_table,
                                   check_top_level, check_value)
from gateway.config.model import (DEMO_SOURCE, Config, DemoConfig,
                                  EngineConfig, ServerConfig, SourceConfig, UserConfig)
from gateway.config.memory import memory_limit_bytes, share_bytes, shown_bytes
from gateway.config.tls import ServerTls
from gateway.config.object_store import check_object_store, is_url

# The kinds whose path may be a folder or an s3:// prefix (gateway.config.object_store).
FILE_KINDS = ("parquet", "csv", "delta")

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
                                source_roles=dict(raw.get("source_roles", {})),
                                pool_modes=dict(raw.get("pool_modes", {}))))
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
        for key, names in (("source_roles", user.source_roles), ("pool_modes", user.pool_modes)):
            for name in names:
                if name not in kinds:
                    raise ConfigError(f"{where} {key} names {name!r}, which is not a source "
                                      f"(the sources: {', '.join(sorted(kinds))})")
                if kinds[name] != "postgres":
                    what = "a role can be set on" if key == "source_roles" else "it applies to"
                    raise ConfigError(f"{where} {key}: {name!r} is a {kinds[name]} source; "
                                      f"{what} postgres sources only")


def _sources(data: dict[str, Any], demo: DemoConfig) -> tuple[SourceConfig, ...]:
    sources = []
    for name, raw in data.get("sources", {}).items():
        kind = check_source(name, raw)
        if kind in FILE_KINDS:
            check_object_store(f"[sources.{name}]", raw)
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
    if "temp_directory" in raw_engine:  # relative to the file, as every path is
        raw_engine = {**raw_engine, "temp_directory":
                      str(base_dir / Path(raw_engine["temp_directory"]).expanduser())}
    engine = EngineConfig(**raw_engine)
    if "spark_master" in raw_engine and "spark_remote" in raw_engine:
        raise ConfigError("[engine] spark_master and spark_remote: set one, not both "
                          "(spark_remote, Spark Connect, would win)")
    _check_memory(engine, server.workers)
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


def _check_memory(engine: EngineConfig, workers: int | str) -> None:
    """statement_memory fits in memory_limit: a statement larger than the pool would wait
    for ever."""
    assert isinstance(workers, int)
    limit = memory_limit_bytes(engine.memory_limit, workers)
    share = share_bytes(engine.statement_memory, limit)
    assert share is not None
    if share > limit:
        raise ConfigError(f"[engine] statement_memory {json.dumps(engine.statement_memory)} is "
                          f"more than memory_limit ({shown_bytes(limit)} per worker process)")


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
    if key == "path" and is_url(value):
        return value  # an object store's (gateway.config.object_store), not a file's
    return str(config.base_dir / Path(value).expanduser())


def check_source_files(config: Config) -> None:
    """The database files and folders the sources name exist (a read-only open would fail
    later, with a driver's traceback); the folder of each statement_log exists."""
    spill = config.engine.temp_directory
    if spill is not None and not Path(spill).is_dir():
        raise ConfigError(f"[engine] temp_directory {json.dumps(spill)}: no such folder "
                          "(DuckDB spills into a folder of its own made inside it)", config.file)
    for source in config.sources:
        if source.options.get("demo"):
            continue  # generated on first start
        where = f"[sources.{source.name}]"
        path = source_path(config, source)
        if path is not None and not is_url(path):  # a store is a server: read at start-up
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


def connect_command(config: Config) -> str:
    """The psql command that reaches this gateway, for the ready line: a new user's first
    question is how to connect."""
    user = config.users[0].name if config.users else "fedgate"
    host = "127.0.0.1" if config.server.host in ("0.0.0.0", "::", "") else config.server.host
    tls = "?sslmode=require" if config.server.tls == "require" else ""
    return (f'psql "postgresql://{user}@{host}:{config.server.port}/'
            f'{config.server.database}{tls}"')
