"""The log formatters (gateway.state.logs) and the health board (gateway.state.health)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging

import pytest

from gateway.state import logs
from gateway.state.health import DOWN, UP, HealthBoard
from pgwire.errors import PgError


def record(message: str = "hello %s", *args: object, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("fedgate.test", logging.WARNING, __file__, 1, message, args or ("there",), None)
    for key, value in extra.items():
        setattr(rec, key, value)
    return rec


def in_session(fn, session: int | None, statement: int | None):
    def run():
        logs.SESSION_ID.set(session)
        logs.STATEMENT_ID.set(statement)
        return fn()
    return contextvars.copy_context().run(run)


def test_text_line_carries_session_statement_and_extras() -> None:
    line = in_session(lambda: logs.TextFormatter().format(record(source="pg", why="a b")), 7, 3)
    assert line.endswith(' WARNING fedgate.test: hello there session=7 statement=3 source=pg why="a b"')
    assert "+00:00 WARNING" in line


def test_text_line_outside_a_session_has_no_tags() -> None:
    line = logs.TextFormatter("worker 1").format(record())
    assert line.endswith(" WARNING fedgate.test [worker 1]: hello there")


def test_json_line_has_the_fields_and_extras() -> None:
    entry = json.loads(in_session(lambda: logs.JsonFormatter().format(record(duration_ms=1.5)), 9, 2))
    assert entry["level"] == "WARNING" and entry["logger"] == "fedgate.test"
    assert entry["message"] == "hello there" and entry["session"] == 9 and entry["statement"] == 2
    assert entry["duration_ms"] == 1.5 and entry["time"].endswith("+00:00")


def test_explicit_ids_win_over_the_context() -> None:
    entry = json.loads(in_session(
        lambda: logs.JsonFormatter().format(record(session=1, statement=5)), 9, 2))
    assert (entry["session"], entry["statement"]) == (1, 5)


def test_json_carries_a_traceback_as_one_field() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys
        rec = record()
        rec.exc_info = sys.exc_info()
    line = logs.JsonFormatter().format(rec)
    assert "\n" not in line and "ValueError: boom" in json.loads(line)["exception"]


class Failing:
    name = "pg"

    def __init__(self) -> None:
        self.error: BaseException | None = ConnectionRefusedError(111, "Connection refused")

    async def tables(self) -> list:
        if self.error is not None:
            raise self.error
        return []


def test_transitions_are_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    board, source = HealthBoard(), Failing()
    caplog.set_level(logging.INFO, "fedgate.health")
    assert asyncio.run(board.read_tables(source)) is None
    first = board["pg"]
    assert first.state == DOWN and "Connection refused" in (first.last_error or "")
    source.error = PgError("28000", 'role "nobody" does not exist')
    assert asyncio.run(board.read_tables(source)) is None
    assert board["pg"].since == first.since and board["pg"].last_error == 'role "nobody" does not exist'
    source.error = None
    assert asyncio.run(board.read_tables(source)) == []
    assert asyncio.run(board.read_tables(source)) == []
    assert board["pg"].state == UP and not board.is_down("pg")
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    assert messages[0].startswith('source "pg" is unavailable: [Errno 111]')
    assert messages[1].startswith('source "pg" is up again')


def test_an_unexpected_error_is_the_source_down_too() -> None:
    board, source = HealthBoard(), Failing()
    source.error = RuntimeError("driver bug")
    assert asyncio.run(board.read_tables(source)) is None
    assert board["pg"].last_error == "RuntimeError: driver bug"
