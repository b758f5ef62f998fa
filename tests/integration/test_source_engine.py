"""A PostgreSQL source as the engine: other sources' small tables sent along as parameters.

A PostgreSQL database holds `accounts`, `events` (an unconstrained numeric, a jsonb, an
enum, an int4[]) and the same `small`, `mid` and `big` tables that a Parquet source
(`files`, first on the session's search_path) holds, so each federated statement's truth
is PostgreSQL's own answer to the same text. A statement of the PostgreSQL source and
tables of `files` estimated at no more than `[engine] inline_rows` rows (100) runs whole
on PostgreSQL (planner.inline_sides): EXPLAIN says so, the answer (types and rows, through
the extended and the simple protocol) is PostgreSQL's, shapes the engine refuses (a
numeric computed on, a jsonb compared, an enum grouped) are answered, and a file changed
between two runs of one plan is read anew. `mid` (500 rows) keeps the engine unless the
session sets `fedgate.engine = source`; `big` (20,000 rows) is then refused, as is a
whole-row reference. A session that names an engine keeps the engine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
import datetime as dt
from decimal import Decimal
from pathlib import Path

import asyncpg
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.answers import assert_described_alike, error_of, execute, simple
from tests.support.gateway_proc import start_gateway
from tests.support.postgres import new_database

SMALL_ROWS = [
    # i16, i32, i64, f32, f64, ok, s, d, ts, tstz, amount, raw
    (1, 1, 10_000_000_000, 1.5, 0.1, True, "one", dt.date(2024, 1, 31),
     dt.datetime(2024, 1, 31, 12, 0, 0, 123456), dt.datetime(2024, 1, 31, 12, tzinfo=dt.timezone.utc),
     Decimal("12.50"), b"\x00\x01"),
    (2, 2, -1, -0.25, float("inf"), False, "it's $1 \"quoted\" é", dt.date(1999, 12, 31),
     dt.datetime(1999, 12, 31, 23, 59, 59), dt.datetime(2000, 6, 1, tzinfo=dt.timezone.utc),
     Decimal("-0.01"), b"'\\"),
    (3, 3, 0, 3.4028234663852886e38, 1e-300, None, "", None, None, None, Decimal("99999999.99"), b""),
    (4, 4, None, None, None, True, None, dt.date(2000, 2, 29), dt.datetime(2000, 2, 29), None, None, None),
]
SMALL_SCHEMA = pa.schema([("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
                          ("f32", pa.float32()), ("f64", pa.float64()), ("ok", pa.bool_()),
                          ("s", pa.string()), ("d", pa.date32()), ("ts", pa.timestamp("us")),
                          ("tstz", pa.timestamp("us", tz="UTC")), ("amount", pa.decimal128(10, 2)),
                          ("raw", pa.binary())])
SETUP = (
    "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
    "CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int)",
    "INSERT INTO accounts SELECT g, g % 4 + 1, g * 3 FROM generate_series(1, 1000) g",
    "CREATE TABLE events (id int, i32 int, n numeric, j jsonb, m mood, a int[])",
    "INSERT INTO events VALUES (1, 1, 1.5, '{\"k\": \"x\", \"v\": 2}', 'happy', '{1,2}'), "
    "(2, 1, 10, '{\"k\": \"y\", \"v\": 10}', 'sad', '{3}'), (3, 2, 1.50, '[1]', 'ok', NULL), "
    "(4, 3, 12345678901234567890.123456789, NULL, NULL, '{}'), (5, 4, 'Infinity', '{\"k\": \"x\"}', 'happy', '{7,8}')",
    "CREATE TABLE small (i16 int2, i32 int4, i64 int8, f32 real, f64 float8, ok bool, s text, d date, "
    "ts timestamp, tstz timestamptz, amount numeric(10,2), raw bytea)",
    "CREATE TABLE mid (k int, name text)",
    "INSERT INTO mid SELECT g, 'm' || g FROM generate_series(1, 500) g",
    "CREATE TABLE big (k int, name text)",
    "INSERT INTO big SELECT g, 'b' || g FROM generate_series(1, 20000) g",
    "CREATE TABLE changing (k int, name text)",
    "INSERT INTO changing VALUES (1, 'before'), (2, 'before')",
)
# The session reads `files` first: `small`, `mid`, `big` are the Parquet ones there.
ON_FILES = ("SET search_path = files, pg", "SET fedgate.relay = off")

INLINED = [
    "SELECT a.abalance, s.s FROM accounts a JOIN small s ON s.i32 = a.bid WHERE a.aid = 17",
    "SELECT s.*, a.abalance FROM small s JOIN accounts a ON a.aid = s.i32 ORDER BY s.i32",
    "SELECT s.s, count(*), sum(a.abalance) FROM accounts a JOIN small s ON s.i32 = a.bid "
    "GROUP BY s.s ORDER BY 1 NULLS FIRST",
    # refused by the engine, which holds these values as text (planner.kept_texts)
    "SELECT s.s, sum(e.n), avg(e.n), max(e.n) FROM events e JOIN small s ON s.i32 = e.i32 "
    "GROUP BY s.s ORDER BY 2",
    "SELECT e.id, e.n * 2, e.j ->> 'k', e.j -> 'v' > '1'::jsonb, e.a[1] FROM events e "
    "JOIN small s ON s.i32 = e.i32 ORDER BY e.n, e.id",
    # (an enum is described as the gateway's catalog has it: gateway.pg_catalog.enums)
    "SELECT e.m, e.m::text, count(*) FILTER (WHERE e.m = 'happy') FROM events e JOIN small s ON s.i32 = e.i32 "
    "GROUP BY e.m ORDER BY e.m",
    # a lifted number, a subquery, an outer join that keeps a side's NULLs
    "SELECT s.i32, (SELECT max(a.abalance) FROM accounts a WHERE a.bid = s.i32) FROM small s "
    "WHERE s.i32 > 1 ORDER BY 1",
    "SELECT s.i32, e.id FROM small s LEFT JOIN events e ON e.i32 = s.i32 AND e.id > 3 ORDER BY 1, 2",
    # aliases as PostgreSQL folds them, and the table's own name as its alias
    'SELECT S.i32, "T".aid FROM small S JOIN accounts "T" ON "T".aid = s.i32 ORDER BY 1',
    "SELECT small.s, accounts.abalance FROM small JOIN accounts ON accounts.aid = small.i32 ORDER BY 1",
]


@pytest.fixture(scope="module")
def world(postgres_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("source_engine")

    async def setup() -> str:
        dsn = await new_database(postgres_server, "fedgate_source_engine")
        await execute(dsn, *SETUP)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.executemany("INSERT INTO small VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                                   SMALL_ROWS)
        finally:
            await conn.close()
        return dsn

    truth = asyncio.run(setup())
    files = root / "files"
    files.mkdir()
    columns = list(zip(*SMALL_ROWS))
    pq.write_table(pa.table([pa.array(c, f.type) for c, f in zip(columns, SMALL_SCHEMA)], schema=SMALL_SCHEMA),
                   files / "small.parquet")
    for name, rows, prefix in (("mid", 500, "m"), ("big", 20_000, "b")):
        pq.write_table(pa.table({"k": pa.array(range(1, rows + 1), pa.int32()),
                                 "name": [f"{prefix}{i}" for i in range(1, rows + 1)]}), files / f"{name}.parquet")
    write_changing(files, "before")
    gateway = start_gateway('[catalog]\nsearch_path = ["pg"]\n'
                            f'[sources.pg]\nkind = "postgres"\ndsn = "{truth}"\n'
                            f'[sources.files]\nkind = "parquet"\npath = "{files}"\n', root / "gw")
    yield truth, gateway.dsn, files
    gateway.stop()


def write_changing(files: Path, name: str) -> None:
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int32()), "name": [name, name]}),
                   files / "changing.parquet")


@asynccontextmanager
async def connected(dsn: str, setup: tuple[str, ...]) -> AsyncIterator[asyncpg.Connection]:
    """A connection to `dsn` that has run `setup`."""
    conn = await asyncpg.connect(dsn)
    try:
        for statement in setup:
            await conn.execute(statement)
        yield conn
    finally:
        await conn.close()


async def explain(dsn: str, sql: str, *setup: str) -> list[str]:
    async with connected(dsn, (*ON_FILES, *setup)) as conn:
        return [r[0] for r in await conn.fetch("EXPLAIN " + sql)]


@pytest.mark.parametrize("sql", INLINED)
async def test_runs_on_postgres_with_postgres_answer(world, sql: str) -> None:
    truth, gateway, _ = world
    lines = await explain(gateway, sql)
    assert any(line.startswith("  Inlined ") and ": Remote on files:" in line for line in lines), lines
    assert not any(line.startswith("Engine") for line in lines), lines
    await assert_described_alike(truth, gateway, sql, *ON_FILES)


def test_simple_protocol_gets_postgres_text(world) -> None:
    truth, gateway, _ = world
    sql = INLINED[1]
    want = simple(truth, sql)
    with psycopg.connect(gateway, autocommit=True) as conn:
        for statement in ON_FILES:
            conn.execute(statement)
        cursor = conn.execute(sql, prepare=False)
        got = ([d.type_code for d in cursor.description], cursor.fetchall())
    with psycopg.connect(truth, autocommit=True) as conn:
        cursor = conn.execute(sql, prepare=False)
        assert got == ([d.type_code for d in cursor.description], cursor.fetchall())
    assert len(want.rows) == 4


async def test_parameters_and_describe(world) -> None:
    """A client's own parameters come before the inlined side's; Describe alone types them."""
    truth, gateway, _ = world
    sql = "SELECT s.s, s.amount, a.abalance + $1 FROM small s JOIN accounts a ON a.aid = s.i32 WHERE s.i32 < $2 ORDER BY 1"
    answers = []
    for dsn, setup in ((truth, ()), (gateway, ON_FILES)):
        async with connected(dsn, setup) as conn:
            prepared = await conn.prepare(sql)
            types = [a.type.name for a in prepared.get_attributes()]
            answers.append((types, [tuple(r) for r in await prepared.fetch(5, 3)],
                            [tuple(r) for r in await prepared.fetch(1, 10)]))
    assert answers[0] == answers[1]


async def test_a_changed_file_is_read_anew(world) -> None:
    _, gateway, files = world
    sql = "SELECT c.name, a.abalance FROM changing c JOIN accounts a ON a.aid = c.k ORDER BY a.aid"
    try:
        async with connected(gateway, ON_FILES) as conn:
            assert [r[0] for r in await conn.fetch(sql)] == ["before", "before"]
            write_changing(files, "after")
            assert [r[0] for r in await conn.fetch(sql)] == ["after", "after"]
    finally:
        write_changing(files, "before")


async def test_a_larger_side_keeps_the_engine_unless_asked(world) -> None:
    truth, gateway, _ = world
    sql = "SELECT m.name, a.abalance FROM mid m JOIN accounts a ON a.aid = m.k WHERE m.k % 100 = 0 ORDER BY 1"
    assert any(line.startswith("Engine") for line in await explain(gateway, sql))
    forced = await explain(gateway, sql, "SET fedgate.engine = source")
    assert any(line.startswith("  Inlined m: Remote on files:") for line in forced), forced
    await assert_described_alike(truth, gateway, sql, *ON_FILES, "SET fedgate.engine = source")


async def test_what_source_cannot_run_is_refused_when_asked(world) -> None:
    _, gateway, _ = world
    force = (*ON_FILES, "SET fedgate.engine = source")
    err = await error_of(gateway, "SELECT b.name FROM big b JOIN accounts a ON a.aid = b.k", *force)
    assert err.sqlstate == "0A000"
    assert "files.big is not known to hold at most 10000 rows" in err.message
    assert err.hint == "SET fedgate.engine = duckdb runs it in the engine."
    err = await error_of(gateway, "SELECT s FROM small s JOIN accounts a ON a.aid = s.i32", *force)
    assert err.sqlstate == "0A000" and "as a row" in err.message
    # Without the setting, the engine answers the big side.
    async with connected(gateway, ON_FILES) as conn:
        assert await conn.fetchval("SELECT count(*) FROM big b JOIN accounts a ON a.aid = b.k") == 1000


async def test_a_session_that_names_an_engine_keeps_it(world) -> None:
    _, gateway, _ = world
    lines = await explain(gateway, INLINED[0], "SET fedgate.engine = duckdb")
    assert any(line.startswith("Engine") for line in lines), lines
    assert not any("Inlined" in line for line in lines)


async def test_the_setting_names_its_values(world) -> None:
    _, gateway, _ = world
    err = await error_of(gateway, "SET fedgate.engine = elsewhere")
    assert err.sqlstate == "22023"
    assert err.message == 'fedgate.engine must be "duckdb", "spark" or "source"'


async def test_a_dollar_number_inside_a_string_stays_text(world) -> None:
    """The parameters are bound, never written into the text: '$1' in a literal is text."""
    truth, gateway, _ = world
    await assert_described_alike(
        truth, gateway, "SELECT s.i32, 'x$1' || s.s, s.s LIKE '%$1%' FROM small s JOIN accounts a "
        "ON a.aid = s.i32 WHERE a.abalance > 1 ORDER BY 1", *ON_FILES)


async def test_a_dollar_number_inside_a_string_of_an_engine_fragment(world) -> None:
    """The same for a fragment the engine reads (`mid` keeps the engine) with the client's
    parameter: asyncpg's own binding rewrote the '$1' in the literal too."""
    truth, gateway, _ = world
    sql = ("SELECT m.name, a.bid::text || '$1' FROM mid m JOIN accounts a ON a.aid = m.k "
           "WHERE a.aid = $1 AND a.bid::text || '$1' = '4$1'")
    lines = await explain(gateway, sql.replace("= $1 AND", "= 7 AND"))
    assert any(line.startswith("Engine") for line in lines), lines
    answers = []
    for dsn, setup in ((truth, ()), (gateway, ON_FILES)):
        async with connected(dsn, setup) as conn:
            answers.append([tuple(r) for r in await conn.fetch(sql, 7)])
    assert answers[0] == answers[1] == [("m7", "4$1")]


async def test_explain_json_names_the_inlined_table(world) -> None:
    _, gateway, _ = world
    async with connected(gateway, ON_FILES) as conn:
        document = json.loads(await conn.fetchval("EXPLAIN (FORMAT JSON) " + INLINED[0]))
    plan = document[0]["Plan"]
    assert plan["Node Type"] == "Remote Fragment" and plan["Source"] == "pg"
    assert plan["Plans"] == [{"Node Type": "Inlined Table", "Alias": "s", "Source": "files",
                              "Remote SQL": plan["Plans"][0]["Remote SQL"], "Parameters": [
                                  f"${i}" for i in range(1, 13)]}]


@pytest.mark.parametrize("sql", INLINED[:3])
async def test_inside_a_block_that_wrote_to_postgres(world, sql: str) -> None:
    """In a block that wrote to the PostgreSQL source, the statement runs on the block's
    link (and sees its writes), the small table's columns written in as ARRAY literals."""
    truth, gateway, _ = world
    answers = []
    for dsn, setup in ((truth, ()), (gateway, ON_FILES)):
        async with connected(dsn, setup) as conn:
            async with conn.transaction():
                await conn.execute("UPDATE accounts SET abalance = abalance + 1000000000")
                prepared = await conn.prepare(sql)
                answers.append(([a.type.name for a in prepared.get_attributes()],
                                [tuple(r) for r in await prepared.fetch()]))
                await conn.execute("UPDATE accounts SET abalance = abalance - 1000000000")
    assert answers[0] == answers[1]
    assert any(isinstance(v, int) and v >= 1_000_000_000 for row in answers[1][1] for v in row)
