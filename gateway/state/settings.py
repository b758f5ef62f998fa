"""Session parameters (GUCs): defaults, validation, and which ones clients must be told about.

The gateway keeps its own settings per session. PostgreSQL's other settings are checked as
PostgreSQL checks them (gateway.state.pg_settings) and kept; the formatting ones and those
a source acts on (`is_forwarded`) reach a PostgreSQL source's connection before each
relayed statement (connectors.postgres.source_settings). A `fedgate.` name the gateway
does not have is refused like an unknown PostgreSQL one.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gateway.config.memory import is_size_or_share
from gateway.state.pg_settings import (NAMES as PG_NAMES, SPECS as PG_SPECS, TIME_UNITS, check_known,
                                       checked_value, parse_bool, spec_of)
from pgwire.errors import (CANT_CHANGE_RUNTIME_PARAM, FEATURE_NOT_SUPPORTED,
                            INVALID_PARAMETER_VALUE, UNDEFINED_OBJECT, PgError)

SERVER_VERSION = "15.0"
SERVER_VERSION_NUM = "150000"
FEDGATE_VERSION = "0.1.0"
VERSION_STRING = (f"PostgreSQL {SERVER_VERSION} (fedgate {FEDGATE_VERSION}) on x86_64-pc-linux-gnu, "
                  "compiled by gcc, 64-bit")

# Parameters PostgreSQL 15 reports with ParameterStatus at startup and whenever they change.
REPORTED = ("application_name", "client_encoding", "DateStyle", "default_transaction_read_only",
            "in_hot_standby", "integer_datetimes", "IntervalStyle", "is_superuser",
            "server_encoding", "server_version", "session_authorization",
            "standard_conforming_strings", "TimeZone")

DEFAULTS: dict[str, str] = {
    "application_name": "",
    "client_encoding": "UTF8",
    "DateStyle": "ISO, MDY",
    "default_transaction_read_only": "off",
    # The current transaction's (outside a block: the next one's, from the default).
    "transaction_read_only": "off",
    "in_hot_standby": "off",
    "integer_datetimes": "on",
    "IntervalStyle": "postgres",
    "is_superuser": "off",
    "server_encoding": "UTF8",
    "server_version": SERVER_VERSION,
    "server_version_num": SERVER_VERSION_NUM,
    "standard_conforming_strings": "on",
    "TimeZone": "UTC",
    "extra_float_digits": "1",
    "statement_timeout": "0",
    "search_path": "",
    "transaction_isolation": "read committed",
    "default_transaction_isolation": "read committed",
    "max_identifier_length": "63",
    "lc_collate": "C",
    "lc_ctype": "C",
    "fedgate.engine": "duckdb",
    "fedgate.dynamic_filtering": "on",
    # Statements wholly in one PostgreSQL source go to it as written (gateway.relay.routing).
    # Off sends reads through the planner instead; writes always go to their source.
    "fedgate.relay": "on",
    # Relayed statements answered from the sockets' callbacks (gateway.relay.express); off runs
    # every statement through the session's task (same answers, more CPU per statement).
    "fedgate.express": "on",
    # Numbers of relayed statements sent as parameters of a statement prepared once per
    # shape (gateway.relay.literals); off sends each statement's text as written.
    "fedgate.parameterize": "on",
    # Aggregates over a cross-source join pre-aggregated at the joined side's source
    # (planner.rules.push_aggregate_below_join): fewer rows travel, the source works more.
    # Pays across a network; on one machine it was slower (TPC-H Q13), hence off.
    "fedgate.pre_aggregate": "off",
    # Moves into PostgreSQL on Spark written by its executors into a stage
    # (connectors.engines.spark_writes): "auto" on a cluster only; "off" brings their rows
    # back through the gateway's COPY, which was faster on one machine (BENCHMARKS.md).
    "fedgate.spark_writes": "auto",
    # Each statement's share of the engine's memory (gateway.state.memory): a size or a
    # share of [engine] memory_limit; the session starts with [engine] statement_memory.
    "fedgate.statement_memory": "25%",
}
READ_ONLY = {"server_version", "server_version_num", "server_encoding", "integer_datetimes",
             "in_hot_standby", "is_superuser", "max_identifier_length", "lc_collate", "lc_ctype",
             "session_authorization"}
# Settings clients send in the startup packet that are not GUCs.
STARTUP_ONLY = {"user", "database", "replication", "options"}
_CANONICAL = {name.lower(): name for name in (*PG_NAMES, *DEFAULTS, *REPORTED)}


# PostgreSQL's settings a session may change that the gateway answers for itself, or that
# a pooled connection must not carry: never forwarded to a source. (The formatting ones
# reach it as connectors.postgres.source_settings.MIRRORED.)
_NOT_FORWARDED = frozenset({
    "TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits", "bytea_output",
    "search_path", "statement_timeout", "client_encoding", "application_name",
    "standard_conforming_strings", "default_transaction_read_only", "transaction_read_only",
    "transaction_isolation", "transaction_deferrable", "idle_in_transaction_session_timeout",
    "idle_session_timeout", "role", "session_authorization"})
_FORWARDED = frozenset(spec.name for spec in PG_SPECS.values()
                       if spec.context == "user" and spec.name not in _NOT_FORWARDED)


def is_forwarded(name: str) -> bool:
    """A setting a PostgreSQL source acts on (work_mem, enable_*, lock_timeout ...) or a
    custom one (`app.tenant`, which its functions and policies may read)."""
    return name in _FORWARDED or ("." in name and not name.startswith("fedgate."))


def is_checked_by_source(name: str, value: str) -> bool:
    """A value only a PostgreSQL source can check: a string setting it acts on, whose
    check hook reads the server (default_text_search_config, temp_tablespaces, lc_*)."""
    spec = spec_of(name)
    return spec is not None and spec.vartype == "string" and spec.name in _FORWARDED \
        and value.upper() != "DEFAULT"


def canonical(name: str) -> str:
    return _CANONICAL.get(name.lower(), name.lower())


def _check_timezone(value: str) -> str:
    upper = value.upper()
    if upper in ("UTC", "GMT", "Z", "ZULU"):
        return "UTC"
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "TimeZone": "{value}"') from exc
    return value


def validate(name: str, value: str, at_startup: bool = False, written: str | None = None) -> str:
    """The value to store for `name`, or a PgError saying why it cannot be set
    (`at_startup`: sent in the startup packet, where a connection's own settings are set;
    `written`: the name as the client wrote it, for the messages)."""
    if name in READ_ONLY:
        raise PgError(CANT_CHANGE_RUNTIME_PARAM, f'parameter "{name}" cannot be changed')
    if name == "role" and value.lower() != "none":  # e.g. options=-c role=x at startup
        raise PgError(FEATURE_NOT_SUPPORTED, "SET ROLE is not supported by fedgate")
    if name == "TimeZone":
        return _check_timezone(value)
    if name == "client_encoding":
        # PostgreSQL cleans encoding names (clean_encoding_name): asyncpg sends 'utf-8'.
        cleaned = "".join(c for c in value if c.isalnum()).upper()
        if cleaned not in ("UTF8", "UNICODE"):
            raise PgError(FEATURE_NOT_SUPPORTED, f"client_encoding {value!r} is not supported: fedgate speaks UTF8 only")
        return "UTF8"
    if name == "DateStyle":
        if "ISO" not in value.upper() and value.upper() not in ("MDY", "DMY", "YMD"):
            raise PgError(FEATURE_NOT_SUPPORTED, "fedgate supports DateStyle ISO only")
        order = "DMY" if "DMY" in value.upper() else "YMD" if "YMD" in value.upper() else "MDY"
        return f"ISO, {order}"
    if name == "IntervalStyle" and value.lower() != "postgres":
        raise PgError(FEATURE_NOT_SUPPORTED, "fedgate supports IntervalStyle postgres only")
    if name == "standard_conforming_strings":
        if parse_bool(name, value) != "on":
            raise PgError(FEATURE_NOT_SUPPORTED, "fedgate requires standard_conforming_strings = on")
        return "on"
    if name == "fedgate.engine":
        if value.lower() not in ("duckdb", "spark", "source"):
            raise PgError(INVALID_PARAMETER_VALUE, 'fedgate.engine must be "duckdb", "spark" or "source"')
        return value.lower()
    if name == "fedgate.spark_writes":
        if value.lower() not in ("auto", "on", "off"):
            raise PgError(INVALID_PARAMETER_VALUE, 'fedgate.spark_writes must be "auto", "on" or "off"')
        return value.lower()
    if name == "fedgate.statement_memory":
        if not is_size_or_share(value):
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": "{value}"',
                          hint='A size such as "256MB" or "1GB", or a share of [engine] '
                               'memory_limit such as "25%".')
        return value.strip()
    if name in ("default_transaction_read_only", "transaction_read_only", "fedgate.dynamic_filtering", "fedgate.relay",
                "fedgate.express", "fedgate.parameterize", "fedgate.pre_aggregate"):
        return parse_bool(name, value)
    if name.startswith("fedgate."):
        if name not in DEFAULTS:
            raise PgError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{written or name}"')
        return value
    spec = check_known(written or name, at_startup)
    return value if spec is None else checked_value(spec, value)


_STATEMENT_TIMEOUT = spec_of("statement_timeout")


@functools.lru_cache(maxsize=64)  # read on every statement the session runs
def timeout_ms(value: str) -> int:
    """statement_timeout's milliseconds from its value as stored: SHOW's form, which
    checked_value wrote ('5s', '1500ms', '1d', '0' bare)."""
    number = value.rstrip("abcdefghijklmnopqrstuvwxyz")
    return round(float(number) * TIME_UNITS[value[len(number):] or "ms"])


def shown_timeout(ms: int) -> str:
    """A timeout of `ms` milliseconds as PostgreSQL shows statement_timeout ('90s')."""
    return checked_value(_STATEMENT_TIMEOUT, str(ms))


def parse_options(options: str) -> dict[str, str]:
    """The settings in a startup packet's `options`: `-c name=value` and `--name=value`.

    Words are split on white space; a backslash escapes the next character, as in
    PostgreSQL's pg_split_opts.
    """
    words: list[str] = []
    current: list[str] = []
    escaped = False
    for char in options:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char.isspace():
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    found: dict[str, str] = {}
    pending_c = False
    for word in words:
        if pending_c or word.startswith("--"):
            setting = word if pending_c else word[2:]
            pending_c = False
            name, sep, value = setting.partition("=")
            if not sep:
                raise PgError(INVALID_PARAMETER_VALUE, f'--{setting} requires a value')
            found[name.replace("-", "_")] = value
        elif word == "-c":
            pending_c = True
        elif word.startswith("-c"):
            name, _, value = word[2:].partition("=")
            found[name] = value
        else:
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid command-line argument for server process: {word}')
    return found


@dataclass
class SessionSettings:
    values: dict[str, str]
    # the settings a PostgreSQL source acts on that the session set (`is_forwarded`; one
    # of DEFAULTS at its default is the source's default), as sorted (name, value) pairs:
    # kept in step with `values` by `refresh`
    forwarded: tuple[tuple[str, str], ...] = ()

    @classmethod
    def initial(cls, startup: dict[str, str], search_path: tuple[str, ...]) -> SessionSettings:
        values = dict(DEFAULTS)
        values["search_path"] = ", ".join(search_path)
        values["session_authorization"] = startup.get("user", "")
        settings = cls(values)
        options = parse_options(startup.get("options", ""))
        for key, value in [*options.items(), *startup.items()]:
            if key not in STARTUP_ONLY:
                name = canonical(key)
                if name not in READ_ONLY:
                    settings.values[name] = validate(name, value, at_startup=True)
        # The first transaction's read-only flag comes from the default, whatever was sent.
        settings.values["transaction_read_only"] = settings.values["default_transaction_read_only"]
        settings.refresh()
        return settings

    def refresh(self) -> None:
        """`values` changed (here, or restored at a block's end): `forwarded` follows."""
        self.forwarded = tuple(sorted((k, v) for k, v in self.values.items()
                                      if is_forwarded(k) and DEFAULTS.get(k) != v))

    def get(self, name: str) -> str | None:
        return self.values.get(canonical(name))

    def set(self, name: str, value: str) -> str:
        canonical_name = canonical(name)
        self.values[canonical_name] = validate(canonical_name, value, written=name)
        self.refresh()
        return canonical_name

    def reset(self, name: str, initial: dict[str, str]) -> list[str]:
        names = list(initial) if name == "all" else [canonical(name)]
        changed = []
        for key in names:
            if key in READ_ONLY:
                continue
            default = initial.get(key)
            if self.values.get(key) != default:
                changed.append(key)
            if default is None:
                self.values.pop(key, None)
            else:
                self.values[key] = default
        self.refresh()
        return changed

    @property
    def search_path(self) -> tuple[str, ...]:
        return _path_of(self.values["search_path"])

    @property
    def timezone(self) -> str:
        return self.values["TimeZone"]

    @property
    def statement_timeout_ms(self) -> int:
        return timeout_ms(self.values["statement_timeout"])


@functools.lru_cache(maxsize=64)
def _path_of(value: str) -> tuple[str, ...]:
    """search_path's schemas (read on every statement's route: parsed once per value)."""
    return tuple(p.strip().strip('"') for p in value.split(",") if p.strip())
