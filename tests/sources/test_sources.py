"""Every source kind through the real gateway: catalog, types, scans, errors, cancel.

One gateway (the session `federation` fixture) mounts PostgreSQL, MariaDB, SQLite, DuckDB,
Parquet and CSV sources holding the same `trap` and `types` tables. Answers are compared
with what PostgreSQL itself returns for the same values: catalog rows from
information_schema, PostgreSQL type names and values over the wire (binary, asyncpg), and
SQLSTATEs. Where a source cannot hold a PostgreSQL type the divergence is listed below,
so it is a decision, not an accident.
"""

from __future__ import annotations

import asyncio
import os
import time

import asyncmy
import asyncpg
import pytest

from connectors.sqlite.source import SQLiteSource, SQLiteStream
from pgwire.errors import PgError
from tests.sources.conftest import KINDS, SOURCE_OF, TYPE_COLUMNS, Federation
from tests.support.mariadb import MariaDBServer
from tests.support.slow import counting, cpu_seconds, cross_join_count

# The columns of `types` each kind holds, and where its PostgreSQL type differs from
# PostgreSQL's own table (column -> the information_schema data_type it shows instead).
HELD = {
    "postgres": (TYPE_COLUMNS, {}),
    "mysql": (TYPE_COLUMNS, {}),
    "duckdb": (TYPE_COLUMNS, {}),
    "parquet": (tuple(c for c in TYPE_COLUMNS if c != "iv"), {}),  # Parquet has no interval
    # SQLite: integers are 64-bit, NUMERIC affinity is a double, no zones/uuid/json/interval.
    "sqlite": (("id", "num", "f8", "i8", "b", "ts", "d", "bin", "t"),
               {"id": "bigint", "num": "double precision"}),
    # CSV: types are inferred from the text (integers as bigint).
    "csv": (("id", "f8", "i8", "b", "ts", "tstz", "d", "t"), {"id": "bigint"}),
}
# Row estimates the catalog shows (pg_class.reltuples): None where the source has none.
ESTIMATES = {"postgres": 7, "mysql": 7, "sqlite": 7, "duckdb": 7, "parquet": 7, "csv": None}


async def gateway(fed: Federation) -> asyncpg.Connection:
    """A session on the planner's road (the relay off), as the shared `gw` fixture."""
    conn = await asyncpg.connect(fed.gateway.dsn)
    await conn.execute("SET fedgate.relay = off")
    return conn


COLUMNS_SQL = ("SELECT column_name, data_type, numeric_precision, numeric_scale "
               "FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'types' "
               "ORDER BY ordinal_position")


@pytest.mark.parametrize("kind", KINDS)
async def test_catalog_discovery(gw, pgref, kind: str) -> None:
    schema = SOURCE_OF[kind]
    held, differs = HELD[kind]
    tables = {r[0] for r in await gw.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", schema)}
    columns = [tuple(r.values()) for r in await gw.fetch(COLUMNS_SQL, schema)]
    reference = {r[0]: tuple(r.values()) for r in await pgref.fetch(COLUMNS_SQL, "public")}
    estimate = await gw.fetchval(
        "SELECT c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = $1 AND c.relname = 'trap'", schema)
    assert {"trap", "types"} <= tables
    want = []
    for name in held:
        row = reference[name]
        if name in differs:
            row = (name, differs[name], *columns[held.index(name)][2:])
        want.append(row)
    assert columns == want
    assert estimate == (ESTIMATES[kind] if ESTIMATES[kind] is not None else -1)


@pytest.mark.parametrize("kind", KINDS)
async def test_types_match_postgres(gw, pgref, kind: str) -> None:
    """Type names (RowDescription) and values (binary format) of every common type."""
    held, differs = HELD[kind]
    select = f"SELECT {', '.join(held)} FROM {{}} ORDER BY id"
    got_stmt = await gw.prepare(select.format(f"{SOURCE_OF[kind]}.types"))
    got = await got_stmt.fetch()
    want_stmt = await pgref.prepare(select.format("types"))
    want = await want_stmt.fetch()
    got_types = [a.type.name for a in got_stmt.get_attributes()]
    want_types = [a.type.name for a in want_stmt.get_attributes()]
    for column, got_type, want_type in zip(held, got_types, want_types):
        if column not in differs:
            assert got_type == want_type, column
    for got_row, want_row in zip(got, want):
        for column in held:
            value, expected = got_row[column], want_row[column]
            if column in differs and expected is not None:
                expected = type(value)(expected)  # e.g. numeric held as a double
            assert value == expected, (column, value, expected)


@pytest.mark.parametrize("kind", KINDS)
async def test_computed_booleans_are_bool(gw, pgref, kind: str) -> None:
    """MySQL answers `a = b` with an integer; clients must still see PostgreSQL's bool."""
    sql = ("SELECT b, id = 1 AS eq, NOT b AS nb, b AND id > 1 AS both_, "
           "coalesce(b, false) AS cb FROM {} ORDER BY id")
    stmt = await gw.prepare(sql.format(f"{SOURCE_OF[kind]}.types"))
    got = [tuple(r.values()) for r in await stmt.fetch()]
    want = [tuple(r.values()) for r in await pgref.fetch(sql.format("types"))]
    types = [a.type.name for a in stmt.get_attributes()]
    assert types == ["bool"] * 5
    assert got == want


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sql", [
    "SELECT t, id FROM {} WHERE id >= 2 ORDER BY id",
    "SELECT id, f8 FROM {} WHERE f8 < 0 OR f8 IS NULL ORDER BY id",
    "SELECT id FROM {} ORDER BY id LIMIT 2",
    "SELECT id, t FROM {} WHERE t <> '' ORDER BY id DESC LIMIT 1",
    "SELECT count(*), count(f8), max(id) FROM {}",
])
async def test_scans_with_projection_filter_limit(gw, pgref, kind: str, sql: str) -> None:
    got = [tuple(r.values()) for r in await gw.fetch(sql.format(f"{SOURCE_OF[kind]}.types"))]
    want = [tuple(r.values()) for r in await pgref.fetch(sql.format("types"))]
    assert got == want


@pytest.mark.parametrize("kind", KINDS)
async def test_unknown_table_and_column(gw, kind: str) -> None:
    with pytest.raises(asyncpg.UndefinedTableError):
        await gw.fetch(f"SELECT * FROM {SOURCE_OF[kind]}.no_such_table")
    with pytest.raises(asyncpg.UndefinedColumnError):
        await gw.fetch(f"SELECT no_such_column FROM {SOURCE_OF[kind]}.trap")
    assert await gw.fetchval(f"SELECT count(*) FROM {SOURCE_OF[kind]}.trap") == 7


# What a client sees when a source is gone: PostgreSQL's "connection exception" class
# for servers, an I/O-style error for files (or, for a file source whose file was removed,
# no such table: it is re-listed on a miss); the gateway itself carries on.
@pytest.mark.parametrize("kind", ["postgres", "mysql", "sqlite", "parquet"])
async def test_unreachable_source(federation: Federation, kind: str) -> None:
    name = {"postgres": "gone_pg", "mysql": "gone_my", "sqlite": "gone_lite",
            "parquet": "gone_pq"}[kind]
    table = {"postgres": "trap", "mysql": "trap"}.get(kind, "t")
    conn = await gateway(federation)
    try:
        assert await conn.fetchval(f"SELECT count(*) FROM {name}.{table}") >= 1
        if kind in federation.proxies:
            federation.proxies[kind].close()
        else:
            os.remove(federation.gone_files[kind])
        with pytest.raises(asyncpg.PostgresError) as caught:
            await asyncio.wait_for(conn.fetch(f"SELECT count(*) FROM {name}.{table}"), 30)
        gone = ("08", "58", "42") if kind == "parquet" else ("08", "58")
        assert caught.value.sqlstate[:2] in gone, caught.value
        # Other sources, on the same connection and on a new one, are unaffected.
        assert await conn.fetchval("SELECT count(*) FROM lite.trap") == 7
    finally:
        await conn.close()
    again = await gateway(federation)
    try:
        assert await again.fetchval("SELECT count(*) FROM my.trap") == 7
    finally:
        await again.close()


# The sources DuckDB reads: it answers count(*) over a cross join from its inputs' row
# counts at once, so these get a count that goes up a row at a time, shipped whole to them.
ON_DUCKDB = ("duckdb", "parquet", "csv")


def slow_query(kind: str) -> str:
    """A statement that keeps the source of `kind` busy, run by that source itself: a
    cross join it walks (seconds), or on DuckDB a count up to a billion (half an hour)."""
    table = f"{SOURCE_OF[kind]}.trap"
    return counting(table) if kind in ON_DUCKDB else cross_join_count(table)


async def _still_running(kind: str, pgref: asyncpg.Connection, mariadb: MariaDBServer) -> int:
    """Statements of the slow query the remote server is still running."""
    if kind == "postgres":
        return await pgref.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1",
            "%AS j)%")
    conn = await asyncmy.connect(host=mariadb.host, port=mariadb.port, user="root")
    try:
        async with conn.cursor() as cur:
            await cur.execute("SELECT count(*) FROM information_schema.PROCESSLIST "
                              "WHERE INFO LIKE %s AND ID <> CONNECTION_ID()", ("%AS `j`%",))
            return (await cur.fetchone())[0]
    finally:
        conn.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_cancel_leaves_gateway_usable(federation: Federation, pgref, mariadb_server,
                                            kind: str) -> None:
    conn = await gateway(federation)
    try:
        running = asyncio.create_task(conn.fetch(slow_query(kind)))
        if kind in ("postgres", "mysql"):  # cancel once the server is really at work
            for _ in range(100):
                if await _still_running(kind, pgref, mariadb_server):
                    break
                await asyncio.sleep(0.05)
            assert await _still_running(kind, pgref, mariadb_server) == 1
        else:
            await asyncio.sleep(0.3)
        assert not running.done(), running  # there is work to cancel
        running.cancel()  # asyncpg sends the gateway a CancelRequest
        with pytest.raises(asyncio.CancelledError):
            await running
        # The session is usable at once...
        assert await conn.fetchval(f"SELECT count(*) FROM {SOURCE_OF[kind]}.trap") == 7
        # ...and the work stopped: on the remote server for PostgreSQL and MariaDB, in the
        # gateway's own process for the in-process sources (a core would stay busy).
        if kind in ("postgres", "mysql"):
            for _ in range(40):
                if not await _still_running(kind, pgref, mariadb_server):
                    break
                await asyncio.sleep(0.05)
            assert await _still_running(kind, pgref, mariadb_server) == 0
        else:
            pid = federation.gateway.proc.pid
            before = cpu_seconds(pid)
            await asyncio.sleep(0.5)
            assert cpu_seconds(pid) - before < 0.25
    finally:
        await conn.close()


async def test_sqlite_close_waits_for_the_running_worker(file_sources: dict) -> None:
    """Closing a SQLite stream while its worker thread is inside SQLite interrupts the
    statement and closes the connection only after the worker left it."""
    source = SQLiteSource("lite", file_sources["sqlite"])
    # 0.2 s: the worker is inside sqlite3_step; 0: it may not have entered SQLite yet
    # (interrupt() alone would miss a statement that starts after it).
    for delay in (0.2, 0.0, 0.2, 0.0):
        stream = SQLiteStream(source, None, [])
        running = asyncio.create_task(stream.start(cross_join_count("trap"), []))
        await asyncio.sleep(delay)
        started = time.monotonic()
        await stream.aclose()
        assert time.monotonic() - started < 2.0
        worker = stream._worker
        assert worker is None or worker.done()  # nothing is inside the connection now
        with pytest.raises(PgError) as caught:
            await running
        assert caught.value.sqlstate == "57014"
        with pytest.raises(Exception, match="closed"):
            stream._con.execute("SELECT 1")
