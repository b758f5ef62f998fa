"""Moves into PostgreSQL on Spark, written by Spark's executors (docs/design.md §5,
"Moves"; connectors.engines.spark_writes): the rows go by JDBC into a stage beside the
target, one transaction per partition, and the stage goes into the target in one
transaction. Checked on the target itself, against what PostgreSQL does with the same
INSERT over its own copy of the rows, on a local Spark and on the tests' standalone cluster.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from tests.sources.conftest import Federation
from tests.sources.test_moves import (TIMEOUT, cluster_gateway, fresh, sqlstate_of,  # noqa: F401
                                      wait_for_backend)
from tests.support.gateway_proc import GatewayProcess

pytestmark = pytest.mark.spark

DDL = ("(id int PRIMARY KEY, s varchar(5), f numeric, n int2, ts timestamptz, flag bool, "
       "label text NOT NULL)")
# pq.trap is the Parquet copy of pg.trap: the join keeps the move off PostgreSQL alone.
MOVE = ("INSERT INTO {t} SELECT t.id, p.s, t.f, t.n, t.ts, 'yes', 'x' FROM {pq} t "
        "JOIN {pg} p ON p.id = t.id")
STAGES = ("SELECT count(*) FROM pg_class WHERE relname LIKE 'fedgate_move_stage_%' "
          "AND relpersistence = 'u'")


def gateway_of(spark: str, federation: Federation, request: pytest.FixtureRequest) -> GatewayProcess:
    # the cluster starts only for the tests that ask for it
    return federation.gateway if spark == "local" else request.getfixturevalue("cluster_gateway")


async def spark_session(gateway: GatewayProcess) -> asyncpg.Connection:
    conn = await asyncpg.connect(gateway.dsn, command_timeout=300)
    await conn.execute("SET fedgate.engine = 'spark'")
    # (the default, auto, writes from the executors on a cluster only)
    await conn.execute("SET fedgate.spark_writes = on")
    return conn


async def seen_stage(pgc: asyncpg.Connection, running: asyncio.Task) -> bool:
    """Whether an unlogged stage appeared on the target while `running` ran."""
    seen = False
    while not running.done():
        seen = seen or await pgc.fetchval(STAGES) > 0
        await asyncio.sleep(0.02)
    return seen


@pytest.mark.parametrize("spark", ["local", pytest.param("standalone", marks=pytest.mark.cluster)])
async def test_the_executors_write_the_rows_and_postgresql_converts_them(
        federation: Federation, pgc: asyncpg.Connection, spark: str,
        request: pytest.FixtureRequest) -> None:
    conn = await spark_session(gateway_of(spark, federation, request))
    if spark == "standalone":  # there by default
        await conn.execute("RESET fedgate.spark_writes")
    try:
        table = f"move_executors_{spark}"
        await fresh(conn, f"pg.{table}", DDL)
        move = MOVE.format(t=f"pg.{table}", pq="pq.trap", pg="pg.trap")
        plan = [r[0] for r in await conn.fetch(f"EXPLAIN {move}")]
        assert plan[0].startswith("Move: Spark's executors write the query's rows by JDBC "
                                  f'into a stage beside table "{table}" of source "pg"'), plan
        running = asyncio.ensure_future(conn.execute(move))
        assert await seen_stage(pgc, running)
        assert await running == "INSERT 0 7"
        # PostgreSQL's own INSERT of the same query over its own rows
        await pgc.execute(f"DROP TABLE IF EXISTS {table}_truth; CREATE TABLE {table}_truth {DDL}")
        await pgc.execute(MOVE.format(t=f"{table}_truth", pq="trap", pg="trap"))
        # as PostgreSQL prints them (a NaN is no Decimal's equal)
        ours = await pgc.fetch(f"SELECT t::text FROM {table} t ORDER BY id")
        truth = await pgc.fetch(f"SELECT t::text FROM {table}_truth t ORDER BY id")
        assert ours == truth
        assert await pgc.fetchval(STAGES) == 0
        await pgc.execute(f"DROP TABLE {table}_truth")
        await conn.execute(f"DROP TABLE pg.{table}")
    finally:
        await conn.close()


@pytest.mark.parametrize(("select", "sqlstate"), [
    ("t.id, p.s || 'toolong', t.f, t.n, t.ts, 'yes', 'x'", "22001"),  # varchar(5)
    ("t.id, p.s, t.f, t.n * 10000, t.ts, 'yes', 'x'", "22003"),  # int2
    ("t.id, p.s, t.f, t.n, t.ts, 'maybe', 'x'", "22P02"),  # bool's input
    ("t.id, p.s, t.f, t.n, t.ts, 'yes', p.s", "23502"),  # trap 7's s is NULL
    ("t.id % 2, p.s, t.f, t.n, t.ts, 'yes', 'x'", "23505"),
])
async def test_a_failing_move_leaves_the_target_and_no_stage(
        federation: Federation, pgc: asyncpg.Connection, select: str, sqlstate: str) -> None:
    conn = await spark_session(federation.gateway)
    try:
        await fresh(conn, "pg.move_executors_fails", DDL)
        await conn.execute("INSERT INTO pg.move_executors_fails VALUES (100, 'kept', 1, 1, NULL, true, 'k')")
        move = (f"INSERT INTO pg.move_executors_fails SELECT {select} FROM pq.trap t "
                "JOIN pg.trap p ON p.id = t.id")
        truth = await pgc.fetch("SELECT * FROM move_executors_fails")
        assert await sqlstate_of(conn, move) == sqlstate
        assert await pgc.fetch("SELECT * FROM move_executors_fails") == truth
        assert await pgc.fetchval(STAGES) == 0
        await conn.execute("DROP TABLE pg.move_executors_fails")
    finally:
        await conn.close()


async def test_create_table_as_on_the_executors(federation: Federation, pgc: asyncpg.Connection) -> None:
    conn = await spark_session(federation.gateway)
    try:
        await conn.execute("DROP TABLE IF EXISTS pg.move_executors_ctas")
        tag = await asyncio.wait_for(conn.execute(
            "CREATE TABLE pg.move_executors_ctas AS SELECT t.id, p.s, t.n * 2 AS twice "
            "FROM pq.trap t JOIN pg.trap p ON p.id = t.id"), TIMEOUT)
        assert tag == "SELECT 7"
        # EXPLAIN ANALYZE runs it too, and says where the time went
        await conn.execute("DROP TABLE pg.move_executors_ctas")
        analyzed = [r[0] for r in await conn.fetch(
            "EXPLAIN ANALYZE CREATE TABLE pg.move_executors_ctas AS SELECT t.id, p.s, t.n * 2 AS twice "
            "FROM pq.trap t JOIN pg.trap p ON p.id = t.id")]
        assert any(line.startswith("Spark's executors wrote 7 rows into stage ") for line in analyzed)
        assert "Rows moved: 7" in analyzed
        rows = await pgc.fetch("SELECT id, s, twice FROM move_executors_ctas ORDER BY id")
        truth = await pgc.fetch("SELECT t.id, p.s, t.n * 2 AS twice FROM trap t "
                                "JOIN trap p ON p.id = t.id ORDER BY id")
        assert [tuple(r) for r in rows] == [tuple(r) for r in truth]
        # the catalog knows the new table at once
        assert await conn.fetchval("SELECT count(*) FROM pg.move_executors_ctas") == 7
        assert await pgc.fetchval(STAGES) == 0
        await conn.execute("DROP TABLE pg.move_executors_ctas")
    finally:
        await conn.close()


async def test_explain_says_why_the_executors_do_not_write(federation: Federation) -> None:
    conn = await spark_session(federation.gateway)
    try:
        await fresh(conn, "pg.move_executors_why", "(id int PRIMARY KEY, s text)")
        move = "INSERT INTO pg.move_executors_why SELECT t.id, p.s FROM pq.trap t JOIN pg.trap p ON p.id = t.id"
        for setting, why in (("auto", "a local Spark (fedgate.spark_writes = auto: on a cluster only)"),
                             ("off", "fedgate.spark_writes = off")):
            await conn.execute(f"SET fedgate.spark_writes = {setting}")
            assert f"  Not written by Spark's executors: {why}" in \
                [r[0] for r in await conn.fetch(f"EXPLAIN {move}")]
        await conn.execute("SET fedgate.spark_writes = on")
        with pytest.raises(asyncpg.InvalidParameterValueError):
            await conn.execute("SET fedgate.spark_writes = maybe")
        returning = [r[0] for r in await conn.fetch(f"EXPLAIN {move} RETURNING id")]
        assert "  Not written by Spark's executors: RETURNING and ON CONFLICT are the target's " \
               "own INSERT's" in returning
        async with conn.transaction():
            inside = [r[0] for r in await conn.fetch(f"EXPLAIN {move}")]
        assert "  Not written by Spark's executors: inside a transaction block the move joins " \
               "the block's link" in inside
        # the rows of both still arrive, through the gateway's COPY
        assert await conn.execute(f"{move} RETURNING id") == "INSERT 0 7"
        # a read-only session writes nothing, on the executors' path too
        await conn.execute("SET default_transaction_read_only = on")
        assert await sqlstate_of(conn, move) == "25006"
        await conn.execute("RESET default_transaction_read_only")
        await conn.execute("DROP TABLE pg.move_executors_why")
    finally:
        await conn.close()


async def no_stage_soon(pgc: asyncpg.Connection) -> bool:
    """No stage left once the executors' last INSERTs have let go (at most 30 s)."""
    for _ in range(300):
        if await pgc.fetchval(STAGES) == 0:
            return True
        await asyncio.sleep(0.1)
    return False


@pytest.mark.parametrize("stop", ["statement_timeout", "cancel"])
async def test_a_move_stopped_while_the_executors_write_leaves_nothing(
        federation: Federation, pgc: asyncpg.Connection, stop: str) -> None:
    conn = await spark_session(federation.gateway)
    try:
        await conn.execute("DROP TABLE IF EXISTS pg.move_executors_nums")
        await conn.execute("CREATE TABLE pg.move_executors_nums AS "
                           "SELECT g AS k FROM generate_series(1, 400000) g")
        await fresh(conn, "pg.move_executors_stopped", "(id bigint PRIMARY KEY, s text)")
        move = ("INSERT INTO pg.move_executors_stopped SELECT n.k * 10 + t.id, t.s "
                "FROM pq.trap t CROSS JOIN pg.move_executors_nums n")
        if stop == "statement_timeout":
            await conn.execute("SET statement_timeout = '4s'")
            assert await sqlstate_of(conn, move) == "57014"
            await conn.execute("RESET statement_timeout")
        else:
            running = asyncio.ensure_future(conn.execute(move))
            # Until the executors write: their INSERTs into the stage run there.
            await wait_for_backend(pgc, "INSERT INTO %fedgate_move_stage_%")
            running.cancel()  # asyncpg sends a CancelRequest
            with pytest.raises(asyncio.CancelledError):
                await running
            assert await conn.fetchval("SELECT 1") == 1
        assert await pgc.fetchval("SELECT count(*) FROM move_executors_stopped") == 0
        assert await no_stage_soon(pgc)
        await conn.execute("DROP TABLE pg.move_executors_stopped")
        await conn.execute("DROP TABLE pg.move_executors_nums")
    finally:
        await conn.close()
