"""The gateway's log, through the real process (docs/design.md §8, README "Health and logs").

- `[server] log_format = "json"`: after a mixed workload (simple and extended protocol,
  relayed and federated, DDL, a slow statement, a source stopped and started again)
  every line parses as one JSON object with time, level, logger, message, session and
  statement; the slow statement is logged once with its duration and user, the fast
  ones not at all; the source's going down and coming back are logged once each.
- text: lines logged while a session serves carry `session=` and `statement=` tags.
- a client that goes away in the middle of a large result is "connection to client lost",
  not an internal error with a traceback, and the gateway serves the next client.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import psycopg
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, start_postgres


@pytest.fixture(scope="module")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    server = start_postgres(tmp_path_factory.mktemp("logs") / "pg")
    try:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (a int); INSERT INTO t VALUES (1), (2)")
        yield server
    finally:
        try:
            server.stop()
        except RuntimeError:
            pass  # a test left it stopped; stop() has removed its files anyway


def serve(pg: PostgresServer, workdir: Path, server: str) -> GatewayProcess:
    lite = workdir / "app.db"
    workdir.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(lite) as con:
        con.execute("CREATE TABLE events (id integer, kind text)")
        con.executemany("INSERT INTO events VALUES (?, ?)", [(i, f"k{i % 3}") for i in range(50)])
    return start_gateway(f'[server]\n{server}\n'
                         f'[catalog]\nsearch_path = ["lite", "pg"]\nrefresh_seconds = 1\n'
                         f'[sources.lite]\nkind = "sqlite"\npath = "{lite}"\n'
                         f'[sources.pg]\nkind = "postgres"\ndsn = "{pg.dsn}"\n', workdir / "gw")



def wait_for_line(gateway: GatewayProcess, text: str, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while text not in gateway.log():
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not logged within {within}s:\n{gateway.log()}")
        time.sleep(0.1)


async def test_json_lines_after_a_mixed_workload(pg: PostgresServer, tmp_path: Path) -> None:
    gateway = serve(pg, tmp_path, 'log_format = "json"\nlog_min_duration_ms = 250')
    down = False
    try:
        async with await psycopg.AsyncConnection.connect(gateway.dsn, autocommit=True) as conn:
            await conn.execute("SELECT count(*) FROM events")
            await conn.execute("SELECT e.kind FROM events e JOIN pg.t ON t.a = e.id")
            await conn.execute("SELECT a FROM t WHERE a = %s", (1,), prepare=True)
            await conn.execute("CREATE TABLE pg.made_here (b text)")
            await conn.execute("SELECT count(*) FROM made_here")  # reads the catalog first
            await conn.execute("SELECT pg_sleep(0.4), a FROM pg.t WHERE a = 1")
            pid = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0]
        await asyncio.to_thread(pg.crash)
        down = True
        await asyncio.to_thread(wait_for_line, gateway, 'source \\"pg\\" is unavailable')
        await asyncio.sleep(2.5)  # more refresh rounds: still logged once
        await asyncio.to_thread(pg.start_again)
        down = False
        await asyncio.to_thread(wait_for_line, gateway, 'source \\"pg\\" is up again')
    finally:
        gateway.stop()
        if down:
            pg.start_again()
    lines = [json.loads(line) for line in gateway.log().splitlines() if line.strip()]
    for entry in lines:
        assert {"time", "level", "logger", "message", "session", "statement"} <= entry.keys(), entry
        assert datetime.fromisoformat(entry["time"]).utcoffset().total_seconds() == 0, entry
    logged = [e for e in lines if e["logger"] == "fedgate.statement"]
    # The statement after the DDL may be slow too (it reads the catalog again): only the
    # slow one is certain, and the quick ones are certain not to be there.
    slow = [e for e in logged if "pg_sleep" in e["message"]]
    assert len(slow) == 1, logged
    assert not any("pg_backend_pid" in e["message"] or "FROM events" in e["message"]
                   for e in logged), logged
    assert slow[0]["duration_ms"] >= 400 and slow[0]["user"] == "fedgate", slow
    assert "pg_sleep(0.4)" in slow[0]["message"] and slow[0]["session"] == pid, slow
    assert isinstance(slow[0]["statement"], int), slow
    # The refresh the statement after the DDL ran is logged under that session.
    refreshed = [e for e in lines if e["message"].startswith("catalog refreshed") and e["session"]]
    assert refreshed and refreshed[0]["session"] == pid and refreshed[0]["statement"], lines
    down_lines = [e for e in lines if e["logger"] == "fedgate.health" and e["health"] == "down"]
    up_lines = [e for e in lines if e["logger"] == "fedgate.health" and e["health"] == "up"]
    assert len(down_lines) == 1 and down_lines[0]["source"] == "pg", lines
    assert down_lines[0]["level"] == "WARNING", down_lines
    assert len(up_lines) == 1 and up_lines[0]["source"] == "pg", lines
    assert not any("exception" in e for e in lines), lines


async def test_text_lines_carry_session_and_statement(pg: PostgresServer, tmp_path: Path) -> None:
    gateway = serve(pg, tmp_path, "log_min_duration_ms = 0")
    try:
        async with await psycopg.AsyncConnection.connect(gateway.dsn, autocommit=True) as conn:
            pid = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0]
            await conn.execute("CREATE TABLE pg.other_t (b text)")
            await conn.execute("SELECT count(*) FROM events")
    finally:
        gateway.stop()
    # Up to the shutdown: how a connection that is closing then ends is not this test's.
    log = gateway.log().split(" shutting down")[0]
    assert "Traceback" not in log, log
    statements = [line for line in log.splitlines() if " fedgate.statement: duration: " in line]
    assert len(statements) == 3, log
    for number, line in enumerate(statements, start=1):
        assert f" session={pid} statement={number} " in line, line
        assert "user=fedgate" in line, line
    refreshed = [line for line in log.splitlines() if "catalog refreshed" in line
                 and f"session={pid}" in line]
    assert refreshed and " statement=3" in refreshed[0], log


async def test_client_lost_mid_result_is_not_an_internal_error(pg: PostgresServer,
                                                               tmp_path: Path) -> None:
    gateway = serve(pg, tmp_path, "")
    try:
        # Far more rows than psql reads before it is killed: the gateway is still sending.
        endless = ("SELECT g, repeat('x', 40) FROM generate_series(1, 50000000) g, events "
                   "WHERE events.id = g % 50")
        psql = subprocess.Popen(["psql", gateway.dsn, "-Atc", endless],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        await asyncio.sleep(2)
        psql.send_signal(signal.SIGKILL)
        psql.wait()
        wait_for_line(gateway, "connection to client lost")
        async with await psycopg.AsyncConnection.connect(gateway.dsn, autocommit=True) as conn:
            assert await (await conn.execute("SELECT count(*) FROM events")).fetchone() == (50,)
    finally:
        gateway.stop()
    log = gateway.log().split(" shutting down")[0]
    assert "internal error" not in log and "Traceback" not in log, log
