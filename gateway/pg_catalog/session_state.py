"""Which session a catalog query runs for, and its per-query tables.

The executor calls `Source.run_remote(sql, params)` without naming a session, so the
session binds itself to a context variable when it is created (`bind_session`); asyncio
copies the context into every task the connection starts, so the catalog source sees
the session whose statement it is answering. `session_tables` turns that session into
the small Arrow tables the macros and views read (`fg_session`, `fg_settings`,
`fg_activity`, `fg_prepared`); building them costs microseconds, so they are made per
query and the plan cache can share catalog plans between sessions. What pg_stat_activity
shows of a session is noted by the session and the express lane (`gateway.state.activity`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa

from gateway.state.activity import activity_of, note_idle, note_query
from pgwire.types.table import format_type

__all__ = ["activity_of", "bind_session", "current_session", "note_idle", "note_query",
           "session_tables"]


# Server settings clients read with current_setting() that sessions cannot change here
# (asyncpg reads `jit` before its type introspection, inside the client's transaction).
READ_ONLY_SERVER_SETTINGS = {
    "jit": "off", "max_index_keys": "32", "block_size": "8192", "max_function_args": "100",
    "default_text_search_config": "pg_catalog.english", "work_mem": "4MB",
}

# pg_stat_activity's query for a session the asking user may not see into.
INSUFFICIENT_PRIVILEGE = "<insufficient privilege>"

_current: contextvars.ContextVar[Any] = contextvars.ContextVar("fedgate_session", default=None)


def bind_session(session: Any) -> None:
    """Make `session` the one catalog queries from this task (and its children) answer for."""
    _current.set(session)


def current_session() -> Any:
    return _current.get()


def effective_path(search_path: Iterable[str], schemas: Iterable[str]) -> tuple[list[str], list[str]]:
    """current_schemas(false) and current_schemas(true): existing schemas of the path, and
    the same with pg_catalog searched first unless the path names it."""
    known = set(schemas)
    explicit = [s for s in search_path if s in known]
    effective = explicit if "pg_catalog" in explicit else ["pg_catalog", *explicit]
    return explicit, effective


def session_tables(session: Any, schemas: Iterable[str],
                   sessions: Callable[[], Mapping[int, Any]]) -> dict[str, pa.Table]:
    if session is None:
        raise RuntimeError("a catalog query ran outside any session")
    settings = session.settings
    explicit, effective = effective_path(settings.search_path, schemas)
    fg_session = pa.table({
        "user": [session.user], "database": [session.database], "pid": pa.array([session.pid], pa.int32()),
        "explicit": pa.array([explicit], pa.list_(pa.string())),
        "effective": pa.array([effective], pa.list_(pa.string())),
    })
    values = {**READ_ONLY_SERVER_SETTINGS, **settings.values}
    names = sorted(values)
    fg_settings = pa.table({"name": names, "setting": [values[n] for n in names]})
    rows = []
    admin = session.access.admin
    for pid, other in sorted(sessions().items()):
        application = other.settings.values.get("application_name", "")
        if not (admin or other.user == session.user):
            # As PostgreSQL shows another role's backend to a role without
            # pg_read_all_stats: who and which application, nothing of what it does.
            rows.append((pid, other.user, application, None, None, None, None, None, None,
                         INSUFFICIENT_PRIVILEGE))
            continue
        act = activity_of(other)
        peer = getattr(other.writer, "get_extra_info", lambda _: None)("peername")
        rows.append((pid, other.user, application,
                     peer[0] if peer else None, peer[1] if peer else None, act.backend_start,
                     act.query_start if act.state == "active" else None, act.query_start,
                     act.state, act.query))
    cols = list(zip(*rows)) if rows else [[] for _ in range(10)]
    ts = pa.timestamp("us", tz="UTC")
    fg_activity = pa.table({
        "pid": pa.array(cols[0], pa.int32()), "usename": pa.array(cols[1], pa.string()),
        "application_name": pa.array(cols[2], pa.string()),
        "client_addr": pa.array(cols[3], pa.string()), "client_port": pa.array(cols[4], pa.int32()),
        "backend_start": pa.array(cols[5], ts), "xact_start": pa.array(cols[6], ts),
        "query_start": pa.array(cols[7], ts), "state": pa.array(cols[8], pa.string()),
        "query": pa.array(cols[9], pa.string()),
    })
    return {"fg_session": fg_session, "fg_settings": fg_settings, "fg_activity": fg_activity,
            "fg_prepared": _prepared_table(session)}


def _prepared_table(session: Any) -> pa.Table:
    """The session's named statements (pg_prepared_statements), SQL PREPARE's and Parse's."""
    named = [(name, p) for name, p in session.statements.items() if name]
    return pa.table({
        "name": pa.array([name for name, _ in named], pa.string()),
        "statement": pa.array([p.from_sql or p.sql for _, p in named], pa.string()),
        "prepare_time": pa.array([None if p.prepared_at is None else int(p.prepared_at * 1_000_000)
                                  for _, p in named], pa.timestamp("us", tz="UTC")),
        "parameter_types": pa.array([[format_type(oid) for oid in p.param_oids] for _, p in named],
                                    pa.list_(pa.string())),
        "from_sql": pa.array([p.from_sql is not None for _, p in named], pa.bool_()),
    })
