"""Session fixtures: one real server or file per source kind, holding the same trap table.

PostgreSQL reuses the suite's session cluster (a database of our own with
log_statement = all); MariaDB starts once per session with its general log on; SQLite,
DuckDB and Parquet files are written to a temp dir, with statement logs of our own.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncmy
import asyncpg
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.mariadb import MariaDBServer, start_mariadb
from tests.support.postgres import PostgresServer

UTC = dt.timezone.utc
# The trap table: text with case and trailing-space twins, NaN, a DST-crossing instant.
TRAP_ROWS = [
    (1, "abc", 1.5, 7, dt.datetime(2024, 3, 10, 6, 59, 59, tzinfo=UTC)),
    (2, "ABC", float("nan"), -7, dt.datetime(2024, 3, 10, 7, 0, 0, tzinfo=UTC)),
    (3, "a ", 0.1, 2, dt.datetime(2024, 11, 3, 5, 30, tzinfo=UTC)),
    (4, "a", 2.5, 0, None),
    (5, "a_b", None, None, dt.datetime(2024, 1, 1, tzinfo=UTC)),
    (6, "axb", -1.0, 3, dt.datetime(2024, 6, 1, 12, tzinfo=UTC)),
    (7, None, 1e300, 1, dt.datetime(2024, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)),
]
TRAP_SCHEMA = pa.schema([("id", pa.int32()), ("s", pa.string()), ("f", pa.float64()),
                         ("n", pa.int32()), ("ts", pa.timestamp("us", tz="UTC"))])


def trap_table() -> pa.Table:
    return pa.Table.from_pylist([dict(zip(TRAP_SCHEMA.names, r)) for r in TRAP_ROWS],
                                schema=TRAP_SCHEMA)


@dataclass
class PgSource:
    server: PostgresServer
    dsn: str


@pytest.fixture(scope="session")
def pg_source(postgres_server: PostgresServer) -> PgSource:
    async def setup() -> None:
        admin = await asyncpg.connect(postgres_server.dsn)
        await admin.execute("CREATE DATABASE fedgate_src")
        await admin.execute("ALTER DATABASE fedgate_src SET log_statement = 'all'")
        await admin.close()
        conn = await asyncpg.connect(postgres_server.dsn.rsplit("/", 1)[0] + "/fedgate_src")
        await conn.execute("CREATE TABLE trap (id int PRIMARY KEY, s text, f float8, n int, "
                           "ts timestamptz)")
        await conn.executemany("INSERT INTO trap VALUES ($1, $2, $3, $4, $5)", TRAP_ROWS)
        await conn.execute("ANALYZE trap")
        await conn.close()

    asyncio.run(setup())
    return PgSource(postgres_server, postgres_server.dsn.rsplit("/", 1)[0] + "/fedgate_src")


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[MariaDBServer]:
    server = start_mariadb()
    try:
        async def setup() -> None:
            conn = await asyncmy.connect(host=server.host, port=server.port, user="root",
                                         autocommit=True)
            async with conn.cursor() as cur:
                await cur.execute("CREATE DATABASE shop CHARACTER SET utf8mb4 "
                                  "COLLATE utf8mb4_general_ci")
                # NaN cannot be stored in MySQL: that row's f is NULL there.
                await cur.execute("CREATE TABLE shop.trap (id int PRIMARY KEY, s varchar(20), "
                                  "f double, n int, ts timestamp(6) NULL)")
                await cur.execute("SET time_zone = '+00:00'")
                rows = [(i, s, None if f != f else f, n, ts.replace(tzinfo=None) if ts else None)
                        for i, s, f, n, ts in TRAP_ROWS]
                await cur.executemany("INSERT INTO shop.trap VALUES (%s, %s, %s, %s, %s)", rows)
            conn.close()

        asyncio.run(setup())
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def file_sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("file_sources")
    lite = root / "app.db"
    con = sqlite3.connect(lite)
    con.execute("CREATE TABLE trap (id INTEGER PRIMARY KEY, s TEXT, f REAL, n INTEGER, ts TIMESTAMP)")
    con.executemany("INSERT INTO trap VALUES (?, ?, ?, ?, ?)",
                    [(i, s, f, n, ts.strftime("%Y-%m-%d %H:%M:%S.%f") if ts else None)
                     for i, s, f, n, ts in TRAP_ROWS])
    con.commit()
    con.close()
    duck = root / "wh.duckdb"
    dcon = duckdb.connect(str(duck))
    trap_arrow = trap_table()
    dcon.execute("CREATE TABLE trap AS SELECT * FROM trap_arrow")
    dcon.close()
    files = root / "files"
    files.mkdir()
    pq.write_table(trap_arrow, files / "trap.parquet", row_group_size=2)
    return {"sqlite": lite, "duckdb": duck, "parquet": files}
