"""Spark failures end, and the gateway never blocks on them: each test kills or stops a
real cluster process (worker, master, Spark Connect server, the gateway itself) and checks
the statement's error, that a DuckDB statement answers meanwhile, and that the next Spark
statement works once the process is back, without restarting the gateway.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.integration.test_spark_cancel import QUICK, SLOW, SOURCE_DDL, spark_reads
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, fresh_database
from tests.support.spark_cluster import SparkCluster
from tests.support.system import free_port

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

# Long enough for a driver JVM to start on a busy machine (a start is not a failure);
# Connect sessions start no JVM here, so the Connect tests use a shorter one: it bounds
# the client's retries against a lost server, which the test waits out once.
CONNECT_TIMEOUT_S = 30
CONNECT_SERVER_TIMEOUT_S = 8
# spark_job_timeout_s also bounds a cold first statement (a driver JVM's start, then its
# executor's), which took over 35 s on a busy 2-core machine; statement_timeout bounds
# only the statement it is set for, one on warm executors whose JDBC read starts within
# seconds. A lost worker's statement waits the whole timeout; the standalone and the
# Connect one wait it out side by side.
JOB_TIMEOUT_S = 40
STATEMENT_TIMEOUT_S = 15
MODES = ("standalone", "connect")


class World:
    def __init__(self, root: Path, cluster: SparkCluster, source_dsn: str, sources: str) -> None:
        self.root = root
        self.cluster = cluster
        self.source_dsn = source_dsn
        self.sources = sources
        self.gateways: list[GatewayProcess] = []

    def connect_server(self) -> SparkCluster:
        """The cluster with its Connect server up: a test that stopped it leaves it to the
        next test that needs it to start it again."""
        if self.cluster.connect is None or not self.cluster.connect.alive():
            self.cluster.start_connect()
        return self.cluster

    def gateway(self, name: str, engine: str) -> GatewayProcess:
        """A gateway whose statements run on DuckDB unless they SET fedgate.engine."""
        engine = engine.replace('default = "spark"\n', "")
        gateway = start_gateway(engine + self.sources, self.root / f"gateway_{name}")
        self.gateways.append(gateway)
        return gateway


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer) -> Iterator[World]:
    root = tmp_path_factory.mktemp("spark_failures")
    source_dsn = fresh_database(postgres_server, "spark_failures")
    with psycopg.connect(source_dsn, autocommit=True) as conn:
        conn.execute(SOURCE_DDL)
    files = root / "files"
    files.mkdir()
    (files / "one.csv").write_text("k\n1\n")
    sources = (f'[sources.pg]\nkind = "postgres"\ndsn = {json.dumps(source_dsn)}\n'
               f'[sources.files]\nkind = "csv"\npath = {json.dumps(str(files))}\n')
    # Room for the Connect server's application and three gateways' at once.
    cluster = SparkCluster(root / "cluster", worker_cores=4, worker_memory="4g")
    world = World(root, cluster, source_dsn, sources)
    try:
        cluster.start()
        yield world
    finally:
        for gateway in world.gateways:
            gateway.stop()
        cluster.stop()


async def _connect(gateway: GatewayProcess, engine: str = "spark") -> psycopg.AsyncConnection:
    conn = await psycopg.AsyncConnection.connect(gateway.dsn, autocommit=True, connect_timeout=10)
    await conn.execute(f"SET fedgate.engine = '{engine}'")
    return conn


async def _answer(gateway: GatewayProcess, engine: str = "spark", timeout_s: float = 180) -> tuple:
    conn = await _connect(gateway, engine)
    try:
        cursor = await asyncio.wait_for(conn.execute(QUICK), timeout_s)
        return await cursor.fetchone()
    finally:
        await conn.close()


async def _duckdb_answers_within(gateway: GatewayProcess, seconds: float) -> None:
    started = time.monotonic()
    assert await _answer(gateway, "duckdb", timeout_s=seconds + 5) == (1000,)
    assert time.monotonic() - started < seconds, "the gateway's event loop was held up"


async def _until(check, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not await asyncio.to_thread(check):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        await asyncio.sleep(0.3)


async def _spark_fails_fast(gateway: GatewayProcess, url: str,
                            timeout_s: float = CONNECT_TIMEOUT_S) -> float:
    """A Spark statement's 08001 naming the cluster, and how long it took; a DuckDB
    statement answers while it waits."""
    conn = await _connect(gateway)
    try:
        started = time.monotonic()
        running = asyncio.ensure_future(conn.execute(QUICK))
        await _duckdb_answers_within(gateway, 3.0)
        with pytest.raises(psycopg.OperationalError) as failure:
            await asyncio.wait_for(running, timeout_s + 30)
        took = time.monotonic() - started
    finally:
        await conn.close()
    assert failure.value.sqlstate == "08001", failure.value
    assert f"Spark cluster at {url} is unavailable" in str(failure.value)
    return took


def _stop_timed(gateway: GatewayProcess) -> float:
    started = time.monotonic()
    gateway.proc.send_signal(signal.SIGTERM)
    try:
        gateway.proc.wait(30)
    except Exception:
        gateway.proc.send_signal(signal.SIGABRT)  # with PYTHONFAULTHANDLER: every thread's stack
        gateway.proc.wait(10)
        raise
    return time.monotonic() - started


async def test_a_lost_worker_fails_the_statement_and_the_next_one_works(world: World) -> None:
    """One worker lost under a statement of each kind at once. Standalone: the statement
    has no statement_timeout, spark_job_timeout_s ends it. Connect: statement_timeout
    ends it. Once the worker is back, each application gets executors again."""
    cluster = world.connect_server()
    gateways: dict[str, GatewayProcess] = {}
    for mode in MODES:
        extra = {"spark_reads_sources": "always", "spark_connect_timeout_s": CONNECT_TIMEOUT_S}
        if mode == "standalone":
            extra["spark_job_timeout_s"] = JOB_TIMEOUT_S
        gateways[mode] = world.gateway(f"lost_worker_{mode}", cluster.gateway_engine_config(mode, **extra))
    assert await asyncio.gather(*(_answer(g) for g in gateways.values())) == [(1000,)] * len(MODES)
    conns = {mode: await _connect(gateway) for mode, gateway in gateways.items()}
    try:
        await conns["connect"].execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT_S}s'")
        started: dict[str, float] = {}
        running: dict[str, asyncio.Future] = {}
        for reading, mode in enumerate(MODES, 1):
            started[mode] = time.monotonic()
            running[mode] = asyncio.ensure_future(conns[mode].execute(SLOW))
            # Each application has one core, so one read at a time: one more is this one's.
            await _until(lambda n=reading: sum("slow" in q for q in spark_reads(world.source_dsn)) >= n,
                         60, f"Spark's JDBC read running ({mode})")
        cluster.worker.kill(signal.SIGKILL)  # the machine is gone, executors with it
        for gateway in gateways.values():
            await _duckdb_answers_within(gateway, 3.0)
        for mode, timeout_s, expected in (("connect", STATEMENT_TIMEOUT_S, "statement timeout"),
                                          ("standalone", JOB_TIMEOUT_S, "spark_job_timeout_s")):
            with pytest.raises(psycopg.errors.QueryCanceled) as failure:
                await asyncio.wait_for(running[mode], 60)
            assert time.monotonic() - started[mode] < timeout_s + 3, mode
            assert expected in str(failure.value), mode
    finally:
        for conn in conns.values():
            await conn.close()
    cluster.start_worker()
    # The applications got executors again.
    assert await asyncio.gather(*(_answer(g) for g in gateways.values())) == [(1000,)] * len(MODES)


async def test_a_master_restarted_under_a_live_application(world: World) -> None:
    """The master killed under a running statement and started again on its port. A master
    without recovery state does not know the application when it is back, and has the
    worker's executors of it killed: the statement ends within spark_job_timeout_s, DuckDB
    answers meanwhile, and the next Spark statement is answered (the gateway starts its
    application again), without restarting the gateway."""
    cluster = world.cluster
    gateway = world.gateway("master_restart", cluster.gateway_engine_config(
        "standalone", spark_reads_sources="always", spark_job_timeout_s=JOB_TIMEOUT_S,
        spark_connect_timeout_s=CONNECT_TIMEOUT_S))
    assert await _answer(gateway) == (1000,)
    conn = await _connect(gateway)
    try:
        started = time.monotonic()
        running = asyncio.ensure_future(conn.execute(SLOW))
        await _until(lambda: any("slow" in q for q in spark_reads(world.source_dsn)), 60,
                     "Spark's JDBC read running")
        assert cluster.master is not None
        cluster.master.kill(signal.SIGKILL)
        await _duckdb_answers_within(gateway, 3.0)
        cluster.start_master()
        with pytest.raises(psycopg.Error):
            await asyncio.wait_for(running, JOB_TIMEOUT_S + 30)
        assert time.monotonic() - started < JOB_TIMEOUT_S + 3
    finally:
        await conn.close()
    cluster.wait_worker()  # registered again with the master that came back
    # ... which has the executors of the applications it does not know killed.
    await _until(lambda: all(w.get("coresused") == 0 for w in cluster.master_state()["workers"]),
                 60, "the old applications' executors killed")
    assert await _answer(gateway, timeout_s=JOB_TIMEOUT_S + 30) == (1000,)
    assert _stop_timed(gateway) < 15
    # The Connect server's application was left without executors the same way; the
    # tests after this one get a Connect server of their own.
    assert cluster.connect is not None
    cluster.connect.stop()


async def test_an_unreachable_master_fails_at_once_and_a_returning_one_is_used(world: World) -> None:
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    engine = ('[engine]\nspark_master = "%s"\nspark_connect_timeout_s = %d\n[engine.spark_conf]\n'
              '"spark.driver.host" = "127.0.0.1"\n"spark.driver.bindAddress" = "127.0.0.1"\n'
              '"spark.cores.max" = "1"\n"spark.executor.memory" = "1g"\n"spark.driver.memory" = "1g"\n'
              % (url, CONNECT_TIMEOUT_S))
    gateway = world.gateway("no_master", engine)
    assert await _spark_fails_fast(gateway, url) < 3.0
    assert await _spark_fails_fast(gateway, url) < 3.0  # every statement tries again
    returning = SparkCluster(world.root / "returning", master_port=port)
    try:
        returning.start(connect=False)
        assert await _answer(gateway) == (1000,)  # no gateway restart
        assert _stop_timed(gateway) < 15
    finally:
        returning.stop()


async def test_a_lost_connect_server_fails_fast_and_a_returning_one_is_used(world: World) -> None:
    cluster = world.connect_server()
    gateway = world.gateway("connect_lost", cluster.gateway_engine_config(
        "connect", spark_connect_timeout_s=CONNECT_SERVER_TIMEOUT_S))
    assert await _answer(gateway) == (1000,)
    cluster.connect.stop()
    took = await _spark_fails_fast(gateway, cluster.remote_url, CONNECT_SERVER_TIMEOUT_S)
    assert took < CONNECT_SERVER_TIMEOUT_S + 5
    # Refused at once now: the lost session was dropped, a new start probes first.
    assert await _spark_fails_fast(gateway, cluster.remote_url, CONNECT_SERVER_TIMEOUT_S) < 3.0
    cluster.start_connect(attempts=1)  # on the same port
    assert await _answer(gateway) == (1000,)  # a new session, no gateway restart
    cluster.connect.kill(signal.SIGKILL)
    assert _stop_timed(gateway) < 15  # nothing waits on the lost server's channel


async def test_shutdown_during_a_spark_statement_is_prompt_and_frees_the_cluster(world: World) -> None:
    cluster = world.cluster
    # Running statements may finish for shutdown_timeout_s (graceful shutdown): 2 s here,
    # then the Spark statement is ended and Spark itself gets at most a few seconds.
    gateway = world.gateway("shutdown", "[server]\nshutdown_timeout_s = 2\n"
                            + cluster.gateway_engine_config("standalone",
                                                            spark_reads_sources="always"))
    before = set(cluster.app_ids())
    assert await _answer(gateway) == (1000,)
    ours = set(cluster.app_ids()) - before
    assert len(ours) == 1
    conn = await _connect(gateway)
    running = asyncio.ensure_future(conn.execute(SLOW))
    await _until(lambda: any("slow" in q for q in spark_reads(world.source_dsn)), 60,
                 "Spark's JDBC read running")
    assert _stop_timed(gateway) < 15
    with pytest.raises(psycopg.Error):
        await asyncio.wait_for(running, 10)
    await _until(lambda: not ours & set(cluster.app_ids()), 20, "the application gone from the master")
    await _until(lambda: not any("slow" in q for q in spark_reads(world.source_dsn)), 20,
                 "the JDBC read gone from PostgreSQL")


async def test_an_idle_session_gives_its_cores_back_and_starts_again(world: World) -> None:
    cluster = world.cluster
    gateway = world.gateway("idle", cluster.gateway_engine_config("standalone", spark_idle_stop_s=3))
    before = set(cluster.app_ids())
    assert await _answer(gateway) == (1000,)
    ours = set(cluster.app_ids()) - before
    assert len(ours) == 1
    await _until(lambda: not ours & set(cluster.app_ids()), 30, "the idle application stopped")
    assert await _answer(gateway) == (1000,)  # started again on demand
    assert len(set(cluster.app_ids()) - before) == 1


# The README's bound on a statement whose cluster is lost: spark_stall_timeout_s + 10 s.
STALL_TIMEOUT_S = 10
LOST_BOUND_S = STALL_TIMEOUT_S + 10


async def _spark_lost(running: asyncio.Future, url: str, started: float) -> float:
    """The running statement's 08006 naming the cluster, and when it came."""
    with pytest.raises(psycopg.OperationalError) as failure:
        await asyncio.wait_for(running, LOST_BOUND_S + 30)
    took = time.monotonic() - started
    assert failure.value.sqlstate == "08006", failure.value
    assert f"Spark cluster at {url} was lost during the statement" in str(failure.value)
    return took


def _stop_all(cluster: SparkCluster, mode: str) -> None:
    """The cluster gone: the master and worker stopped (their executors with them); a
    Connect server killed outright, so its clients get no goodbye."""
    if cluster.connect is not None:
        if mode == "connect":
            cluster.connect.kill(signal.SIGKILL)
        cluster.connect.stop()
    cluster.worker.stop()
    cluster.master.stop()


async def _back(world: World, cluster: SparkCluster, gateway: GatewayProcess, mode: str) -> None:
    """The cluster back on the same ports: the next Spark statement answers, without a
    gateway restart."""
    _restore(cluster)
    if mode == "connect":
        cluster.start_connect(attempts=1)
    back = time.monotonic()
    assert await _answer(gateway, timeout_s=120) == (1000,)
    assert time.monotonic() - back < 120


async def _lost_and_back(world: World, cluster: SparkCluster, mode: str) -> None:
    """A gateway that ran Spark statements, its whole cluster stopped between statements
    and then under a running one; each time the statement ends within its bound and, once
    the cluster is back on the same ports, the next one answers."""
    url = cluster.remote_url if mode == "connect" else cluster.master_url
    gateway = world.gateway(f"lost_cluster_{mode}", cluster.gateway_engine_config(
        mode, spark_reads_sources="always", spark_stall_timeout_s=STALL_TIMEOUT_S,
        spark_connect_timeout_s=CONNECT_SERVER_TIMEOUT_S))
    assert await _answer(gateway) == (1000,)
    assert await _answer(gateway) == (1000,)  # a live application with executors

    # Gone between statements: the next one runs on the session the gateway holds.
    _stop_all(cluster, mode)
    conn = await _connect(gateway)
    try:
        started = time.monotonic()
        running = asyncio.ensure_future(conn.execute(QUICK))
        await _duckdb_answers_within(gateway, 3.0)
        if mode == "connect":  # a server that refuses connections could not be reached
            with pytest.raises(psycopg.OperationalError) as failure:
                await asyncio.wait_for(running, LOST_BOUND_S + 30)
            assert failure.value.sqlstate == "08001", failure.value
            took = time.monotonic() - started
        else:
            took = await _spark_lost(running, url, started)
        assert took < LOST_BOUND_S, f"{mode}, between statements: failed after {took:.1f} s"
    finally:
        await conn.close()
    await _back(world, cluster, gateway, mode)

    # Gone under a running statement.
    conn = await _connect(gateway)
    try:
        running = asyncio.ensure_future(conn.execute(SLOW))
        await _until(lambda: any("slow" in q for q in spark_reads(world.source_dsn)), 60,
                     f"Spark's JDBC read running ({mode})")
        stopped = time.monotonic()
        _stop_all(cluster, mode)
        await _duckdb_answers_within(gateway, 3.0)
        took = await _spark_lost(running, url, stopped)
        assert took < LOST_BOUND_S, f"{mode}, under a statement: 08006 after {took:.1f} s"
        # The lost session was dropped: a new start probes first, and is refused at once.
        assert await _spark_fails_fast(gateway, url, CONNECT_SERVER_TIMEOUT_S) < 5.0
    finally:
        await conn.close()
    await _back(world, cluster, gateway, mode)


def _restore(cluster: SparkCluster) -> None:
    """The module's cluster whole again, whatever a test stopped."""
    if cluster.master is None or not cluster.master.alive():
        cluster.start_master()
    if cluster.worker is None or not cluster.worker.alive():
        cluster.start_worker()


async def test_a_standalone_cluster_lost_under_a_live_application_fails_and_comes_back(
        world: World) -> None:
    try:
        await _lost_and_back(world, world.cluster, "standalone")
    finally:
        _restore(world.cluster)


async def test_a_connect_cluster_lost_under_a_live_application_fails_and_comes_back(
        world: World) -> None:
    try:
        await _lost_and_back(world, world.connect_server(), "connect")
    finally:
        _restore(world.cluster)


async def test_a_fragment_too_big_for_the_driver_is_refused_not_left_waiting(world: World) -> None:
    """A fragment the gateway must hand to a cluster's Spark becomes a LocalRelation in the
    driver's heap: past an eighth of spark.driver.memory (1 GB here) it is refused with
    53200 at once. Before, 10M rows ran the driver out of memory and the statement waited
    on its dead Arrow thread for as long as spark_job_timeout_s."""
    with psycopg.connect(world.source_dsn, autocommit=True) as conn:
        # about 170 MB in Arrow: 1.5M rows of an int4 and 100 characters
        conn.execute("CREATE OR REPLACE VIEW wide AS SELECT g AS id, repeat('x', 100) AS pad "
                     "FROM generate_series(1, 1500000) g")
    gateway = world.gateway("big_handover", world.cluster.gateway_engine_config(
        "standalone", spark_reads_sources="never"))
    conn = await _connect(gateway)
    try:
        started = time.monotonic()
        # not an equi-join: no dynamic filter narrows the view to the file's one key
        with pytest.raises(psycopg.errors.OutOfMemory) as refused:
            await asyncio.wait_for(conn.execute(
                "SELECT max(length(w.pad)) FROM pg.wide w JOIN files.one o ON o.k <= w.id"), 180)
        assert "is too large to hand to Spark" in str(refused.value), refused.value
        assert time.monotonic() - started < 120
        cursor = await conn.execute(QUICK)  # the session and its Spark go on
        assert await cursor.fetchone() == (1000,)
    finally:
        await conn.close()
