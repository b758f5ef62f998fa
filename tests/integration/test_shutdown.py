"""SIGTERM shuts the gateway down gracefully, alone and with workers.

The listening socket closes at once; idle sessions get FATAL 57P01 right away; a running
statement (a relayed pg_sleep on a PostgreSQL source) finishes and its client gets the
rows, then 57P01; shutdown_timeout_s or a second signal end running statements with 57P01
at once. The gateway exits 0 with no traceback in its log.
"""

from __future__ import annotations

import json
import signal
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support import rawpg
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer

SHUTDOWN = ("57P01", "terminating connection due to administrator command")


@pytest.fixture(scope="module")
def source(postgres_server: PostgresServer) -> str:
    """A database with a one-row table `t` (a statement naming it is relayed) and a view
    `v` whose rows take `s` seconds each (the express lane takes repeats of a query of
    it, which has no function call of its own)."""
    database = f"sd_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    dsn = postgres_server.dsn.rsplit("/", 1)[0] + "/" + database
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (x int); INSERT INTO t VALUES (7)")
        conn.execute("CREATE TABLE d (s float); INSERT INTO d VALUES (0.1), (3)")
        conn.execute("CREATE VIEW v AS SELECT s, pg_sleep(s)::text AS z FROM d")
    return dsn


def serve(source: str, workdir: Path, timeout_s: float, workers: int | None = None
          ) -> GatewayProcess:
    config = (f'[server]\nshutdown_timeout_s = {timeout_s}\n[catalog]\nsearch_path = ["pg"]\n'
              f'[sources.pg]\nkind = "postgres"\ndsn = {json.dumps(source)}\n')
    return start_gateway(config, workdir, workers=workers)


@pytest.fixture
def stopped_at_the_end(request: pytest.FixtureRequest) -> Iterator[list[GatewayProcess]]:
    started: list[GatewayProcess] = []
    yield started
    for gateway in started:
        gateway.stop()


def sleeping(gateway: GatewayProcess, seconds: float) -> rawpg.RawPG:
    """A session whose statement, relayed to PostgreSQL, runs for `seconds`."""
    conn = rawpg.RawPG.connect(gateway.host, gateway.port, timeout=60)
    conn.send(rawpg.query(f"select x, pg_sleep({seconds}) from t"))
    return conn


def idle(gateway: GatewayProcess, sessions: int) -> list[rawpg.RawPG]:
    conns = [rawpg.RawPG.connect(gateway.host, gateway.port) for _ in range(sessions)]
    for conn in conns:
        assert rawpg.data_rows(conn.simple("select x from t")) == [["7"]]
    return conns


def fatal(messages: list[rawpg.Message]) -> tuple[str, str]:
    errors = [m for m in messages if m.type == "E"]
    assert len(errors) == 1, messages
    return errors[0].sqlstate, errors[0].fields["M"]


def ends_cleanly(gateway: GatewayProcess, within: float) -> None:
    assert gateway.proc.wait(within) == 0
    log = gateway.log()
    assert "Traceback" not in log and "CancelledError" not in log, log


def refuses_new_connections(gateway: GatewayProcess) -> bool:
    """The listening socket is closed: a connect is refused (not left in a backlog)."""
    try:
        socket.create_connection((gateway.host, gateway.port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.parametrize("workers", [None, 2])
def test_sigterm_lets_the_running_statement_finish(
        source: str, tmp_path: Path, stopped_at_the_end: list[GatewayProcess],
        workers: int | None) -> None:
    gateway = serve(source, tmp_path, timeout_s=30, workers=workers)
    stopped_at_the_end.append(gateway)
    waiting = idle(gateway, 4)  # with two workers, on both of them
    running = sleeping(gateway, 3)
    time.sleep(0.5)  # the statement runs on the source
    sent = time.monotonic()
    gateway.proc.send_signal(signal.SIGTERM)
    for conn in waiting:  # idle sessions end at once
        assert fatal(conn.expect_closed(timeout=2)) == SHUTDOWN
    assert time.monotonic() - sent < 2
    assert refuses_new_connections(gateway)
    answer = running.read_until_ready(timeout=10)  # the statement's rows, then goodbye
    assert rawpg.data_rows(answer) == [["7", ""]] and answer[-1].type == "Z"
    assert fatal(running.expect_closed(timeout=5)) == SHUTDOWN
    assert time.monotonic() - sent >= 2  # it did run to its end
    ends_cleanly(gateway, within=10)


def test_sigterm_lets_an_express_lane_statement_finish(
        source: str, tmp_path: Path, stopped_at_the_end: list[GatewayProcess]) -> None:
    gateway = serve(source, tmp_path, timeout_s=30)
    stopped_at_the_end.append(gateway)
    conn = rawpg.RawPG.connect(gateway.host, gateway.port, timeout=30)
    for _ in range(3):
        assert rawpg.data_rows(conn.simple("select s from v where s = 0.1")) == [["0.1"]]
    # The repeats ran on the express lane, in the socket's callbacks: the session's task
    # waits for input meanwhile, and must not be taken for idle.
    assert rawpg.data_rows(conn.simple("show fedgate.express_statements")) == [["2"]]
    conn.send(rawpg.query("select s from v where s = 3.0"))
    time.sleep(0.5)
    sent = time.monotonic()
    gateway.proc.send_signal(signal.SIGTERM)
    answer = conn.read_until_ready(timeout=10)
    assert rawpg.data_rows(answer) == [["3"]] and time.monotonic() - sent >= 2
    assert fatal(conn.expect_closed(timeout=5)) == SHUTDOWN
    ends_cleanly(gateway, within=10)


@pytest.mark.parametrize("workers", [None, 2])
def test_second_sigterm_ends_running_statements_at_once(
        source: str, tmp_path: Path, stopped_at_the_end: list[GatewayProcess],
        workers: int | None) -> None:
    gateway = serve(source, tmp_path, timeout_s=60, workers=workers)
    stopped_at_the_end.append(gateway)
    running = sleeping(gateway, 60)
    time.sleep(0.5)
    gateway.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    sent = time.monotonic()
    gateway.proc.send_signal(signal.SIGTERM)
    assert fatal(running.expect_closed(timeout=10)) == SHUTDOWN
    assert time.monotonic() - sent < 3
    ends_cleanly(gateway, within=15)


def test_shutdown_timeout_ends_running_statements(
        source: str, tmp_path: Path, stopped_at_the_end: list[GatewayProcess]) -> None:
    gateway = serve(source, tmp_path, timeout_s=1)
    stopped_at_the_end.append(gateway)
    running = sleeping(gateway, 60)
    time.sleep(0.5)
    sent = time.monotonic()
    gateway.proc.send_signal(signal.SIGTERM)
    assert fatal(running.expect_closed(timeout=10)) == SHUTDOWN
    assert 0.9 <= time.monotonic() - sent < 4
    ends_cleanly(gateway, within=15)
