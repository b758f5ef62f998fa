"""A statement that waits for Spark to start tells the client first.

A cold Spark session takes seconds to start (tens on a busy machine); the statement that
meets it gets a NOTICE before the wait, sent at once, so psql shows it while it waits
(docs/design.md §6). Through the real gateway with a real client: the first Spark
statement of a fresh gateway gets the notice, well before its rows; the next does not;
after `spark_idle_stop_s` stopped the session, the next Spark statement is told again.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import psycopg
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway

pytestmark = pytest.mark.spark

# Two sources, so the join is federated and runs on the engine (one source would answer
# the whole statement itself, and no engine would start).
JOIN = "select x.k, y.v from left_side.one x join right_side.two y on x.k = y.k order by 1"


def _serve(root: Path, engine: str = "") -> Iterator[GatewayProcess]:
    left, right = root / "left", root / "right"
    left.mkdir()
    right.mkdir()
    (left / "one.csv").write_text("k\n1\n2\n")
    (right / "two.csv").write_text("k,v\n1,a\n2,b\n")
    config = ('[engine]\nspark_master = "local[2]"\nspark_reads_sources = "never"\n' + engine +
              '[engine.spark_conf]\n"spark.driver.memory" = "1g"\n'
              f'[sources.left_side]\nkind = "csv"\npath = {json.dumps(str(left))}\n'
              f'[sources.right_side]\nkind = "csv"\npath = {json.dumps(str(right))}\n')
    process = start_gateway(config, root / "gateway")
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    yield from _serve(tmp_path_factory.mktemp("spark_start_notice"))


@pytest.fixture
def idle_stopping_gateway(tmp_path: Path) -> Iterator[GatewayProcess]:
    yield from _serve(tmp_path, "spark_idle_stop_s = 5\n")


def _run(conn: psycopg.Connection, sql: str) -> tuple[list[tuple], list[tuple[float, str, str, str]], float]:
    """The rows of `sql`; the notices it brought, each as (when it arrived, severity,
    SQLSTATE, message); and when the rows had all arrived (time.monotonic())."""
    notices: list[tuple[float, str, str, str]] = []

    def collect(diagnostic: psycopg.errors.Diagnostic) -> None:
        # Read now: a Diagnostic's fields are only valid during the callback.
        notices.append((time.monotonic(), diagnostic.severity_nonlocalized or "",
                        diagnostic.sqlstate or "", diagnostic.message_primary or ""))

    conn.add_notice_handler(collect)
    try:
        rows = conn.execute(sql).fetchall()
        return rows, notices, time.monotonic()
    finally:
        conn.remove_notice_handler(collect)


def test_the_first_spark_statement_is_told_it_waits_for_the_start(gateway: GatewayProcess) -> None:
    with psycopg.connect(gateway.dsn, autocommit=True, connect_timeout=10) as conn:
        # DuckDB statements never wait for an engine start: no notice.
        rows, notices, _ = _run(conn, JOIN)
        assert rows == [(1, "a"), (2, "b")] and notices == []
        conn.execute("SET fedgate.engine = 'spark'")
        asked = time.monotonic()
        rows, notices, answered = _run(conn, JOIN)
        assert rows == [(1, "a"), (2, "b")]
        assert [notice[1:] for notice in notices] == [(
            "NOTICE", "00000", "starting the Spark engine (local[2]); the first Spark statement waits for it")]
        arrived = notices[0][0]
        # Sent before the wait, not with the rows: the JVM's start lies between them.
        assert arrived - asked < 2.0 and answered - arrived > 1.0, (asked, arrived, answered)

        rows, notices, _ = _run(conn, JOIN)
        assert rows == [(1, "a"), (2, "b")] and notices == []
    with psycopg.connect(gateway.dsn, autocommit=True, connect_timeout=10) as other:
        other.execute("SET fedgate.engine = 'spark'")
        rows, notices, _ = _run(other, JOIN)  # the session is the process's: already up
        assert rows == [(1, "a"), (2, "b")] and notices == []
    log = gateway.log()
    starting = log.index("Spark session on local[2] starting")
    assert log.index("Spark session on local[2] started in", starting) > starting


async def test_a_statement_after_the_idle_stop_is_told_again(idle_stopping_gateway: GatewayProcess) -> None:
    gateway = idle_stopping_gateway
    notices: list[tuple[str, str, str]] = []
    conn = await asyncpg.connect(gateway.dsn, command_timeout=300)
    conn.add_log_listener(lambda _, message: notices.append(
        (message.severity_en, message.sqlstate, message.message)))
    try:
        await conn.execute("SET fedgate.engine = 'spark'")
        told = ("NOTICE", "00000", "starting the Spark engine (local[2]); the first Spark statement waits for it")
        # asyncpg prepares first: this notice comes with the Describe, which starts Spark.
        assert [tuple(r) for r in await conn.fetch(JOIN)] == [(1, "a"), (2, "b")]
        assert notices == [told]
        deadline = time.monotonic() + 60
        while "stopped after" not in gateway.log():
            assert time.monotonic() < deadline, gateway.log()
            await asyncio.sleep(0.5)
        # The statement is prepared already: this one comes with the Execute.
        assert [tuple(r) for r in await conn.fetch(JOIN)] == [(1, "a"), (2, "b")]
        assert notices == [told, told]
    finally:
        await conn.close()
