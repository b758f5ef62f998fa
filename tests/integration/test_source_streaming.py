"""Streaming keeps memory flat: 5,000,000-row tables read through every database source.

Each database source gets a table of 5M rows × 4 columns (int, bigint, float, text;
about 200 MB as Arrow): PostgreSQL (a database of our own on the session server),
MariaDB (a server of our own), a SQLite file and a DuckDB file. The source's `scan()`
is consumed batch by batch in this process, and the peak resident set size during the
scan (VmHWM, reset through /proc/self/clear_refs just before) may exceed the resident
size at the start by less than 100 MB: a source that buffered its result would need
twice that. A warm-up scan of 300,000 rows comes first, so one-time costs (pools,
threads and their allocator arenas) are not counted as growth.

The same PostgreSQL table is then read end to end through a real gateway process by a
slow client (a cursor fetching 1,000 rows at a time, with pauses): the gateway's peak
RSS stays within the same bound, PostgreSQL is seen waiting for the gateway to read
(the backpressure reaches the source), and closing the cursor stops the remote query.

Data is generated inside each database (no rows pass through Python). MariaDB's rows
come from a view over its SEQUENCE engine (`seq_1_to_5000000`): filling a real 5M-row
table takes 10-90 s on these shared machines, and what is measured here, our memory
while rows stream in through an unbuffered cursor, does not depend on where the server
reads them from.
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncmy
import asyncpg
import duckdb
import psycopg
import pytest

from connectors.base import ScanRequest, count_rows
from connectors.duckdb.source import DuckDBSource
from connectors.mysql.source import MySQLSource
from connectors.postgres.source import PostgresSource
from connectors.sqlite.source import SQLiteSource
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.mariadb import start_mariadb
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.load

ROWS = 5_000_000
GROWTH_MB = 100
COLUMNS = ["id", "big", "f", "s"]
DATABASE = "fedgate_streaming"
SCAN_TIMEOUT_S = 240  # per source: bounded even on a loaded 2-core machine
WARM_UP_ROWS = 300_000


def status_kb(pid: int | str = "self") -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of a process, in kB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def reset_peak(pid: int | str = "self") -> None:
    """Make VmHWM start again from the current RSS (Linux: clear_refs 5)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    now = status_kb(pid)
    assert now["VmHWM"] <= now["VmRSS"] + 4096, f"peak RSS was not reset: {now}"


# --------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def pg_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    dsn = postgres_server.dsn.rsplit("/", 1)[0] + f"/{DATABASE}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE UNLOGGED TABLE t AS SELECT g AS id, g::int8 * 1000003 AS big, "
            f"g * 0.5::float8 AS f, 'name-' || g AS s FROM generate_series(1, {ROWS}) g")
        conn.execute("ANALYZE t")
    yield dsn
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {DATABASE} WITH (FORCE)")


@pytest.fixture(scope="module")
def mariadb_dsn() -> Iterator[str]:
    server = start_mariadb()
    try:
        async def setup() -> None:
            conn = await asyncmy.connect(host=server.host, port=server.port, user="root",
                                         autocommit=True)
            try:
                async with conn.cursor() as cur:
                    await cur.execute("CREATE DATABASE stream")
                    await cur.execute(
                        "CREATE VIEW stream.t AS SELECT CAST(seq AS INT) AS id, "
                        "CAST(seq * 1000003 AS SIGNED) AS big, seq * 5e-1 AS f, "
                        f"CONCAT('name-', seq) AS s FROM stream.seq_1_to_{ROWS}")
            finally:
                conn.close()

        # Requested from inside the test's running event loop: set up on a loop of its own.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, setup()).result()
        yield server.dsn("stream")
    finally:
        server.stop()


@pytest.fixture(scope="module")
def sqlite_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("streaming") / "t.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, big INTEGER, f REAL, s TEXT)")
    con.execute(
        f"WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < {ROWS}) "
        "INSERT INTO t SELECT x, x * 1000003, x * 0.5, 'name-' || x FROM g")
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def duckdb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("streaming") / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE t AS SELECT range::INTEGER AS id, range * 1000003 AS big, "
                f"range * 0.5::DOUBLE AS f, 'name-' || range AS s FROM range(1, {ROWS} + 1)")
    con.close()
    return path


# --------------------------------------------------------------------------- in process


async def scan_growth(source: Any) -> tuple[int, float, float]:
    """Rows read, peak RSS growth in MB and seconds for one whole scan of table `t`."""
    info = next(t for t in await source.tables() if t.ref.name == "t")
    # Warm up first, so that one-time costs are paid before the baseline: pools and
    # connections, worker threads, their allocator arenas, parsers' code paths. What is
    # measured is growth while 5M rows stream, which must not depend on the row count.
    await count_rows(await source.scan(ScanRequest(info.ref, list(COLUMNS), limit=WARM_UP_ROWS)))
    gc.collect()
    reset_peak()
    base = status_kb()["VmRSS"]
    started = time.monotonic()
    rows = await asyncio.wait_for(
        count_rows(await source.scan(ScanRequest(info.ref, list(COLUMNS)))), SCAN_TIMEOUT_S)
    seconds = time.monotonic() - started
    growth = (status_kb()["VmHWM"] - base) / 1024
    return rows, growth, seconds


SOURCES: dict[str, Callable[[pytest.FixtureRequest], Any]] = {
    "postgres": lambda r: PostgresSource("pg", r.getfixturevalue("pg_dsn")),
    "mysql": lambda r: MySQLSource("shop", r.getfixturevalue("mariadb_dsn")),
    "sqlite": lambda r: SQLiteSource("lite", r.getfixturevalue("sqlite_path")),
    "duckdb": lambda r: DuckDBSource("duck", r.getfixturevalue("duckdb_path")),
}


@pytest.fixture(params=list(SOURCES))
async def source(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    made = SOURCES[request.param](request)
    try:
        yield made
    finally:
        await made.close()


async def test_scan_keeps_memory_flat(source: Any) -> None:
    rows, growth, seconds = await scan_growth(source)
    print(f"{type(source).__name__}: {rows:,} rows in {seconds:.1f} s, "
          f"peak RSS growth {growth:.1f} MB")
    assert rows == ROWS
    assert growth < GROWTH_MB, f"peak RSS grew by {growth:.0f} MB while streaming"


# --------------------------------------------------------------------------- gateway


@pytest.fixture(scope="module")
def pg_gateway(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gateway = start_gateway(f'[catalog]\nsearch_path = ["pg"]\n'
                            f'[sources.pg]\nkind = "postgres"\ndsn = "{pg_dsn}"\n',
                            tmp_path_factory.mktemp("streaming_gw"))
    try:
        yield gateway
    finally:
        gateway.stop()


async def _fedgate_backends(dsn: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetch(
            "SELECT state, wait_event, query FROM pg_stat_activity "
            "WHERE datname = $1 AND application_name = 'fedgate'", DATABASE)
    finally:
        await conn.close()


async def test_slow_cursor_through_gateway_keeps_memory_flat(pg_gateway: GatewayProcess,
                                                            pg_dsn: str) -> None:
    pid = pg_gateway.proc.pid
    conn = await asyncpg.connect(pg_gateway.dsn)
    try:
        # Warm-up as in the in-process scans: pool, plan cache, threads, encoders.
        await conn.fetch(f"SELECT id, big, f, s FROM t LIMIT {WARM_UP_ROWS}")
        reset_peak(pid)
        base = status_kb(pid)["VmRSS"]
        held_back, rows, samples = False, 0, []
        transaction = conn.transaction()
        await transaction.start()
        cursor = await conn.cursor("SELECT id, big, f, s FROM t")
        started = time.monotonic()
        while time.monotonic() - started < 8:
            rows += len(await cursor.fetch(1000))
            await asyncio.sleep(0.02)
            if len(samples) < (time.monotonic() - started) / 0.5:
                samples.append(status_kb(pid)["VmRSS"] // 1024)
                held_back = held_back or any(
                    r["wait_event"] == "ClientWrite" for r in await _fedgate_backends(pg_dsn))
        growth = (status_kb(pid)["VmHWM"] - base) / 1024
        print(f"slow cursor: {rows:,} rows in 8 s; gateway RSS {base // 1024} MB at the start, "
              f"samples {samples} MB, peak growth {growth:.1f} MB")
        assert rows >= 10_000
        assert growth < GROWTH_MB, f"the gateway's peak RSS grew by {growth:.0f} MB"
        assert held_back, "PostgreSQL never waited for the gateway to read"
        await transaction.rollback()  # closes the cursor mid-result
    finally:
        await conn.close()
    deadline = time.monotonic() + 10
    while any(r["state"] == "active" for r in await _fedgate_backends(pg_dsn)):
        assert time.monotonic() < deadline, "the remote COPY kept running after the cursor closed"
        await asyncio.sleep(0.1)
