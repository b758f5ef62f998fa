"""The gateway's log lines: one format for fedgate and everything that logs through
Python's `logging` in the process (asyncpg, py4j and pyspark, the Spark engine's Python
side), plain text or one JSON object a line (`[server] log_format`).

Every line logged while a session serves carries the session's id (its backend pid, as
pg_stat_activity and pg_backend_pid() show it) and the statement's (a per-session
counter): the session sets `SESSION_ID` and `STATEMENT_ID` on its own task, so whatever
runs under it (executor, connectors, asyncio.to_thread) logs with them. A line may also
name them itself (`extra={"session": ..., "statement": ...}`), as the express lane does,
which answers in socket callbacks outside the session's task. Any other `extra` fields
are kept: JSON as fields of the object, text as key=value after the message.

The standard library's logging with a Formatter subclass is enough here: no dependency.
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any

SESSION_ID: ContextVar[int | None] = ContextVar("fedgate_session_id", default=None)
STATEMENT_ID: ContextVar[int | None] = ContextVar("fedgate_statement_id", default=None)

# What every LogRecord has: anything else on a record came from `extra`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName"}
_OWN = ("session", "statement")


def _ids(record: logging.LogRecord) -> tuple[Any, Any]:
    session = getattr(record, "session", None)
    statement = getattr(record, "statement", None)
    if session is None:
        session = SESSION_ID.get()
    if statement is None:
        statement = STATEMENT_ID.get()
    return session, statement


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and k not in _OWN}


def _time(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")


class TextFormatter(logging.Formatter):
    """`<time UTC> <LEVEL> <logger>[ <process>]: <message> [session=N statement=M] [k=v ...]`."""

    def __init__(self, process: str | None = None) -> None:
        super().__init__()
        self.process = process

    def format(self, record: logging.LogRecord) -> str:
        session, statement = _ids(record)
        where = f" [{self.process}]" if self.process else ""
        line = f"{_time(record)} {record.levelname} {record.name}{where}: {record.getMessage()}"
        tags = [] if session is None else [f"session={session}"]
        if statement is not None:
            tags.append(f"statement={statement}")
        tags.extend(f"{k}={_text(v)}" for k, v in _extras(record).items())
        if tags:
            line += " " + " ".join(tags)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _text(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if not text or any(c.isspace() or c in '"=' for c in text) else text


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (ISO-8601, UTC), level, logger, message, session,
    statement, the extras, and the traceback (`exception`) when there is one."""

    def __init__(self, process: str | None = None) -> None:
        super().__init__()
        self.process = process

    def format(self, record: logging.LogRecord) -> str:
        session, statement = _ids(record)
        entry: dict[str, Any] = {"time": _time(record), "level": record.levelname,
                                 "logger": record.name, "message": record.getMessage(),
                                 "session": session, "statement": statement}
        if self.process:
            entry["process"] = self.process
        entry.update(_extras(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure(log_format: str, process: str | None = None) -> None:
    """Send every logger's lines to stderr in `log_format` ("text" or "json"); `process`
    says which process of a multi-worker gateway wrote the line ("worker 2", "supervisor")."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(process) if log_format == "json" else TextFormatter(process))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
