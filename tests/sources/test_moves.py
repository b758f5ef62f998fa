"""Moves between sources through the gateway (docs/design.md §5, "Moves"): INSERT ...
SELECT and CREATE TABLE AS whose query reads other sources than the target, against the
federation's real PostgreSQL, MariaDB and SQLite, with Parquet and DuckDB files as
readers. Every outcome is checked on the target itself, not only through the gateway.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import asyncmy
import asyncpg
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.sources.conftest import TRAP_ROWS, Federation
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.mariadb import MariaDBServer
from tests.support.spark_cluster import SparkCluster

TIMEOUT = 120
TRAP_IDS_TEXTS = sorted((r[0], r[1]) for r in TRAP_ROWS)  # what every source's trap holds


async def fresh(gwc: asyncpg.Connection, table: str, ddl: str) -> None:
    """`table` (source-qualified) made anew through the gateway, so its catalog knows it."""
    await gwc.execute(f"DROP TABLE IF EXISTS {table}")
    await gwc.execute(f"CREATE TABLE {table} {ddl}")


async def sqlstate_of(gwc: asyncpg.Connection, sql: str) -> str:
    with pytest.raises(asyncpg.PostgresError) as failed:
        await asyncio.wait_for(gwc.execute(sql), TIMEOUT)
    return failed.value.sqlstate


async def test_parquet_rows_go_into_postgres(gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_basic", "(id int PRIMARY KEY, s varchar(5), note text NOT NULL)")
    tag = await gwc.execute("INSERT INTO pg.move_basic SELECT id + 10, s, 'f' FROM pq.trap")
    assert tag == "INSERT 0 7"
    rows = await pgc.fetch("SELECT id, s, note FROM move_basic ORDER BY id")
    assert [tuple(r) for r in rows] == [(r[0] + 10, r[1], "f") for r in TRAP_ROWS]


PG_TYPES = ("(id int PRIMARY KEY, num numeric(10,3), f8 float8, i8 bigint, i4 int, i2 smallint, "
            "b boolean, ts timestamp, tstz timestamptz, d date, u uuid, j json, bin bytea, t text)")
PG_TYPE_COLUMNS = "id, num, f8, i8, i4, i2, b, ts, tstz, d, u, j, bin, t"


async def test_a_with_before_the_insert_reaches_its_query(gwc: asyncpg.Connection,
                                                          pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_with", "(id int, s text)")
    tag = await gwc.execute("WITH picked AS (SELECT id, s FROM pq.trap WHERE id < 3) "
                            "INSERT INTO pg.move_with SELECT id, s FROM picked")
    assert tag == "INSERT 0 2"
    assert [tuple(r) for r in await pgc.fetch("SELECT id, s FROM move_with ORDER BY id")] == \
        TRAP_IDS_TEXTS[:2]


async def test_every_common_type_arrives_as_postgresql_holds_it(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_types", PG_TYPES)
    assert await gwc.execute(f"INSERT INTO pg.move_types SELECT {PG_TYPE_COLUMNS} FROM pq.types") == "INSERT 0 3"
    moved = await pgc.fetch(f"SELECT {PG_TYPE_COLUMNS} FROM move_types ORDER BY id")
    truth = await pgc.fetch(f"SELECT {PG_TYPE_COLUMNS} FROM types ORDER BY id")
    assert [tuple(r) for r in moved] == [tuple(r) for r in truth]


async def test_values_are_converted_by_assignment_casts(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_casts", "(i2 smallint, n numeric(5,1), c varchar(3), txt text, "
                "d date, big bigint, fl real)")
    # float8 -> int rounds half to even, numeric -> numeric(5,1) half away from zero,
    # trailing spaces past varchar(3) are cut, a number and a timestamp become text,
    # a timestamp a date, an untyped literal is read as the column's type.
    tag = await gwc.execute(
        "INSERT INTO pg.move_casts SELECT f + 1, n * 1.25, 'ab   ', id * 2, ts, '42', n "
        "FROM pq.trap WHERE id IN (1, 3)")
    assert tag == "INSERT 0 2"
    rows = await pgc.fetch("SELECT i2, n, c, txt, d, big, fl FROM move_casts ORDER BY i2")
    assert [tuple(r) for r in rows] == [
        (1, Decimal("2.5"), "ab ", "6", dt.date(2024, 11, 3), 42, 2.0),
        (2, Decimal("8.8"), "ab ", "2", dt.date(2024, 3, 10), 42, 7.0)]


@pytest.mark.parametrize(("ddl", "select", "sqlstate"), [
    ("(c varchar(2))", "SELECT s FROM pq.trap WHERE id = 1", "22001"),
    ("(c char(2))", "SELECT 'abc' FROM pq.trap", "22001"),
    ("(c smallint)", "SELECT i4 FROM pq.types", "22003"),
    ("(c integer)", "SELECT f * 1e10 FROM pq.trap WHERE id = 1", "22003"),
    ("(c numeric(3,1))", "SELECT num FROM pq.types", "22003"),
    ("(c integer)", "SELECT 'x' FROM pq.trap", "22P02"),
    ("(c integer)", "SELECT s FROM pq.trap", "42804"),
    ("(c text NOT NULL)", "SELECT s FROM pq.trap", "23502"),
    ("(c int PRIMARY KEY)", "SELECT 1 FROM pq.trap", "23505"),
    ("(c int)", "SELECT id, id FROM pq.trap", "42601"),
], ids=["varchar", "char", "smallint", "integer-from-float", "numeric", "literal", "text",
        "not-null", "unique", "too-many"])
async def test_a_value_that_does_not_fit_fails_with_postgresqls_sqlstate_and_leaves_nothing(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection, ddl: str, select: str, sqlstate: str) -> None:
    await fresh(gwc, "pg.move_fit", ddl)
    assert await sqlstate_of(gwc, f"INSERT INTO pg.move_fit {select}") == sqlstate
    assert await pgc.fetchval("SELECT count(*) FROM move_fit") == 0
    assert await gwc.fetchval("SELECT 1") == 1  # the session goes on


async def test_a_duplicate_at_the_end_of_a_large_move_leaves_the_target_unchanged(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_big", "(id int PRIMARY KEY, s text)")
    await gwc.execute("INSERT INTO pg.move_big VALUES (100000, 'there before')")
    # 100,000 rows, the last of which collides with the row already there.
    move = ("INSERT INTO pg.move_big SELECT g.i, t.s FROM generate_series(1, 100000) AS g(i) "
            "CROSS JOIN pq.trap t WHERE t.id = 1")
    assert await sqlstate_of(gwc, move) == "23505"
    assert [tuple(r) for r in await pgc.fetch("SELECT id, s FROM move_big")] == [(100000, "there before")]
    await gwc.execute("DELETE FROM pg.move_big")
    assert await gwc.execute(move) == "INSERT 0 100000"
    assert await pgc.fetchval("SELECT count(*) FROM move_big") == 100000


async def test_statement_timeout_mid_move_leaves_nothing(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_slow", "(id bigint, s text)")
    await gwc.execute("SET statement_timeout = '1500ms'")
    move = ("INSERT INTO pg.move_slow SELECT g.i, t.s FROM generate_series(1, 50000000) AS g(i) "
            "CROSS JOIN pq.trap t WHERE t.id = 1")
    assert await sqlstate_of(gwc, move) == "57014"
    await gwc.execute("RESET statement_timeout")
    assert await pgc.fetchval("SELECT count(*) FROM move_slow") == 0
    assert await gwc.fetchval("SELECT count(*) FROM pg.move_slow") == 0


async def test_a_cancel_mid_move_leaves_nothing(gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_cancel", "(id bigint, s text)")
    move = ("INSERT INTO pg.move_cancel SELECT g.i, t.s FROM generate_series(1, 50000000) AS g(i) "
            "CROSS JOIN pq.trap t WHERE t.id = 1")
    running = asyncio.ensure_future(gwc.execute(move))
    # Until rows are on their way into the target: the COPY is running there.
    for _ in range(200):
        if await pgc.fetchval("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY%move_cancel%'"):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the move's COPY never started")
    running.cancel()  # asyncpg sends a CancelRequest
    with pytest.raises(asyncio.CancelledError):
        await running
    assert await gwc.fetchval("SELECT 1") == 1
    assert await pgc.fetchval("SELECT count(*) FROM move_cancel") == 0


# Every reader kind into every writer kind: the trap table's id and text, which every
# source holds. A pair of one source is a single-source write, relayed or rendered.
READERS = {"postgres": "pg.trap", "mysql": "my.trap", "sqlite": "lite.trap",
           "duckdb": "duck.trap", "parquet": "pq.trap", "csv": "csv.trap"}
WRITERS = {"postgres": "pg", "mysql": "my", "sqlite": "lite"}


@dataclass
class Targets:
    """The servers and files behind the writable sources: where a move's outcome is read."""

    pg_dsn: str
    mariadb: MariaDBServer
    sqlite: Path

    async def rows(self, kind: str, table: str, columns: str = "id, s") -> list[tuple]:
        """`table`'s rows read on the target itself, ordered by the first column."""
        if kind == "postgres":
            conn = await asyncpg.connect(self.pg_dsn)
            try:
                return [tuple(r) for r in await conn.fetch(f'SELECT {columns} FROM "{table}" ORDER BY 1')]
            finally:
                await conn.close()
        if kind == "mysql":
            conn = await asyncmy.connect(host=self.mariadb.host, port=self.mariadb.port,
                                         user="root", db="shop")
            try:
                async with conn.cursor() as cur:
                    await cur.execute(f"SELECT {columns} FROM `{table}` ORDER BY 1")
                    return [tuple(r) for r in await cur.fetchall()]
            finally:
                conn.close()
        con = sqlite3.connect(self.sqlite)
        try:
            return [tuple(r) for r in con.execute(f'SELECT {columns} FROM "{table}" ORDER BY 1')]
        finally:
            con.close()


@pytest.fixture
def targets(federation: Federation, mariadb_server: MariaDBServer,
            file_sources: dict[str, Path]) -> Targets:
    return Targets(federation.pg.dsn, mariadb_server, file_sources["sqlite"])


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("reader", sorted(READERS))
async def test_every_reader_into_every_writer(gwc: asyncpg.Connection, targets: Targets,
                                              reader: str, writer: str) -> None:
    table = f"move_{reader}_{writer}"
    await fresh(gwc, f"{WRITERS[writer]}.{table}", "(id int PRIMARY KEY, s varchar(10))")
    tag = await gwc.execute(f"INSERT INTO {WRITERS[writer]}.{table} (id, s) "
                            f"SELECT id, s FROM {READERS[reader]}")
    assert tag == "INSERT 0 7"
    assert await targets.rows(writer, table) == TRAP_IDS_TEXTS
    # The gateway sees the rows at once too.
    assert await gwc.fetchval(f"SELECT count(*) FROM {WRITERS[writer]}.{table}") == 7
    await gwc.execute(f"DROP TABLE {WRITERS[writer]}.{table}")


@pytest.mark.parametrize("writer", ["mysql", "sqlite"])
@pytest.mark.parametrize(("ddl", "select", "sqlstate"), [
    ("(id int PRIMARY KEY, s varchar(2))", "SELECT id, s FROM pq.trap", "22001"),
    ("(id int, s text)", "SELECT f, s FROM pq.trap WHERE id = 7", "22003"),
    ("(id int PRIMARY KEY, s text NOT NULL)", "SELECT id, s FROM pq.trap", "23502"),
    ("(id int PRIMARY KEY, s text)", "SELECT 1, s FROM pq.trap", "23505"),
], ids=["varchar", "integer", "not-null", "unique"])
async def test_mysql_and_sqlite_targets_fail_as_postgresql_and_keep_nothing(
        gwc: asyncpg.Connection, targets: Targets, writer: str, ddl: str, select: str,
        sqlstate: str) -> None:
    table = f"move_fail_{writer}"
    await fresh(gwc, f"{WRITERS[writer]}.{table}", ddl)
    assert await sqlstate_of(gwc, f"INSERT INTO {WRITERS[writer]}.{table} {select}") == sqlstate
    assert await targets.rows(writer, table) == []
    await gwc.execute(f"DROP TABLE {WRITERS[writer]}.{table}")


@pytest.mark.parametrize("writer", ["mysql", "sqlite"])
async def test_a_large_move_into_mysql_or_sqlite_is_all_or_nothing(
        gwc: asyncpg.Connection, targets: Targets, writer: str) -> None:
    table = f"move_big_{writer}"
    await fresh(gwc, f"{WRITERS[writer]}.{table}", "(id int PRIMARY KEY, s varchar(10))")
    await gwc.execute(f"INSERT INTO {WRITERS[writer]}.{table} VALUES (20000, 'before')")
    move = (f"INSERT INTO {WRITERS[writer]}.{table} SELECT g.i, t.s FROM generate_series(1, 20000) "
            "AS g(i) CROSS JOIN pq.trap t WHERE t.id = 1")
    assert await sqlstate_of(gwc, move) == "23505"
    assert await targets.rows(writer, table) == [(20000, "before")]
    await gwc.execute(f"DELETE FROM {WRITERS[writer]}.{table}")
    assert await gwc.execute(move) == "INSERT 0 20000"
    assert len(await targets.rows(writer, table)) == 20000
    await gwc.execute(f"DROP TABLE {WRITERS[writer]}.{table}")


@pytest.mark.parametrize("writer", ["mysql", "sqlite"])
async def test_inside_a_block_a_move_joins_the_blocks_transaction(
        gwc: asyncpg.Connection, targets: Targets, writer: str) -> None:
    table = f"move_block_{writer}"
    await fresh(gwc, f"{WRITERS[writer]}.{table}", "(id int PRIMARY KEY, s varchar(10))")
    await gwc.execute("BEGIN")
    await gwc.execute(f"INSERT INTO {WRITERS[writer]}.{table} VALUES (100, 'in block')")
    assert await gwc.execute(f"INSERT INTO {WRITERS[writer]}.{table} SELECT id, s FROM pq.trap") == "INSERT 0 7"
    assert await targets.rows(writer, table) == []  # not committed yet
    await gwc.execute("ROLLBACK")
    assert await targets.rows(writer, table) == []
    await gwc.execute("BEGIN")
    await gwc.execute(f"INSERT INTO {WRITERS[writer]}.{table} SELECT id, s FROM pg.trap")
    await gwc.execute("COMMIT")
    assert await targets.rows(writer, table) == TRAP_IDS_TEXTS
    await gwc.execute(f"DROP TABLE {WRITERS[writer]}.{table}")


# A savepoint name that closes its quotes and runs a statement if spliced into a command as
# text (`SAVEPOINT "x"; DROP TABLE trap; --`"`); quoted as an identifier it is one name.
HOSTILE_SAVEPOINT = 'x"; DROP TABLE trap; --`'


@pytest.mark.parametrize("writer", sorted(WRITERS))
async def test_savepoints_reach_each_writer_under_any_name(gwc: asyncpg.Connection, targets: Targets,
                                                           writer: str) -> None:
    """The block's savepoints go to the source it writes to, in that source's quoting: the
    one taken before the first write there too, and ROLLBACK TO undoes only what came after."""
    table = f"savepoint_{writer}"
    await fresh(gwc, f"{WRITERS[writer]}.{table}", "(id int PRIMARY KEY, s varchar(10))")
    hostile = '"' + HOSTILE_SAVEPOINT.replace('"', '""') + '"'
    await gwc.execute("BEGIN")
    await gwc.execute(f"SAVEPOINT {hostile}")
    await gwc.execute(f"INSERT INTO {WRITERS[writer]}.{table} VALUES (1, 'kept')")
    await gwc.execute('SAVEPOINT "b`c"')
    await gwc.execute(f"INSERT INTO {WRITERS[writer]}.{table} VALUES (2, 'undone')")
    await gwc.execute('ROLLBACK TO SAVEPOINT "b`c"')
    await gwc.execute(f"RELEASE SAVEPOINT {hostile}")
    await gwc.execute("COMMIT")
    assert await targets.rows(writer, table) == [(1, "kept")]
    assert len(await targets.rows(writer, "trap")) == len(TRAP_IDS_TEXTS)  # not dropped
    await gwc.execute(f"DROP TABLE {WRITERS[writer]}.{table}")


async def test_inside_a_block_a_move_into_postgresql_joins_the_blocks_transaction(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_block_pg", "(id int PRIMARY KEY, s varchar(10))")
    await gwc.execute("BEGIN")
    await gwc.execute("INSERT INTO pg.move_block_pg VALUES (100, 'in block')")
    assert await gwc.execute("INSERT INTO pg.move_block_pg SELECT id, s FROM pq.trap") == "INSERT 0 7"
    # The block's later statements see the rows; nobody else does before COMMIT.
    assert await gwc.fetchval("SELECT count(*) FROM pg.move_block_pg") == 8
    assert await gwc.fetchval("SELECT count(*) FROM pg.move_block_pg m JOIN pq.trap t "
                              "ON t.id = m.id") == 7
    assert await pgc.fetchval("SELECT count(*) FROM move_block_pg") == 0
    await gwc.execute("ROLLBACK")
    assert await pgc.fetchval("SELECT count(*) FROM move_block_pg") == 0
    await gwc.execute("BEGIN")
    assert await gwc.execute("INSERT INTO pg.move_block_pg SELECT id, s FROM pq.trap") == "INSERT 0 7"
    await gwc.execute("INSERT INTO pg.move_block_pg VALUES (100, 'after')")
    await gwc.execute("COMMIT")
    rows = await pgc.fetch("SELECT id, s FROM move_block_pg ORDER BY id")
    assert [tuple(r) for r in rows] == [*TRAP_IDS_TEXTS, (100, "after")]
    await gwc.execute("DROP TABLE pg.move_block_pg")


async def block_failure(conn: asyncpg.Connection, table: str, source: str) -> list[str]:
    """The SQLSTATEs of a block whose move hits a duplicate key, then of the statement
    after it; the block is rolled back."""
    await conn.execute("BEGIN")
    await conn.execute(f"INSERT INTO {table} VALUES (3, 'dup')")
    states = [await sqlstate_of(conn, f"INSERT INTO {table} SELECT id, s FROM {source}"),
              await sqlstate_of(conn, f"SELECT count(*) FROM {table}")]
    await conn.execute("ROLLBACK")
    return states


async def test_a_failing_move_inside_a_block_fails_the_block_as_postgresql(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_block_fail", "(id int PRIMARY KEY, s varchar(10))")
    ours = await block_failure(gwc, "pg.move_block_fail", "pq.trap")
    theirs = await block_failure(pgc, "move_block_fail", "trap")  # PostgreSQL, all local
    assert ours == theirs == ["23505", "25P02"]
    assert await pgc.fetchval("SELECT count(*) FROM move_block_fail") == 0
    # The session goes on after the ROLLBACK, on the same link.
    assert await gwc.execute("INSERT INTO pg.move_block_fail SELECT id, s FROM pq.trap") == "INSERT 0 7"
    await gwc.execute("DROP TABLE pg.move_block_fail")


async def test_a_large_or_timed_out_move_inside_a_block_keeps_nothing(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_block_big", "(id bigint PRIMARY KEY, s text)")
    big = ("INSERT INTO pg.move_block_big SELECT g.i, t.s FROM generate_series(1, {n}) AS g(i) "
           "CROSS JOIN pq.trap t WHERE t.id = 1")
    await gwc.execute("BEGIN")
    assert await gwc.execute(big.format(n=300000)) == "INSERT 0 300000"  # several COPY chunks
    assert await gwc.fetchval("SELECT count(*) FROM pg.move_block_big") == 300000
    await gwc.execute("SET LOCAL statement_timeout = '1500ms'")
    assert await sqlstate_of(gwc, big.format(n=50000000).replace("g.i,", "g.i + 300000,")) == "57014"
    assert await sqlstate_of(gwc, "SELECT 1") == "25P02"
    await gwc.execute("ROLLBACK")
    assert await pgc.fetchval("SELECT count(*) FROM move_block_big") == 0
    assert await gwc.fetchval("SELECT count(*) FROM pg.move_block_big") == 0
    await gwc.execute("DROP TABLE pg.move_block_big")


@pytest.mark.parametrize("clause", ["", " ON CONFLICT DO NOTHING"])
async def test_a_cancel_mid_move_inside_a_block_fails_the_block_and_leaves_nothing(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection, clause: str) -> None:
    await fresh(gwc, "pg.move_block_cancel", "(id bigint PRIMARY KEY, s text)")
    await gwc.execute("BEGIN")
    await gwc.execute("INSERT INTO pg.move_block_cancel VALUES (0, 'first')")
    move = ("INSERT INTO pg.move_block_cancel SELECT g.i, t.s FROM generate_series(1, 50000000) "
            "AS g(i) CROSS JOIN pq.trap t WHERE t.id = 1" + clause)
    running = asyncio.ensure_future(gwc.execute(move))
    for _ in range(200):
        if await pgc.fetchval("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY%'"
                              " AND state = 'active'"):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the move's COPY never started")
    running.cancel()  # asyncpg sends a CancelRequest
    with pytest.raises(asyncio.CancelledError):
        await running
    assert await sqlstate_of(gwc, "SELECT 1") == "25P02"
    await gwc.execute("ROLLBACK")
    assert await pgc.fetchval("SELECT count(*) FROM move_block_cancel") == 0
    assert await gwc.execute("INSERT INTO pg.move_block_cancel SELECT id, s FROM pq.trap") == "INSERT 0 7"
    await gwc.execute("DROP TABLE pg.move_block_cancel")


async def test_create_table_as_inside_a_block_into_postgresql_goes_with_the_block(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await gwc.execute("DROP TABLE IF EXISTS pg.move_block_ctas")
    await gwc.execute("BEGIN")
    assert await gwc.execute("CREATE TABLE pg.move_block_ctas AS SELECT id, s FROM pq.trap") == "SELECT 7"
    assert await pgc.fetchval("SELECT to_regclass('move_block_ctas') IS NULL")  # not committed
    await gwc.execute("ROLLBACK")
    assert await pgc.fetchval("SELECT to_regclass('move_block_ctas') IS NULL")
    await gwc.execute("BEGIN")
    await gwc.execute("CREATE TABLE pg.move_block_ctas AS SELECT id, s FROM pq.trap")
    await gwc.execute("COMMIT")
    assert await pgc.fetchval("SELECT count(*) FROM move_block_ctas") == 7
    await gwc.execute("DROP TABLE pg.move_block_ctas")


async def test_inside_a_block_a_move_reading_its_own_target_source_is_refused(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_block_self", "(id int, s text)")
    await gwc.execute("BEGIN")
    assert await sqlstate_of(gwc, "INSERT INTO pg.move_block_self SELECT p.id, p.s FROM pg.trap p "
                             "JOIN pq.trap q ON q.id = p.id") == "0A000"
    await gwc.execute("ROLLBACK")
    assert await pgc.fetchval("SELECT count(*) FROM move_block_self") == 0


async def psql(dsn: str, sql: str) -> str:
    """What psql prints for `sql`, sent as a simple Query: the rows, their header and the
    tag."""
    run = await asyncio.create_subprocess_exec(
        "psql", "-X", "-A", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-c", sql,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={"PGTZ": "UTC", "PATH": "/usr/bin:/bin"})
    out, _ = await asyncio.wait_for(run.communicate(), TIMEOUT)
    return out.decode()


async def both_answers(federation: Federation, gwc: asyncpg.Connection, pgc: asyncpg.Connection,
                       table: str, ddl: str, before: str, statement: str) -> list[tuple]:
    """`statement` (with {t} for the table, {src} for the rows' table) run through the
    gateway reading pq.trap and by PostgreSQL itself reading its local trap, each on a
    fresh `table` after `before`: what psql shows of each, and the table after it."""
    answers = []
    for conn, dsn, prefix, src in ((gwc, federation.gateway.dsn, "pg.", "pq.trap"),
                                   (pgc, federation.pg.dsn, "", "trap")):
        await fresh(conn, prefix + table, ddl)
        if before:
            await conn.execute(before.format(t=prefix + table))
        shown = await psql(dsn, statement.format(t=prefix + table, src=src))
        kept = await pgc.fetch(f"SELECT * FROM {table} ORDER BY 1")
        answers.append((shown, [tuple(r) for r in kept]))
    await gwc.execute(f"DROP TABLE pg.{table}")
    return answers


async def test_returning_answers_as_postgresql(federation: Federation, gwc: asyncpg.Connection,
                                               pgc: asyncpg.Connection) -> None:
    ours, theirs = await both_answers(
        federation, gwc, pgc, "move_returning", "(id int PRIMARY KEY, s varchar(10), n int DEFAULT 42)",
        "", "INSERT INTO {t} (id, s) SELECT id * 2, s FROM {src} WHERE id < 5 "
        "RETURNING id, upper(s) AS big, n")
    assert ours == theirs
    assert ours[0].splitlines()[0] == "id|big|n" and "INSERT 0 4" in ours[0]
    # A driver's prepared one (asyncpg: binary formats) gets PostgreSQL's rows too, and an
    # ON CONFLICT's answer.
    await fresh(gwc, "pg.move_returning_ext", "(id int PRIMARY KEY, s varchar(10), n int DEFAULT 42)")
    move = ("INSERT INTO pg.move_returning_ext (id, s) SELECT id * $1, s FROM pq.trap WHERE id < 5 "
            "RETURNING id, upper(s) AS big, n, now() > '2000-01-01' AS recent")
    rows = await gwc.fetch(move, 2)
    assert [tuple(r) for r in rows] == [(r[0] * 2, r[1].upper(), 42, True) for r in TRAP_ROWS if r[0] < 5]
    for _ in range(3):  # the driver's cached statement, bound again each time
        again = await gwc.fetch(move.replace("RETURNING", "ON CONFLICT (id) DO UPDATE SET n = 0 RETURNING"), 2)
        assert [(r["id"], r["n"]) for r in again] == [(r[0] * 2, 0) for r in TRAP_ROWS if r[0] < 5]
    assert await gwc.fetch(move.replace("RETURNING", "ON CONFLICT DO NOTHING RETURNING"), 2) == []
    await gwc.execute("DROP TABLE pg.move_returning_ext")


async def test_returning_tag_and_empty_move(gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_ret_tag", "(id int PRIMARY KEY, s text)")
    assert await gwc.execute("INSERT INTO pg.move_ret_tag SELECT id, s FROM pq.trap RETURNING id") \
        == "INSERT 0 7"
    assert await gwc.execute("INSERT INTO pg.move_ret_tag SELECT id, s FROM pq.trap WHERE id > 99 "
                             "RETURNING *") == "INSERT 0 0"
    assert await pgc.fetchval("SELECT count(*) FROM move_ret_tag") == 7
    # Reading the target's own source too (on a connection of the pool, not the link).
    assert await gwc.execute("INSERT INTO pg.move_ret_tag SELECT p.id + 100, p.s FROM pg.trap p "
                             "JOIN pq.trap q ON q.id = p.id RETURNING id") == "INSERT 0 7"
    # ON CONFLICT without RETURNING in the extended protocol: described as NoData.
    assert await gwc.fetch("INSERT INTO pg.move_ret_tag SELECT id, s FROM pq.trap "
                           "ON CONFLICT DO NOTHING") == []
    assert await pgc.fetchval("SELECT count(*) FROM move_ret_tag") == 14
    await fresh(gwc, "pg.move_ret_uuid", "(id int, u uuid)")
    assert await sqlstate_of(gwc, "INSERT INTO pg.move_ret_uuid SELECT id, s FROM pq.trap "
                             "RETURNING id") == "0A000"
    await gwc.execute("DROP TABLE pg.move_ret_uuid")
    # The staging table is gone, and the link takes statements again.
    assert await pgc.fetchval("SELECT count(*) FROM pg_class WHERE relname = 'fedgate_move_stage'") == 0
    assert await gwc.fetchval("SELECT count(*) FROM pg.move_ret_tag") == 14
    await gwc.execute("DROP TABLE pg.move_ret_tag")


async def test_on_conflict_answers_as_postgresql(federation: Federation, gwc: asyncpg.Connection,
                                                 pgc: asyncpg.Connection) -> None:
    ddl = "(id int PRIMARY KEY, s varchar(10))"
    before = "INSERT INTO {t} VALUES (1, 'old'), (3, 'old'), (50, 'old')"
    for clause in ("ON CONFLICT DO NOTHING", "ON CONFLICT (id) DO NOTHING RETURNING id",
                   "ON CONFLICT (id) DO UPDATE SET s = excluded.s || '!' RETURNING *",
                   "ON CONFLICT (id) DO UPDATE SET s = 'new' WHERE excluded.id > 2 RETURNING id, s"):
        ours, theirs = await both_answers(federation, gwc, pgc, "move_conflict", ddl, before,
                                          "INSERT INTO {t} SELECT id, s FROM {src} " + clause)
        assert ours == theirs, clause
    for conn, t, src in ((gwc, "pg.move_conflict", "pq.trap"), (pgc, "move_conflict", "trap")):
        await fresh(conn, t, ddl)
        await conn.execute(f"INSERT INTO {t} VALUES (1, 'old'), (3, 'old')")
        # The tag counts the rows inserted or updated, as PostgreSQL's does.
        assert await conn.execute(f"INSERT INTO {t} SELECT id, s FROM {src} ON CONFLICT DO NOTHING") \
            == "INSERT 0 5"
        assert await conn.execute(f"INSERT INTO {t} SELECT id, s FROM {src} WHERE id < 3 "
                                  "ON CONFLICT (id) DO UPDATE SET s = 'u'") == "INSERT 0 2"
    await gwc.execute("DROP TABLE pg.move_conflict")


async def test_a_timed_out_move_with_on_conflict_leaves_nothing(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_conflict_slow", "(id bigint PRIMARY KEY, s text)")
    await gwc.execute("SET statement_timeout = '1500ms'")
    move = ("INSERT INTO pg.move_conflict_slow SELECT g.i, t.s FROM generate_series(1, 50000000) "
            "AS g(i) CROSS JOIN pq.trap t WHERE t.id = 1 ON CONFLICT DO NOTHING RETURNING id")
    assert await sqlstate_of(gwc, move) == "57014"
    await gwc.execute("RESET statement_timeout")
    assert await pgc.fetchval("SELECT count(*) FROM move_conflict_slow") == 0
    assert await gwc.execute("INSERT INTO pg.move_conflict_slow SELECT id, s FROM pq.trap "
                             "ON CONFLICT DO NOTHING") == "INSERT 0 7"
    await gwc.execute("DROP TABLE pg.move_conflict_slow")


async def test_a_conflict_not_handled_fails_as_postgresql_and_keeps_nothing(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_conflict_fail", "(id int PRIMARY KEY, s text UNIQUE)")
    await gwc.execute("INSERT INTO pg.move_conflict_fail VALUES (100, 'abc')")
    # The conflict on s is not the one handled: 23505, and the stage and rows are gone.
    assert await sqlstate_of(gwc, "INSERT INTO pg.move_conflict_fail SELECT id, s FROM pq.trap "
                             "ON CONFLICT (id) DO NOTHING") == "23505"
    assert await pgc.fetchval("SELECT count(*) FROM move_conflict_fail") == 1
    await gwc.execute("BEGIN")
    assert await gwc.execute("INSERT INTO pg.move_conflict_fail SELECT id, s FROM pq.trap "
                             "ON CONFLICT DO NOTHING") == "INSERT 0 6"
    assert await gwc.fetchval("SELECT count(*) FROM pg.move_conflict_fail") == 7
    await gwc.execute("ROLLBACK")
    assert await pgc.fetchval("SELECT count(*) FROM move_conflict_fail") == 1
    await gwc.execute("DROP TABLE pg.move_conflict_fail")


@pytest.mark.parametrize("writer", sorted(WRITERS))
async def test_a_drivers_parameters_reach_the_moves_query(gwc: asyncpg.Connection, targets: Targets,
                                                          writer: str) -> None:
    """asyncpg's execute(sql, *args): Parse with the parameters' types asked of the
    gateway, Bind with their values in binary, Execute; the query is planned with them."""
    table = f"{WRITERS[writer]}.move_params_{writer}"
    await fresh(gwc, table, "(id int PRIMARY KEY, s text)")
    move = f"INSERT INTO {table} SELECT id, s FROM pq.trap WHERE id > $1 AND s <> $2"
    assert await gwc.execute(move, 3, "") == "INSERT 0 3"  # id 7's s is NULL
    assert await targets.rows(writer, f"move_params_{writer}") == \
        [r for r in TRAP_IDS_TEXTS if r[0] > 3 and r[1] is not None]
    # The same statement again with other values (asyncpg keeps it prepared): ids 1-3
    # are new, 4 is not, and the move keeps nothing of a failed statement.
    with pytest.raises(asyncpg.UniqueViolationError):
        await gwc.execute(move, 0, "")
    assert len(await targets.rows(writer, f"move_params_{writer}")) == 3
    assert await gwc.execute(f"DELETE FROM {table}") == "DELETE 3"
    # Typed as the query types them: text where the column is text, int where it is int.
    assert await gwc.execute(f"INSERT INTO {table} SELECT id + $1, s || $2 FROM pq.trap "
                             "WHERE id = $3", 10, "!", 1) == "INSERT 0 1"
    with pytest.raises(asyncpg.DataError):
        await gwc.execute(move, "seven", "")  # asyncpg encodes by the described int4
    assert [r[0] for r in await targets.rows(writer, f"move_params_{writer}")] == [11]
    await gwc.execute(f"DROP TABLE {table}")


async def test_a_parameter_alone_is_typed_as_its_target_column_as_postgresql_does(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_bare", "(id int, n bigint, d date, s text)")
    sql = "INSERT INTO pg.move_bare (n, id, d) SELECT $1, id, $2 FROM pq.trap WHERE id <= $3"
    assert [t.name for t in (await gwc.prepare(sql)).get_parameters()] == ["int8", "date", "int4"]
    assert await gwc.execute(sql, 7, dt.date(2024, 1, 2), 2) == "INSERT 0 2"
    assert [tuple(r) for r in await pgc.fetch("SELECT id, n, d FROM move_bare ORDER BY id")] == \
        [(1, 7, dt.date(2024, 1, 2)), (2, 7, dt.date(2024, 1, 2))]
    await gwc.execute("DROP TABLE pg.move_bare")


# An upsert as drivers and ORMs bind it: parameters in the query, in ON CONFLICT's SET and
# WHERE, and in RETURNING.
UPSERT = ("INSERT INTO {table} AS t SELECT id, s, $1 FROM {trap} WHERE id <= $2 "
          "ON CONFLICT (id) DO UPDATE SET s = t.s || $3, n = $4 + excluded.n WHERE t.id <> $5 "
          "RETURNING id, s, n, $3 AS tag")
UPSERTED = [(1, "abc!", 101, "!"), (3, "a !", 101, "!"), (4, "a", 1, "!"), (5, "a_b", 1, "!")]


async def test_parameters_beyond_a_moves_query_reach_its_final_insert(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection, federation: Federation) -> None:
    await fresh(gwc, "pg.move_upsert", "(id int PRIMARY KEY, s text, n int)")
    await pgc.execute("CREATE TEMP TABLE trap_copy AS SELECT id, s FROM trap")
    await pgc.execute("CREATE TEMP TABLE move_upsert (id int PRIMARY KEY, s text, n int)")
    for conn, table, trap in ((gwc, "pg.move_upsert", "pq.trap"), (pgc, "move_upsert", "trap_copy")):
        await conn.execute(f"INSERT INTO {table} SELECT id, s, 0 FROM {trap} WHERE id <= 3")
        rows = await conn.fetch(UPSERT.format(table=table, trap=trap), 1, 5, "!", 100, 2)
        assert sorted(tuple(r) for r in rows) == UPSERTED  # binary parameters (asyncpg)
    assert sorted(tuple(r) for r in await pgc.fetch("SELECT * FROM public.move_upsert")) == \
        sorted(tuple(r) for r in await pgc.fetch("SELECT * FROM pg_temp.move_upsert"))
    # Text parameters (psycopg), no RETURNING.
    async with await psycopg.AsyncConnection.connect(federation.gateway.dsn, autocommit=True) as conn:
        cur = await conn.execute("INSERT INTO pg.move_upsert SELECT id, s, 0 FROM pq.trap "
                                 "WHERE id = %s ON CONFLICT (id) DO UPDATE SET s = %s", (5, "five"))
        assert cur.statusmessage == "INSERT 0 1"
    assert await pgc.fetchval("SELECT s FROM public.move_upsert WHERE id = 5") == "five"
    # Into SQLite or MySQL they are refused before anything is written.
    await fresh(gwc, "lite.move_params_where", "(id int PRIMARY KEY, s text)")
    with pytest.raises(asyncpg.FeatureNotSupportedError):
        await gwc.execute("INSERT INTO lite.move_params_where SELECT id, s FROM pq.trap "
                          "ON CONFLICT (id) DO UPDATE SET s = $1", "x")
    assert await gwc.fetchval("SELECT count(*) FROM lite.move_params_where") == 0
    await gwc.execute("DROP TABLE lite.move_params_where")
    await gwc.execute("DROP TABLE pg.move_upsert")
    await fresh(gwc, "pg.move_params_where", "(id int PRIMARY KEY, s text)")
    # CREATE TABLE AS takes them in its query, as PostgreSQL does.
    assert await gwc.execute("CREATE TABLE pg.move_params_ctas AS SELECT id FROM pq.trap "
                             "WHERE id > $1", 3) == "SELECT 4"
    assert await pgc.fetchval("SELECT sum(id) FROM move_params_ctas") == 4 + 5 + 6 + 7
    await gwc.execute("DROP TABLE pg.move_params_ctas")
    # PREPARE ... EXECUTE reaches the move's query too, its arguments typed by the query.
    await gwc.execute("PREPARE fill(int) AS INSERT INTO pg.move_params_where "
                      "SELECT id, s FROM pq.trap WHERE id <= $1")
    assert await gwc.execute("EXECUTE fill(2)") == "INSERT 0 2"
    assert await pgc.fetchval("SELECT count(*) FROM move_params_where") == 2
    await gwc.execute("DEALLOCATE fill")
    await gwc.execute("DROP TABLE pg.move_params_where")


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_move_in_the_extended_protocol_as_psycopg_sends_it(
        federation: Federation, targets: Targets, writer: str) -> None:
    table = f"move_psycopg_{writer}"
    with psycopg.connect(federation.gateway.dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {WRITERS[writer]}.{table}")
        conn.execute(f"CREATE TABLE {WRITERS[writer]}.{table} (id int PRIMARY KEY, s text)")
        # Parse/Bind/Describe/Execute/Sync: psycopg's execute() without parameters too.
        cur = conn.execute(f"INSERT INTO {WRITERS[writer]}.{table} SELECT id, s FROM pq.trap",
                           prepare=False)
        assert cur.rowcount == 7 and cur.statusmessage == "INSERT 0 7"
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(f"INSERT INTO {WRITERS[writer]}.{table} SELECT id, s FROM pq.trap")
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert asyncio.run(targets.rows(writer, table)) == TRAP_IDS_TEXTS  # once, not twice
        conn.execute(f"DROP TABLE {WRITERS[writer]}.{table}")


async def test_a_read_only_source_or_session_takes_no_move(gwc: asyncpg.Connection,
                                                           pgc: asyncpg.Connection) -> None:
    assert await sqlstate_of(gwc, "INSERT INTO duck.trap SELECT * FROM pg.trap") == "25006"
    await fresh(gwc, "pg.move_ro", "(id int, s text)")
    await gwc.execute("SET default_transaction_read_only = on")
    assert await sqlstate_of(gwc, "INSERT INTO pg.move_ro SELECT id, s FROM pq.trap") == "25006"
    assert await sqlstate_of(gwc, "CREATE TABLE lite.move_ro AS SELECT id, s FROM pq.trap") == "25006"
    await gwc.execute("RESET default_transaction_read_only")
    assert await pgc.fetchval("SELECT count(*) FROM move_ro") == 0


@pytest.mark.parametrize("writer", sorted(WRITERS))
async def test_create_table_as_makes_the_table_in_the_targets_types(
        gwc: asyncpg.Connection, targets: Targets, writer: str) -> None:
    table = f"move_ctas_{writer}"
    await gwc.execute(f"DROP TABLE IF EXISTS {WRITERS[writer]}.{table}")
    tag = await gwc.execute(f"CREATE TABLE {WRITERS[writer]}.{table} AS "
                            "SELECT t.id, t.s, t.n * 1.5::float8 AS f2, y.num FROM pq.trap t "
                            "LEFT JOIN pg.types y ON y.id = t.id")
    assert tag == "SELECT 7"
    assert await targets.rows(writer, table) == TRAP_IDS_TEXTS
    # The catalog sees the new table at once, with the types it was made from.
    rows = await gwc.fetch(f"SELECT id, s, f2, num FROM {WRITERS[writer]}.{table} ORDER BY id")
    assert [(r["id"], r["s"]) for r in rows] == TRAP_IDS_TEXTS
    assert rows[0]["f2"] == 10.5 and rows[0]["num"] == Decimal("1234567.125")
    types = await gwc.fetch("SELECT column_name, data_type FROM information_schema.columns "
                            "WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
                            WRITERS[writer], table)
    assert [r["column_name"] for r in types] == ["id", "s", "f2", "num"]
    assert types[0]["data_type"] in ("integer", "bigint")  # SQLite's INTEGER is 64 bits
    assert types[1]["data_type"] == "text" and types[2]["data_type"] in ("double precision", "numeric")
    await gwc.execute(f"DROP TABLE {WRITERS[writer]}.{table}")


@pytest.mark.parametrize("writer", sorted(WRITERS))
async def test_create_table_as_with_no_data_makes_an_empty_table(
        gwc: asyncpg.Connection, targets: Targets, writer: str) -> None:
    table = f"move_nodata_{writer}"
    await gwc.execute(f"DROP TABLE IF EXISTS {WRITERS[writer]}.{table}")
    tag = await gwc.execute(f"CREATE TABLE {WRITERS[writer]}.{table} AS SELECT id, s FROM pq.trap "
                            "WITH NO DATA")
    assert tag == "SELECT 0"
    assert await targets.rows(writer, table) == []
    assert await gwc.fetchval(f"SELECT count(*) FROM {WRITERS[writer]}.{table}") == 0
    await gwc.execute(f"DROP TABLE {WRITERS[writer]}.{table}")


@pytest.mark.parametrize("writer", sorted(WRITERS))
async def test_a_failing_create_table_as_leaves_no_table(
        gwc: asyncpg.Connection, targets: Targets, writer: str) -> None:
    table = f"move_ctas_fail_{writer}"
    await gwc.execute(f"DROP TABLE IF EXISTS {WRITERS[writer]}.{table}")
    # The engine fails on the last rows, after the table was made and rows went in.
    failing = (f"CREATE TABLE {WRITERS[writer]}.{table} AS SELECT g.i, 1 / (20000 - g.i) AS q "
               "FROM generate_series(1, 20000) AS g(i) CROSS JOIN pq.trap t WHERE t.id = 1")
    assert await sqlstate_of(gwc, failing) == "22012"
    with pytest.raises(Exception):
        await targets.rows(writer, table, "*")
    assert await sqlstate_of(gwc, f"SELECT * FROM {WRITERS[writer]}.{table}") == "42P01"


async def test_explain_shows_the_move_and_the_ddl_it_sends(gwc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_explained", "(id int, s text)")
    plan = [r[0] for r in await gwc.fetch("EXPLAIN INSERT INTO pg.move_explained "
                                          "SELECT id, s FROM pq.trap")]
    assert plan[0].startswith('Move: the query\'s rows go into table "move_explained" of source "pg" '
                              "(PostgreSQL) by COPY ... FROM STDIN (FORMAT binary)")
    assert any("pq" in line for line in plan[2:])  # the query's own plan follows
    plan = [r[0] for r in await gwc.fetch("EXPLAIN CREATE TABLE lite.move_never AS "
                                          "SELECT id, s FROM pq.trap")]
    assert "SQLite" in plan[0] and "batched INSERTs" in plan[0]
    assert plan[2] == "  DDL sent first: CREATE TABLE `move_never` (`id` INTEGER, `s` TEXT)"
    assert await sqlstate_of(gwc, "SELECT * FROM lite.move_never") == "42P01"  # nothing was made
    # ANALYZE runs the move, as PostgreSQL's does an INSERT, and counts what it moved.
    plan = [r[0] for r in await gwc.fetch("EXPLAIN ANALYZE INSERT INTO pg.move_explained "
                                          "SELECT id, s FROM pq.trap")]
    assert plan[0].startswith('Move: the query\'s rows go into table "move_explained"')
    assert plan[-2] == f"Rows moved: {len(TRAP_ROWS)}"
    assert plan[-1].startswith("Execution Time: ") and plan[-1].endswith(" ms")
    assert sorted(tuple(r) for r in await gwc.fetch("SELECT id, s FROM pg.move_explained")) \
        == TRAP_IDS_TEXTS
    # A failing one leaves nothing, and RETURNING's rows would not be the plan's: refused.
    assert await sqlstate_of(gwc, "EXPLAIN ANALYZE INSERT INTO pg.move_explained "
                             "SELECT id / 0, s FROM pq.trap") == "22012"
    assert await sqlstate_of(gwc, "EXPLAIN ANALYZE INSERT INTO pg.move_explained "
                             "SELECT id, s FROM pq.trap RETURNING id") == "0A000"
    assert await gwc.fetchval("SELECT count(*) FROM pg.move_explained") == len(TRAP_ROWS)
    tag = await gwc.execute("EXPLAIN ANALYZE CREATE TABLE lite.move_analyzed AS SELECT id, s FROM pq.trap")
    assert tag == "EXPLAIN"
    assert await gwc.fetchval("SELECT count(*) FROM lite.move_analyzed") == len(TRAP_ROWS)
    await gwc.execute("DROP TABLE lite.move_analyzed")
    await gwc.execute("SET default_transaction_read_only = on")
    try:
        assert await sqlstate_of(gwc, "EXPLAIN ANALYZE INSERT INTO pg.move_explained "
                                 "SELECT id, s FROM pq.trap") == "25006"
    finally:
        await gwc.execute("RESET default_transaction_read_only")


async def test_create_table_as_in_a_parquet_folder_writes_a_whole_file(
        gwc: asyncpg.Connection, file_sources: dict[str, Path]) -> None:
    folder = file_sources["parquet"]
    try:
        await _file_moves(gwc, folder)
    finally:  # the folder is the federation's: other tests list it
        for name in ("move_file", "move_file2"):
            (folder / f"{name}.parquet").unlink(missing_ok=True)


async def _file_moves(gwc: asyncpg.Connection, folder: Path) -> None:
    tag = await gwc.execute("CREATE TABLE pq.move_file AS SELECT t.id, t.s, y.num, t.ts "
                            "FROM pg.trap t LEFT JOIN pq.types y ON y.id = t.id")
    assert tag == "SELECT 7"
    assert (folder / "move_file.parquet").is_file()
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []  # no leftovers
    # The catalog sees it at once.
    rows = await gwc.fetch("SELECT id, s, num FROM pq.move_file ORDER BY id")
    assert [(r["id"], r["s"]) for r in rows] == TRAP_IDS_TEXTS
    assert rows[0]["num"] == Decimal("1234567.125")
    assert await sqlstate_of(gwc, "CREATE TABLE pq.move_file AS SELECT id FROM pg.trap") == "42P07"
    assert await sqlstate_of(gwc, "INSERT INTO pq.move_file SELECT id, s, NULL, ts FROM pg.trap") == "0A000"
    # Made from the files themselves, too.
    assert await gwc.execute("CREATE TABLE pq.move_file2 AS SELECT id * 2 AS twice FROM pq.trap") == "SELECT 7"
    assert await gwc.fetchval("SELECT sum(twice) FROM pq.move_file2") == 56


@pytest.mark.parametrize("source", ["pq", "csv"])
async def test_a_failing_file_move_leaves_no_file(gwc: asyncpg.Connection,
                                                 file_sources: dict[str, Path], source: str) -> None:
    folder = file_sources["parquet" if source == "pq" else "csv"]
    failing = (f"CREATE TABLE {source}.move_file_fail AS SELECT g.i, 1 / (200000 - g.i) AS q "
               "FROM generate_series(1, 200000) AS g(i) CROSS JOIN pg.trap t WHERE t.id = 1")
    assert await sqlstate_of(gwc, failing) == "22012"
    assert [p.name for p in folder.iterdir() if p.stem == "move_file_fail"] == []
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []
    assert await sqlstate_of(gwc, f"SELECT * FROM {source}.move_file_fail") == "42P01"


# A CSV target gets what PostgreSQL's COPY (FORMAT csv, HEADER) writes, booleans spelled
# true/false: quoting, NULL and the empty string, floats, numerics, intervals, bytea.
CSV_COLUMNS = ("t.id, t.s, t.f, t.n, t.ts, {even} AS even, t.id * 1.25 AS num, "
               "CASE t.id WHEN 1 THEN 'x,\"y\"' WHEN 2 THEN '' WHEN 3 THEN 'two\nlines' END AS tricky, "
               "t.id * interval '1 day 2 hours' AS span, '\\x00ff'::bytea AS bin, "
               "timestamptz '2024-01-01 12:00:00+05:30' AS at")


async def test_create_table_as_in_a_csv_folder_writes_the_file_as_copy_csv_does(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection, file_sources: dict[str, Path]) -> None:
    folder = file_sources["csv"]
    await gwc.execute("SET TimeZone = 'America/New_York'")  # the file is written in UTC
    try:
        tag = await gwc.execute("CREATE TABLE csv.move_csv AS SELECT "
                                + CSV_COLUMNS.format(even="t.id % 2 = 0") + " FROM pg.trap t ORDER BY t.id")
        assert tag == "SELECT 7"
        assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []
        await pgc.execute("SET TimeZone = 'UTC'")
        expected = await psql_copy(pgc, "SELECT " + CSV_COLUMNS.format(even="(t.id % 2 = 0)::text")
                                   + " FROM trap t ORDER BY t.id")
        assert (folder / "move_csv.csv").read_bytes() == expected
        # The catalog sees it at once, and reads the types back.
        rows = await gwc.fetch("SELECT id, s, even, tricky FROM csv.move_csv ORDER BY id")
        assert [(r["id"], r["s"]) for r in rows] == TRAP_IDS_TEXTS
        assert [r["even"] for r in rows] == [i % 2 == 0 for i in range(1, 8)]
        assert [r["tricky"] for r in rows[:4]] == ['x,"y"', "", "two\nlines", None]
        assert await sqlstate_of(gwc, "CREATE TABLE csv.move_csv AS SELECT 1 AS id") == "42P07"
        assert await sqlstate_of(gwc, "INSERT INTO csv.move_csv (id) SELECT id FROM pg.trap") == "0A000"
    finally:
        await gwc.execute("RESET TimeZone")
        (folder / "move_csv.csv").unlink(missing_ok=True)


@pytest.mark.parametrize("source", ["pq", "csv"])
async def test_insert_into_a_folder_table_adds_one_whole_file(
        gwc: asyncpg.Connection, file_sources: dict[str, Path], source: str) -> None:
    folder = file_sources["parquet" if source == "pq" else "csv"] / "move_parts"
    folder.mkdir()
    try:
        if source == "pq":
            pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "s": ["one"], "flag": [True]}),
                           folder / "part-0.parquet")
        else:
            (folder / "part-0.csv").write_text("id,s,flag\n1,one,true\n")
        assert await gwc.fetchval(f"SELECT count(*) FROM {source}.move_parts") == 1
        tag = await gwc.execute(f"INSERT INTO {source}.move_parts (id, s) "
                                "SELECT id, s FROM pg.trap WHERE id > 5")
        assert tag == "INSERT 0 2"
        files = sorted(p.name for p in folder.iterdir())
        assert len(files) == 2 and not any(f.startswith(".") for f in files), files
        rows = await gwc.fetch(f"SELECT id, s, flag FROM {source}.move_parts ORDER BY id")
        assert [tuple(r) for r in rows] == [(1, "one", True), (6, "axb", None), (7, None, None)]
        # PostgreSQL's assignment casts to the files' types, and their errors.
        assert await gwc.execute(f"INSERT INTO {source}.move_parts SELECT 8, 'eight', 't' "
                                 "FROM pg.trap WHERE id = 1") == "INSERT 0 1"
        assert await gwc.fetchval(f"SELECT flag FROM {source}.move_parts WHERE id = 8") is True
        # From the table itself, and from VALUES.
        assert await gwc.execute(f"INSERT INTO {source}.move_parts SELECT id + 100, s, flag "
                                 f"FROM {source}.move_parts WHERE id = 1") == "INSERT 0 1"
        assert await gwc.execute(f"INSERT INTO {source}.move_parts VALUES (9, 'nine', false)") \
            == "INSERT 0 1"
        assert [tuple(r) for r in await gwc.fetch(
            f"SELECT id, s, flag FROM {source}.move_parts WHERE id IN (9, 101) ORDER BY id")] \
            == [(9, "nine", False), (101, "one", True)]
        assert await sqlstate_of(gwc, f"INSERT INTO {source}.move_parts SELECT s, s, NULL "
                                 "FROM pg.trap") == "42804"
        assert await sqlstate_of(gwc, f"INSERT INTO {source}.move_parts (id) SELECT 'x' "
                                 "FROM pg.trap") == "22P02"
        files = sorted(p.name for p in folder.iterdir())
        # A failure mid-move and an empty INSERT add no file.
        failing = (f"INSERT INTO {source}.move_parts (id) SELECT 1 / (200000 - g.i) "
                   "FROM generate_series(1, 200000) AS g(i) CROSS JOIN pg.trap t WHERE t.id = 1")
        assert await sqlstate_of(gwc, failing) == "22012"
        assert await gwc.execute(f"INSERT INTO {source}.move_parts (id) SELECT id FROM pg.trap "
                                 "WHERE id < 0") == "INSERT 0 0"
        assert sorted(p.name for p in folder.iterdir()) == files
        assert await gwc.fetchval(f"SELECT count(*) FROM {source}.move_parts") == 6
        plan = "\n".join(r[0] for r in await gwc.fetch(
            f"EXPLAIN INSERT INTO {source}.move_parts (id) SELECT id FROM pg.trap"))
        kind = "Parquet" if source == "pq" else "CSV"
        assert f'into table "move_parts" of source "{source}"' in plan and f"a {kind} file" in plan, plan
        # A table of one file is written whole; a file has no transaction to join.
        assert await sqlstate_of(gwc, f"INSERT INTO {source}.trap SELECT * FROM pg.trap") == "0A000"
        assert await sqlstate_of(gwc, f"INSERT INTO {source}.nowhere SELECT * FROM pg.trap") == "42P01"
        await gwc.execute("BEGIN")
        try:
            assert await sqlstate_of(gwc, f"INSERT INTO {source}.move_parts (id) "
                                     "SELECT id FROM pg.trap") == "0A000"
        finally:
            await gwc.execute("ROLLBACK")
        assert sorted(p.name for p in folder.iterdir()) == files
    finally:
        shutil.rmtree(folder)


async def psql_copy(pgc: asyncpg.Connection, query: str) -> bytes:
    """What PostgreSQL's own COPY (query) TO STDOUT (FORMAT csv, HEADER) writes."""
    chunks: list[bytes] = []

    async def take(data: bytes) -> None:
        chunks.append(data)
    await pgc.copy_from_query(query, output=take, format="csv", header=True)
    return b"".join(chunks)


async def wait_for_backend(pgc: asyncpg.Connection, like: str, present: bool = True) -> None:
    """Until a backend runs (or no longer runs) a statement LIKE `like`."""
    for _ in range(400):
        found = await pgc.fetchval("SELECT count(*) FROM pg_stat_activity WHERE query LIKE $1 "
                                   "AND pid <> pg_backend_pid() AND state <> 'idle'", like)
        if bool(found) == present:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no backend {'began' if present else 'ended'} {like!r}")


async def test_the_client_leaving_mid_move_leaves_nothing(
        federation: Federation, gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    await fresh(gwc, "pg.move_left", "(id bigint, s text)")
    leaving = await asyncpg.connect(federation.gateway.dsn)
    move = ("INSERT INTO pg.move_left SELECT g.i, t.s FROM generate_series(1, 50000000) AS g(i) "
            "CROSS JOIN pq.trap t WHERE t.id = 1")
    running = asyncio.ensure_future(leaving.execute(move))
    await wait_for_backend(pgc, "COPY%move_left%")
    leaving.terminate()  # the socket closes under the statement
    with pytest.raises((asyncpg.ConnectionDoesNotExistError, asyncpg.InterfaceError)):
        await running
    await wait_for_backend(pgc, "COPY%move_left%", present=False)
    assert await pgc.fetchval("SELECT count(*) FROM move_left") == 0


async def test_a_source_failing_mid_read_leaves_nothing(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection, targets: Targets) -> None:
    await fresh(gwc, "pg.move_src_big", "(id bigint, s text)")
    await pgc.execute("INSERT INTO move_src_big SELECT g, 'row ' || g FROM generate_series(1, 3000000) g")
    await fresh(gwc, "lite.move_from_failing", "(id bigint, s text)")
    running = asyncio.ensure_future(gwc.execute(
        "INSERT INTO lite.move_from_failing SELECT b.id, b.s FROM pg.move_src_big b "
        "JOIN pq.trap t ON t.id = b.id % 7 + 1"))
    # The gateway's read of the source is under way: its backend is killed.
    await wait_for_backend(pgc, "%move_src_big%")
    await asyncio.sleep(0.3)
    killed = await pgc.fetchval(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE query LIKE '%move_src_big%' AND pid <> pg_backend_pid() AND state <> 'idle'")
    assert killed >= 1
    with pytest.raises(asyncpg.PostgresError) as failed:
        await asyncio.wait_for(running, TIMEOUT)
    assert failed.value.sqlstate.startswith("08") or failed.value.sqlstate == "57P01"
    assert await targets.rows("sqlite", "move_from_failing") == []
    await gwc.execute("DROP TABLE lite.move_from_failing")
    await gwc.execute("DROP TABLE pg.move_src_big")


@pytest.fixture(scope="module")
def cluster_gateway(federation: Federation, tmp_path_factory: pytest.TempPathFactory
                    ) -> Iterator[GatewayProcess]:
    """A gateway over the federation's sources whose Spark is the tests' standalone
    cluster (a master and a worker on loopback)."""
    root = tmp_path_factory.mktemp("moves_cluster")
    cluster = SparkCluster(root / "cluster").start(connect=False)
    try:
        gateway = start_gateway(cluster.gateway_engine_config("standalone") + federation.config,
                                root / "gateway")
        try:
            yield gateway
        finally:
            gateway.stop()
    finally:
        cluster.stop()


@pytest.mark.spark
@pytest.mark.parametrize("spark", ["local", pytest.param("standalone", marks=pytest.mark.cluster)])
@pytest.mark.parametrize("writer", sorted(WRITERS))
async def test_a_move_runs_on_spark_when_the_session_chose_it(
        federation: Federation, targets: Targets, writer: str, spark: str,
        request: pytest.FixtureRequest) -> None:
    # the cluster starts only for the tests that ask for it
    gateway = federation.gateway if spark == "local" else request.getfixturevalue("cluster_gateway")
    conn = await asyncpg.connect(gateway.dsn, command_timeout=300)
    try:
        await conn.execute("SET fedgate.engine = 'spark'")
        table = f"move_spark_{spark}_{writer}"
        await fresh(conn, f"{WRITERS[writer]}.{table}", "(id int PRIMARY KEY, s varchar(10))")
        move = (f"INSERT INTO {WRITERS[writer]}.{table} SELECT t.id, p.s FROM pq.trap t "
                "JOIN pg.trap p ON p.id = t.id")
        plan = [r[0] for r in await conn.fetch(f"EXPLAIN {move}")]
        assert any(line.startswith("Engine spark (SET fedgate.engine)") for line in plan)
        assert await conn.execute(move) == "INSERT 0 7"
        assert await targets.rows(writer, table) == TRAP_IDS_TEXTS
        # A failure on Spark rolls back as on DuckDB.
        assert await sqlstate_of(conn, move) == "23505"
        assert await targets.rows(writer, table) == TRAP_IDS_TEXTS
        await conn.execute(f"DROP TABLE {WRITERS[writer]}.{table}")
    finally:
        await conn.close()
