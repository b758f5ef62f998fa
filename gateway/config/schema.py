"""Every key the configuration file may hold, what value each takes, and the checks that
name the section and the key at fault.

A key that is not declared here is an error (with a "did you mean" when a declared key is
close), so no key is accepted and then ignored. Each source kind declares its own keys. A
key that people may reasonably write but that does nothing yet is "refused": an error
that says why, instead of a silent no-op.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.config.memory import is_size, is_size_or_share

MAX_WORKERS = 64
AUTH_METHODS = ("trust", "password", "md5", "scram-sha-256")
SOURCE_KINDS = ("duckdb", "postgres", "mysql", "sqlite", "parquet", "csv", "delta",
                "iceberg")
# The emulated system catalogs are schemas of these names; a source may not take them.
RESERVED_SOURCE_NAMES = ("pg_catalog", "information_schema")


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the key at fault, and `file`
    (when known) the configuration file it is in."""

    def __init__(self, message: str, file: str | os.PathLike[str] | None = None, *,
                 from_command_line: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        # About a command-line option, not the file: no file name in the message.
        self.from_command_line = from_command_line

    def __str__(self) -> str:
        return f"{self.file}: {self.message}" if self.file is not None else self.message


@dataclass(frozen=True)
class Value:
    """What one key takes; `expected` says it in words for the error message."""

    expected: str
    accepts: Callable[[Any], bool]
    choices: tuple[str, ...] = ()  # for a "did you mean" on a misspelt choice


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def integer(minimum: int, maximum: int | None = None) -> Value:
    if maximum is None:
        return Value(f"an integer >= {minimum}", lambda v: _is_int(v) and v >= minimum)
    return Value(f"an integer from {minimum} to {maximum}",
                 lambda v: _is_int(v) and minimum <= v <= maximum)


def number(minimum: float, *, inclusive: bool = True) -> Value:
    def accepts(value: Any) -> bool:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        return value >= minimum if inclusive else value > minimum
    return Value(f"a number {'>=' if inclusive else '>'} {minimum:g}", accepts)


def one_of(*choices: str) -> Value:
    words = ", ".join(json.dumps(c) for c in choices[:-1]) + f" or {json.dumps(choices[-1])}"
    return Value(f"one of {words}" if len(choices) > 2 else words,
                 lambda v: isinstance(v, str) and v in choices, choices)


STRING = Value("a string", lambda v: isinstance(v, str))
NAME = Value("a non-empty string", lambda v: isinstance(v, str) and v != "")
BOOLEAN = Value("true or false", lambda v: isinstance(v, bool))
STRINGS = Value("an array of strings",
                lambda v: isinstance(v, list) and all(isinstance(item, str) for item in v))
SETTINGS = Value("a table of settings (strings, numbers or booleans)",
                 lambda v: isinstance(v, dict)
                 and all(isinstance(item, (str, int, float, bool)) for item in v.values()))
SIZE = Value('a size such as "10GB" or "512MB"', is_size)
SIZE_OR_SHARE = Value('a size such as "1GB" or "512MB", or a share such as "50%"',
                      is_size_or_share)
WORKERS = Value(f'"auto" or an integer from 0 to {MAX_WORKERS}',
                lambda v: v == "auto" or (_is_int(v) and 0 <= v <= MAX_WORKERS))


@dataclass(frozen=True)
class Section:
    """The keys one TOML table may hold."""

    keys: Mapping[str, Value]
    required: tuple[str, ...] = ()
    refused: Mapping[str, str] = field(default_factory=dict)  # key -> why not (yet)


SERVER = Section({
    "host": NAME,
    "port": integer(1, 65535),
    "database": NAME,
    "max_connections": integer(1),
    "statement_timeout_ms": integer(0),
    "auth_method": one_of(*AUTH_METHODS),
    "max_message_bytes": integer(1, 2**30),  # PostgreSQL's own limit is 1 GB
    "workers": WORKERS,
    # TLS for clients (gateway/config/tls.py): PEM files, relative to the config file.
    "tls_cert": NAME,
    "tls_key": NAME,
    "tls": one_of("on", "require"),
    "log_format": one_of("text", "json"),
    "log_min_duration_ms": integer(-1),
    # The HTTP side port: /metrics, /healthz, /readyz and the status page (off unless set).
    "http_port": integer(1, 65535),
    "http_host": NAME,
    # Limits at the door (docs/design.md §8).
    "max_inflight_message_bytes": integer(1, 2**40),
    "authentication_timeout_s": number(0, inclusive=False),
    "max_startup_connections": integer(1, 100_000),
    "auth_failure_delay_ms": integer(0, 60_000),
    "max_auth_failures": integer(0),
    "auth_lockout_s": number(0, inclusive=False),
    "shutdown_timeout_s": number(0),
})

ENGINE = Section({
    "default": one_of("duckdb", "spark"),
    "spark_master": NAME,
    "spark_remote": NAME,
    "spark_threshold_rows": integer(0),
    "inline_rows": integer(0),
    "spark_reads_sources": one_of("auto", "always", "never"),
    "spark_read_threshold_rows": integer(0),
    "spark_partition_rows": integer(1),
    "spark_conf": SETTINGS,
    "spark_connect_timeout_s": number(0, inclusive=False),
    "spark_job_timeout_s": number(0),
    "spark_idle_stop_s": number(0),
    "spark_stall_timeout_s": number(0),
    # Memory (gateway/config/memory.py, docs/design.md §8 "Memory").
    "memory_limit": SIZE_OR_SHARE,
    "temp_directory": NAME,
    "temp_directory_max_size": SIZE,
    "statement_memory": SIZE_OR_SHARE,
    "memory_wait_s": number(0),
})

CATALOG = Section({
    "search_path": STRINGS,
    "refresh_seconds": number(0),
})

DEMO = Section({
    "scale": number(0, inclusive=False),
    "path": NAME,
})

ROLES = Value("a table of source names to PostgreSQL role names",
              lambda v: isinstance(v, dict)
              and all(isinstance(item, str) and item != "" for item in v.values()))

USER = Section({
    "name": NAME,
    "password": STRING,
    # Which sources the user sees, ["*"] for all; required, so that no user gets every
    # source by forgetting the key (gateway.state.access).
    "sources": STRINGS,
    "auth_method": one_of(*AUTH_METHODS),
    "read_only": BOOLEAN,
    "admin": BOOLEAN,
    "source_roles": ROLES,
    "pool_modes": Value('a table of source names to "session" or "transaction"',
                        lambda v: isinstance(v, dict)
                        and all(item in ("session", "transaction") for item in v.values())),
}, required=("name", "sources"))

_KIND = one_of(*SOURCE_KINDS)
# Every kind takes `required`: /readyz answers 503 while a required source does not answer.
_REQUIRED = {"required": BOOLEAN}
_READ_ONLY_ANYWAY = "{} sources are always read-only; remove read_only"
# An s3:// path's store (gateway.config.object_store): a credential may be "env:NAME" or
# "file:PATH" instead of the secret itself.
_OBJECT_STORE = {"endpoint": NAME, "region": NAME, "access_key_id": NAME,
                 "secret_access_key": NAME}
SOURCES: Mapping[str, Section] = {
    # pool_mode, pool_timeout_s, server_idle_timeout_s, server_lifetime_s (0: never):
    # the relay's links (gateway.relay.pool).
    "postgres": Section({"kind": _KIND, "dsn": NAME, "schema": NAME, "pool_size": integer(1),
                         "pool_mode": one_of("session", "transaction"),
                         "pool_timeout_s": number(0, inclusive=False),
                         "server_idle_timeout_s": number(0), "server_lifetime_s": number(0),
                         "read_only": BOOLEAN, **_REQUIRED}, required=("dsn",)),
    "mysql": Section({"kind": _KIND, "dsn": NAME, "pool_size": integer(1), "read_only": BOOLEAN,
                      **_REQUIRED},
                     required=("dsn",),
                     refused={"schema": "a mysql source reads the database its dsn names; "
                              "remove schema"}),
    "sqlite": Section({"kind": _KIND, "path": NAME, "statement_log": NAME, "read_only": BOOLEAN,
                       **_REQUIRED},
                      required=("path",)),
    "duckdb": Section({"kind": _KIND, "path": NAME, "schema": NAME, "statement_log": NAME,
                       **_REQUIRED},
                      required=("path",),
                      refused={"read_only": _READ_ONLY_ANYWAY.format("duckdb")}),
    "parquet": Section({"kind": _KIND, "path": NAME, "statement_log": NAME, **_OBJECT_STORE,
                        **_REQUIRED},
                       required=("path",),
                       refused={"read_only": _READ_ONLY_ANYWAY.format("parquet")}),
    "csv": Section({"kind": _KIND, "path": NAME, "statement_log": NAME, **_OBJECT_STORE,
                    **_REQUIRED},
                   required=("path",),
                   refused={"read_only": _READ_ONLY_ANYWAY.format("csv")}),
    # Each Delta table under path (a folder or an s3:// prefix): connectors.delta.
    "delta": Section({"kind": _KIND, "path": NAME, "statement_log": NAME, **_OBJECT_STORE,
                      **_REQUIRED},
                     required=("path",),
                     refused={"read_only": _READ_ONLY_ANYWAY.format("delta")}),
    # The tables of one namespace of an Iceberg SQL catalog: connectors.iceberg.
    "iceberg": Section({"kind": _KIND, "catalog_uri": NAME, "catalog_name": NAME,
                        "namespace": NAME,
                        "warehouse": NAME, "statement_log": NAME, **_REQUIRED},
                       required=("catalog_uri", "namespace"),
                       refused={"read_only": _READ_ONLY_ANYWAY.format("iceberg")}),
}

SECTIONS: Mapping[str, Section] = {"server": SERVER, "engine": ENGINE, "catalog": CATALOG,
                                   "demo": DEMO}
TOP_LEVEL = ("server", "engine", "catalog", "users", "sources", "demo")


def shown(value: Any) -> str:
    """A value as the error message quotes it, in TOML's words."""
    if isinstance(value, str):
        return f"the string {json.dumps(value)}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"{value}"  # a TOML date or time


def close_to(word: str, candidates: Any) -> str | None:
    """The candidate `word` was probably meant to be: the only one it begins (say
    "scram" for "scram-sha-256"), else the closest spelling, if one is close."""
    extended = [c for c in candidates if c.startswith(word)] if len(word) >= 3 else []
    if len(extended) == 1:
        return extended[0]
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_key(where: str, key: str, section: Section, kind: str | None = None) -> ConfigError:
    known = [k for k in section.keys if k != "kind"]
    guess = close_to(key, known)
    if guess is not None:
        return ConfigError(f"unknown key {key} in {where} (did you mean {guess}?)")
    takes = f"a {kind} source takes" if kind else "it takes"
    return ConfigError(f"unknown key {key} in {where} ({takes}: {', '.join(known)})")


def check_value(where: str, key: str, value: Any, spec: Value) -> None:
    if spec.accepts(value):
        return
    message = f"{' '.join(filter(None, (where, key)))} must be {spec.expected}, not {shown(value)}"
    guess = close_to(value, spec.choices) if isinstance(value, str) and spec.choices else None
    if guess is not None:
        message += f" (did you mean {json.dumps(guess)}?)"
    raise ConfigError(message)


def check_table(where: str, table: Any, section: Section,
                kind: str | None = None) -> dict[str, Any]:
    """`table`, the TOML table at `where`, checked key by key against `section`."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table, not {shown(table)}")
    for key, value in table.items():
        if key in section.refused:
            raise ConfigError(f"{where} {key}: {section.refused[key]}")
        spec = section.keys.get(key)
        if spec is None:
            raise unknown_key(where, key, section, kind)
        check_value(where, key, value, spec)
    for key in section.required:
        if key not in table:
            raise ConfigError(f"{where} needs {key}")
    return table


def check_top_level(data: Mapping[str, Any]) -> None:
    """Only the known sections, each a table (`users` an array of tables)."""
    for name, value in data.items():
        if name in TOP_LEVEL:
            continue
        owners = [section for section, keys in SECTIONS.items() if name in keys.keys]
        if owners:
            raise ConfigError(f"{name} at the top of the file belongs in a section "
                              f"(did you mean [{owners[0]}] {name}?)")
        guess = close_to(name, TOP_LEVEL)
        hint = (f" (did you mean [{guess}]?)" if guess
                else f" (the sections: {', '.join(TOP_LEVEL)})")
        raise ConfigError(f"unknown section [{name}]{hint}")
    users = data.get("users", [])
    if not isinstance(users, list) or not all(isinstance(user, dict) for user in users):
        raise ConfigError("users must be an array of tables: one [[users]] block per user")
    sources = data.get("sources", {})
    if not isinstance(sources, dict):
        raise ConfigError("sources must be a table of sources: one [sources.<name>] per source")
    for name, raw in sources.items():
        if not isinstance(raw, dict):
            raise ConfigError(f"[sources] {name} = ... is not a source: each source is a table "
                              f"of its own, [sources.<name>] with kind = ...")


def check_source(name: str, raw: dict[str, Any]) -> str:
    """One `[sources.<name>]` table checked against its kind's keys; returns the kind."""
    where = f"[sources.{name}]"
    if name in RESERVED_SOURCE_NAMES:
        raise ConfigError(f"{where}: the name {name} is reserved for the system catalog; "
                          "choose another")
    if "kind" not in raw:
        raise ConfigError(f"{where} needs kind ({_KIND.expected})")
    check_value(where, "kind", raw["kind"], _KIND)
    kind = raw["kind"]
    check_table(where, raw, SOURCES[kind], kind)
    return kind


__all__ = ["AUTH_METHODS", "CATALOG", "ConfigError", "DEMO", "ENGINE", "MAX_WORKERS",
           "RESERVED_SOURCE_NAMES", "SECTIONS", "SERVER", "SOURCES", "SOURCE_KINDS", "Section",
           "TOP_LEVEL", "USER", "Value", "check_source", "check_table", "check_top_level",
           "check_value", "close_to", "shown", "unknown_key"]
