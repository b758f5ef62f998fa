"""What only a PostgreSQL source can answer, answered by it when the whole statement is its.

With `fedgate.relay` off, a statement whose tables all live in one PostgreSQL source (or
that reads no table, with that source first on the search path) ships whole to it. Three
constructs are then PostgreSQL's own answer, compared here with a real PostgreSQL 15 over
the conformance tables (tests/conformance/world.py); over the Parquet copy the engine
answers the first two alike where it can (an array constructor spread into the call's
arguments) and refuses (0A000) the rest, never answering otherwise:
- rows of no columns (`SELECT FROM t`): a RowDescription of no fields, a DataRow of no
  columns per row and the tag `SELECT n`, in the simple and the extended protocol, text
  and binary (psql, psycopg, asyncpg);
- a VARIADIC argument (`concat_ws(VARIADIC ARRAY[...])`), which sqlglot cannot parse;
- WITH RECURSIVE ... SEARCH/CYCLE, unless a result column is the record[] they make.
"""

from __future__ import annotations

import shutil
import subprocess

import asyncpg
import psycopg
import pytest

from tests.conformance.world import World, conformance_world
from tests.support.answers import assert_described_alike, described_names, error_of, simple

RELAY_OFF = ("SET fedgate.relay = off",)

ANSWERED = [
    "SELECT FROM t",
    "SELECT FROM t WHERE id < 3",
    "SELECT FROM t JOIN u ON u.g = t.g WHERE t.id < 5",
    "SELECT",
    "SELECT concat_ws(',', VARIADIC ARRAY['a', 'b'])",
    "SELECT concat(VARIADIC ARRAY[s, 'x']) FROM t ORDER BY id",
    "SELECT format('%s-%s', VARIADIC ARRAY[s, (id)::text]), id FROM t ORDER BY id",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
    "SEARCH DEPTH FIRST BY n SET ord SELECT n FROM r ORDER BY ord",
    "WITH RECURSIVE r(n) AS (SELECT id FROM t WHERE id = 1 UNION ALL SELECT n + 1 FROM r "
    "WHERE n < 3) CYCLE n SET is_cycle USING path SELECT n, is_cycle FROM r ORDER BY n",
]
# A record[] result column (SEARCH's ordering column, CYCLE's path): refused everywhere.
REFUSED_EVERYWHERE = [
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
    "SEARCH DEPTH FIRST BY n SET ord SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
    "CYCLE n SET c USING path SELECT path FROM r",
]


@pytest.fixture(scope="module")
def world(postgres_server, tmp_path_factory):
    with conformance_world(postgres_server, tmp_path_factory.mktemp("shipped")) as world:
        yield world


@pytest.mark.parametrize("sql", ANSWERED)
async def test_the_postgres_source_answers(world: World, sql: str) -> None:
    await assert_described_alike(world.truth, world.pg_gateway.dsn, sql, *RELAY_OFF)
    assert await described_names(world.pg_gateway.dsn, sql, *RELAY_OFF) == \
        await described_names(world.truth, sql)


@pytest.mark.parametrize("sql", ANSWERED)
async def test_relayed_as_written(world: World, sql: str) -> None:
    """With the relay on (the default), PostgreSQL answers what it is handed, as before."""
    await assert_described_alike(world.truth, world.pg_gateway.dsn, sql)
    assert simple(world.pg_gateway.dsn, sql) == simple(world.truth, sql)


@pytest.mark.parametrize("sql", ANSWERED)
async def test_over_parquet(world: World, sql: str) -> None:
    """The engine answers rows of no columns (planner.empty_select) and VARIADIC array
    constructors (planner.variadic_arrays) as PostgreSQL does, and refuses SEARCH/CYCLE."""
    if "RECURSIVE" in sql:
        assert (await error_of(world.parquet_gateway.dsn, sql)).sqlstate == "0A000"
        return
    await assert_described_alike(world.truth, world.parquet_gateway.dsn, sql)
    assert await described_names(world.parquet_gateway.dsn, sql) == await described_names(world.truth, sql)


@pytest.mark.parametrize("sql", REFUSED_EVERYWHERE)
async def test_record_columns_refused(world: World, sql: str) -> None:
    assert (await error_of(world.pg_gateway.dsn, sql, *RELAY_OFF)).sqlstate == "0A000"
    assert (await error_of(world.parquet_gateway.dsn, sql)).sqlstate == "0A000"


async def test_a_variadic_marker_is_no_function(world: World) -> None:
    """The call the gateway writes for VARIADIC cannot be called by name."""
    error = await error_of(world.pg_gateway.dsn, "SELECT fedgate_variadic(ARRAY[1])", *RELAY_OFF)
    assert error.sqlstate == "42883"


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("prepare", [False, True])
def test_no_columns_through_psycopg(world: World, binary: bool, prepare: bool) -> None:
    """Simple (prepare=False) and extended protocol, text and binary rows: no fields,
    one empty row per row, and PostgreSQL's row count in the tag."""
    answers = []
    for dsn, setup in ((world.truth, ()), (world.pg_gateway.dsn, RELAY_OFF)):
        with psycopg.connect(dsn, autocommit=True) as conn:
            for statement in setup:
                conn.execute(statement)
            cursor = conn.cursor(binary=binary)
            cursor.execute("SELECT FROM t WHERE id < 4", prepare=prepare)
            answers.append((cursor.description, cursor.rowcount, cursor.statusmessage,
                            cursor.fetchall()))
    assert answers[1] == answers[0]
    assert answers[0][2] == "SELECT 3"


def test_no_columns_through_psql(world: World) -> None:
    path = shutil.which("psql")
    assert path, "psql is not on PATH (install postgresql-client)"
    outputs = []
    for dsn, setup in ((world.truth, "SET application_name = 'psql'"), (world.pg_gateway.dsn, RELAY_OFF[0])):
        done = subprocess.run([path, dsn, "-X", "-c", setup, "-c", "SELECT FROM t",
                               "-c", "SELECT FROM t WHERE false"],
                              capture_output=True, text=True, timeout=60, check=True)
        outputs.append(done.stdout)
    assert outputs[1] == outputs[0]
    assert "(12 rows)" in outputs[0]


async def test_no_columns_with_a_parameter(world: World) -> None:
    """A bound parameter (the express lane's kind of statement): still one empty row a row."""
    answers = []
    for dsn, setup in ((world.truth, ()), (world.pg_gateway.dsn, RELAY_OFF)):
        conn = await asyncpg.connect(dsn)
        try:
            for statement in setup:
                await conn.execute(statement)
            answers.append([len(r) for r in await conn.fetch("SELECT FROM t WHERE id = $1", 2)])
            answers.append(await conn.execute("SELECT FROM t WHERE id <= 5"))
        finally:
            await conn.close()
    assert answers[2:] == answers[:2] == [[0], "SELECT 5"]


async def test_no_columns_inside_a_writing_transaction(world: World) -> None:
    """After a write in the transaction, the source's rows are read over the session's
    link (connectors.postgres.link_reader): the row written is counted, then undone."""
    conn = await asyncpg.connect(world.pg_gateway.dsn)
    try:
        await conn.execute(RELAY_OFF[0])
        before = await conn.execute("SELECT FROM t")
        await conn.execute("BEGIN")
        await conn.execute("INSERT INTO t (id) VALUES (1000)")
        inside = await conn.execute("SELECT FROM t")
        rows = await conn.fetch("SELECT FROM t WHERE id >= 1000")
        await conn.execute("ROLLBACK")
    finally:
        await conn.close()
    assert (before, inside, [len(r) for r in rows]) == ("SELECT 12", "SELECT 13", [0])
