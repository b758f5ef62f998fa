"""A cancelled Spark statement stops its Spark job and the JDBC reads it started, on a
local Spark, on a standalone cluster and through Spark Connect.

The statement reads a PostgreSQL view that sleeps per row through Spark's JDBC source
(`spark_reads_sources = "always"`), so it runs for minutes unless stopped. Once the
executor's read is visibly running on PostgreSQL, the test cancels the statement by a
CancelRequest, by statement_timeout or by closing the client's socket, and checks: the
client has 57014 within 2 s (for the first two); the read's PostgreSQL backend is gone;
the Spark UI's REST API of the application shows the job ended (not running) and failed.
Meanwhile a DuckDB statement on another connection answers at once: the gateway's event
loop stays free.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import asyncpg
import psycopg
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, fresh_database
from tests.support.spark_cluster import SparkCluster
from tests.support.system import free_port

UI_ANSWER_S = 15.0

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

MODES = ("local", "standalone", "connect")
# A join across two sources, so the residual runs in the engine (one source's query would
# go to PostgreSQL whole).
SLOW = "select count(*) from pg.slow s, files.one o"
QUICK = "select count(*) from pg.small s, files.one o"
# Each row of the view sleeps 20 ms: 100,000 rows are half an hour.
SOURCE_DDL = """
CREATE TABLE small (id int PRIMARY KEY, v text);
INSERT INTO small SELECT g, 'v' || g FROM generate_series(1, 1000) g;
CREATE VIEW slow AS SELECT g AS id, pg_sleep(0.02)::text AS nap FROM generate_series(1, 100000) g;
"""


class Setup:
    def __init__(self, cluster: SparkCluster, source_dsn: str, gateways: dict[str, GatewayProcess],
                 ui_ports: dict[str, int]) -> None:
        self.cluster = cluster
        self.source_dsn = source_dsn
        self.gateways = gateways
        self.ui_ports = ui_ports


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("spark_cancel")
    source_dsn = fresh_database(postgres_server, "spark_cancel")
    with psycopg.connect(source_dsn, autocommit=True) as conn:
        conn.execute(SOURCE_DDL)
    cluster = SparkCluster(root / "cluster")
    gateways: dict[str, GatewayProcess] = {}
    try:
        cluster.start()
        ui_ports = {"connect": cluster.connect_ui_port}
        files = root / "files"
        files.mkdir()
        (files / "one.csv").write_text("k\n1\n")
        source = (f'[sources.pg]\nkind = "postgres"\ndsn = {json.dumps(source_dsn)}\n'
                  f'[sources.files]\nkind = "csv"\npath = {json.dumps(str(files))}\n')
        for mode in MODES:
            if mode == "connect":
                engine = cluster.gateway_engine_config(mode, spark_reads_sources="always")
            else:
                ui_ports[mode] = free_port()
                conf = {"spark.ui.enabled": "true", "spark.ui.port": str(ui_ports[mode])}
                if mode == "local":
                    engine = ('[engine]\nspark_master = "local[1]"\nspark_reads_sources = "always"\n'
                              '[engine.spark_conf]\n' + "".join(f'"{k}" = "{v}"\n' for k, v in conf.items())
                              + '"spark.driver.memory" = "1g"\n')
                else:
                    engine = cluster.gateway_engine_config(mode, spark_conf=conf,
                                                           spark_reads_sources="always")
            engine = engine.replace('default = "spark"\n', "")  # DuckDB by default, Spark by SET
            gateways[mode] = start_gateway(engine + source, root / f"gateway_{mode}")
        # The three cold starts (two driver JVMs, a Connect session, the executors) overlap
        # here instead of following one another in the first test of each mode.
        with ThreadPoolExecutor(len(MODES)) as pool:
            for answer in pool.map(_warm_now, gateways.values()):
                assert answer == (1000,)
        yield Setup(cluster, source_dsn, gateways, ui_ports)
    finally:
        for gateway in gateways.values():
            gateway.stop()
        cluster.stop()


def _warm_now(gateway: GatewayProcess) -> tuple | None:
    with psycopg.connect(gateway.dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute("SET fedgate.engine = 'spark'")
        return conn.execute(QUICK).fetchone()


async def _connect(gateway: GatewayProcess, engine: str = "spark") -> psycopg.AsyncConnection:
    conn = await psycopg.AsyncConnection.connect(gateway.dsn, autocommit=True, connect_timeout=10)
    await conn.execute(f"SET fedgate.engine = '{engine}'")
    return conn


def spark_reads(source_dsn: str) -> list[str]:
    """The queries Spark's JDBC reads run on the source now."""
    with psycopg.connect(source_dsn, autocommit=True) as conn:
        return [r[0] for r in conn.execute(
            "SELECT query FROM pg_stat_activity WHERE application_name LIKE 'fedgate-spark-%' "
            "AND state = 'active'").fetchall()]


async def _until(check, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while True:
        value = await asyncio.to_thread(check)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        await asyncio.sleep(0.2)


def _jobs(ui_port: int) -> list[dict]:
    """Every job of the one application behind the Spark UI on `ui_port`. Under load the
    UI has answered a request with an empty body once (a CI run, Spark Connect's UI), so a
    body that is not JSON is asked for again, for at most UI_ANSWER_S."""
    base = f"http://127.0.0.1:{ui_port}/api/v1/applications"
    deadline = time.monotonic() + UI_ANSWER_S
    while True:
        try:
            with urllib.request.urlopen(base, timeout=30) as response:
                app = json.load(response)[0]["id"]
            with urllib.request.urlopen(f"{base}/{app}/jobs", timeout=30) as response:
                return json.load(response)
        except json.JSONDecodeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


async def _warm(setup: Setup, mode: str) -> None:
    """The Spark session started (a cold start is not what these tests time)."""
    conn = await _connect(setup.gateways[mode])
    try:
        cursor = await conn.execute(QUICK)
        assert (await cursor.fetchone()) == (1000,)
    finally:
        await conn.close()


async def _started_reading(setup: Setup, mode: str) -> None:
    """A JDBC read of the slow view runs on PostgreSQL, and a job of `mode`'s gateway runs
    (the three gateways share the source: a read alone may be another gateway's)."""
    await _until(lambda: any("slow" in q for q in spark_reads(setup.source_dsn)), 60,
                 "Spark's JDBC read of the slow view running on PostgreSQL")
    await _until(lambda: any(j["status"] == "RUNNING" for j in _jobs(setup.ui_ports[mode])),
                 60, f"a Spark job of the {mode} gateway running")


async def _duckdb_answers_meanwhile(setup: Setup, mode: str) -> float:
    started = time.monotonic()
    conn = await _connect(setup.gateways[mode], "duckdb")
    try:
        cursor = await conn.execute(QUICK)
        assert (await cursor.fetchone()) == (1000,)
    finally:
        await conn.close()
    return time.monotonic() - started


def _failed_jobs(setup: Setup, mode: str) -> int:
    return sum(1 for job in _jobs(setup.ui_ports[mode]) if job["status"] == "FAILED")


async def _job_stopped(setup: Setup, mode: str, failed_before: int) -> None:
    """The read's backend is gone and the application has no running job, one more failed."""
    await _until(lambda: not any("slow" in q for q in spark_reads(setup.source_dsn)), 5,
                 "the JDBC read cancelled on PostgreSQL")

    def ended() -> bool:
        jobs = _jobs(setup.ui_ports[mode])
        return not any(j["status"] == "RUNNING" for j in jobs) \
            and sum(1 for j in jobs if j["status"] == "FAILED") > failed_before

    await _until(ended, 10, f"the Spark job ended as failed: {_jobs(setup.ui_ports[mode])}")


@pytest.mark.parametrize("mode", MODES)
async def test_cancel_request_stops_the_spark_job(setup: Setup, mode: str) -> None:
    await _warm(setup, mode)
    failed_before = await asyncio.to_thread(_failed_jobs, setup, mode)
    conn = await _connect(setup.gateways[mode])
    try:
        running = asyncio.ensure_future(conn.execute(SLOW))
        await _started_reading(setup, mode)
        assert await _duckdb_answers_meanwhile(setup, mode) < 2.0
        cancelled = time.monotonic()
        await conn.cancel_safe()
        with pytest.raises(psycopg.errors.QueryCanceled):
            await asyncio.wait_for(running, 10)
        assert time.monotonic() - cancelled < 2.0
        await _job_stopped(setup, mode, failed_before)
        # The jobs say who ran them (a description; on Connect, a tag).
        jobs = await asyncio.to_thread(_jobs, setup.ui_ports[mode])
        labels = [j.get("description") or "" for j in jobs] + [t for j in jobs for t in j.get("jobTags", [])]
        assert any("user fedgate" in label and "statement" in label for label in labels), labels
        cursor = await conn.execute(QUICK)  # the session goes on
        assert (await cursor.fetchone()) == (1000,)
    finally:
        await conn.close()


@pytest.mark.parametrize("mode", MODES)
async def test_statement_timeout_stops_the_spark_job(setup: Setup, mode: str) -> None:
    await _warm(setup, mode)
    failed_before = await asyncio.to_thread(_failed_jobs, setup, mode)
    conn = await _connect(setup.gateways[mode])
    try:
        await conn.execute("SET statement_timeout = '8s'")
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            await asyncio.wait_for(conn.execute(SLOW), 20)
        assert time.monotonic() - started < 8.0 + 2.0
        await _job_stopped(setup, mode, failed_before)
    finally:
        await conn.close()


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_gone_stops_its_spark_job(setup: Setup, mode: str) -> None:
    await _warm(setup, mode)
    failed_before = await asyncio.to_thread(_failed_jobs, setup, mode)
    conn = await asyncpg.connect(setup.gateways[mode].dsn, timeout=10)
    await conn.execute("SET fedgate.engine = 'spark'")
    running = asyncio.ensure_future(conn.fetch(SLOW))
    await _started_reading(setup, mode)
    # The socket closes under the running statement: no Terminate, no CancelRequest.
    conn.terminate()
    with pytest.raises((asyncpg.exceptions.ConnectionDoesNotExistError, asyncpg.InterfaceError)):
        await asyncio.wait_for(running, 10)
    await _job_stopped(setup, mode, failed_before)
