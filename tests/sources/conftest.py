"""Session fixtures: one real server or file per source kind, holding the same tables.

PostgreSQL reuses the suite's session cluster (a database of our own with
log_statement = all); MariaDB starts once per session with its general log on; SQLite,
DuckDB, Parquet and CSV files are written to a temp dir, with statement logs of our own.
`federation` serves all six through ONE real gateway process.

Tables, the same in every source as far as the source can hold the values:
- `trap`: text with case and trailing-space twins, NaN, instants either side of a DST
  change (the trap suite, docs/design.md §4);
- `types`: one column per common PostgreSQL type, compared with PostgreSQL's answer.
PostgreSQL also holds `trap_nonan` (NaN as NULL: MySQL and SQLite cannot store NaN) and
`trap_naive` (that, with timestamp instead of timestamptz: SQLite has no zones), the
reference answers for those sources' data.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import asyncmy
import asyncpg
import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from tests.sources.proxy import TcpProxy
from tests.support.gateway_proc import GatewayProcess, start_gateway
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

# One row of every common type, a row of edge values, a row of NULLs. Column order and
# names are PostgreSQL's `types` table; each source holds the columns it can.
TYPE_COLUMNS = ("id", "num", "f8", "i8", "i4", "i2", "b", "ts", "tstz", "d", "iv", "u", "j",
                "bin", "t")
TYPE_ROWS = [
    (1, Decimal("1234567.125"), 0.1, 9007199254740993, 2147483647, -32768, True,
     dt.datetime(2024, 3, 10, 2, 30, 0, 500000), dt.datetime(2024, 3, 10, 7, 0, tzinfo=UTC),
     dt.date(2024, 2, 29), dt.timedelta(hours=26, minutes=3, seconds=4, microseconds=500000),
     uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), '{"a": [1, 2]}', b"\x00\xff",
     "h\u00e9llo \u2603"),
    (2, Decimal("-0.001"), -1.5, -1, 0, 0, False, dt.datetime(1999, 12, 31, 23, 59, 59),
     dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), dt.date(1970, 1, 1),
     dt.timedelta(seconds=-1), uuid.UUID(int=0), "[]", b"", ""),
    (3, *([None] * 14)),
]
PG_TYPES_DDL = ("CREATE TABLE types (id int PRIMARY KEY, num numeric(10,3), f8 float8, "
                "i8 bigint, i4 int, i2 smallint, b boolean, ts timestamp, tstz timestamptz, "
                "d date, iv interval, u uuid, j json, bin bytea, t text)")


def trap_table() -> pa.Table:
    return pa.Table.from_pylist([dict(zip(TRAP_SCHEMA.names, r)) for r in TRAP_ROWS],
                                schema=TRAP_SCHEMA)


def types_table(columns: tuple[str, ...] = TYPE_COLUMNS) -> pa.Table:
    arrow = {"id": pa.int32(), "num": pa.decimal128(10, 3), "f8": pa.float64(),
             "i8": pa.int64(), "i4": pa.int32(), "i2": pa.int16(), "b": pa.bool_(),
             "ts": pa.timestamp("us"), "tstz": pa.timestamp("us", tz="UTC"),
             "d": pa.date32(), "iv": pa.duration("us"), "u": pa.uuid(), "j": pa.json_(),
             "bin": pa.binary(), "t": pa.string()}
    arrays = {}
    for i, name in enumerate(TYPE_COLUMNS):
        if name not in columns:
            continue
        values = [row[i] for row in TYPE_ROWS]
        if name == "u":
            values = [v.bytes if v is not None else None for v in values]
        arrays[name] = pa.array(values, arrow[name])
    return pa.table(arrays)


def _no_nan(rows: list[tuple]) -> list[tuple]:
    return [(i, s, None if f is not None and math.isnan(f) else f, n, ts)
            for i, s, f, n, ts in rows]


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
        for name, rows, ts in (("trap", TRAP_ROWS, "timestamptz"),
                               ("trap_nonan", _no_nan(TRAP_ROWS), "timestamptz"),
                               ("trap_naive", _no_nan(TRAP_ROWS), "timestamp")):
            await conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, s text, f float8, "
                               f"n int, ts {ts})")
            await conn.executemany(
                f"INSERT INTO {name} VALUES ($1, $2, $3, $4, $5)",
                [r if ts == "timestamptz" else (*r[:4], r[4] and r[4].replace(tzinfo=None))
                 for r in rows])
            await conn.execute(f"ANALYZE {name}")
        await conn.execute(PG_TYPES_DDL)
        await conn.executemany(
            f"INSERT INTO types VALUES ({', '.join(f'${i + 1}' for i in range(15))})",
            TYPE_ROWS)
        await conn.execute("ANALYZE types")
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
                rows = [(i, s, f, n, ts.replace(tzinfo=None) if ts else None)
                        for i, s, f, n, ts in _no_nan(TRAP_ROWS)]
                await cur.executemany("INSERT INTO shop.trap VALUES (%s, %s, %s, %s, %s)", rows)
                await cur.execute(
                    "CREATE TABLE shop.types (id int PRIMARY KEY, num decimal(10,3), f8 double, "
                    "i8 bigint, i4 int, i2 smallint, b boolean, ts datetime(6) NULL, "
                    "tstz timestamp(6) NULL, d date, iv time(6), u uuid, j json, bin longblob, "
                    "t text)")
                await cur.executemany(
                    f"INSERT INTO shop.types VALUES ({', '.join(['%s'] * 15)})",
                    [tuple(str(v) if isinstance(v, uuid.UUID) else
                           v.replace(tzinfo=None) if isinstance(v, dt.datetime) else v
                           for v in row) for row in TYPE_ROWS])
                # MySQL computes with an unsigned column in unsigned 64 bits
                # (tests/sources/test_unsigned.py)
                await cur.execute("CREATE TABLE shop.unsigned (id int PRIMARY KEY, "
                                  "ti tinyint unsigned, bu bigint unsigned, wide decimal(65,30))")
                await cur.execute("INSERT INTO shop.unsigned VALUES (1, 255, 18446744073709551615, "
                                  "12345678901234567890123456789012345.123456789012345678901234567890), "
                                  "(2, 0, 0, -1.5), (3, NULL, NULL, NULL)")
                await cur.execute("ANALYZE TABLE shop.trap, shop.types")
            conn.close()

        asyncio.run(setup())
        yield server
    finally:
        server.stop()


SQLITE_TYPES = ("CREATE TABLE types (id INTEGER PRIMARY KEY, num NUMERIC, f8 REAL, i8 INTEGER, "
                "b BOOLEAN, ts TIMESTAMP, d DATE, bin BLOB, t TEXT)")


def _sqlite_value(value: object) -> object:
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


@pytest.fixture(scope="session")
def file_sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("file_sources")
    lite = root / "app.db"
    con = sqlite3.connect(lite)
    con.execute("CREATE TABLE trap (id INTEGER PRIMARY KEY, s TEXT, f REAL, n INTEGER, ts TIMESTAMP)")
    con.executemany("INSERT INTO trap VALUES (?, ?, ?, ?, ?)",
                    [(i, s, f, n, ts.strftime("%Y-%m-%d %H:%M:%S.%f") if ts else None)
                     for i, s, f, n, ts in TRAP_ROWS])
    con.execute(SQLITE_TYPES)
    columns = ("id", "num", "f8", "i8", "b", "ts", "d", "bin", "t")
    con.executemany("INSERT INTO types VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [tuple(_sqlite_value(row[TYPE_COLUMNS.index(c)]) for c in columns)
                     for row in TYPE_ROWS])
    con.commit()
    con.close()
    duck = root / "wh.duckdb"
    dcon = duckdb.connect(str(duck))
    trap_arrow = trap_table()
    dcon.execute("CREATE TABLE trap AS SELECT * FROM trap_arrow")
    dcon.execute("CREATE TABLE types (id INTEGER PRIMARY KEY, num DECIMAL(10,3), f8 DOUBLE, "
                 "i8 BIGINT, i4 INTEGER, i2 SMALLINT, b BOOLEAN, ts TIMESTAMP, tstz TIMESTAMPTZ, "
                 "d DATE, iv INTERVAL, u UUID, j JSON, bin BLOB, t VARCHAR)")
    dcon.executemany("INSERT INTO types VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [list(row) for row in TYPE_ROWS])
    dcon.close()
    files = root / "files"
    files.mkdir()
    pq.write_table(trap_arrow, files / "trap.parquet", row_group_size=2)
    no_interval = tuple(c for c in TYPE_COLUMNS if c != "iv")  # Parquet has no interval type
    pq.write_table(types_table(no_interval), files / "types.parquet")
    csv = root / "csv"
    csv.mkdir()
    pacsv.write_csv(trap_arrow, csv / "trap.csv")
    pacsv.write_csv(types_table(("id", "f8", "i8", "b", "ts", "tstz", "d", "t")),
                    csv / "types.csv")
    return {"sqlite": lite, "duckdb": duck, "parquet": files, "csv": csv}


KINDS = ("postgres", "mysql", "sqlite", "duckdb", "parquet", "csv")
# The source name each kind is mounted under in the federation gateway.
SOURCE_OF = {"postgres": "pg", "mysql": "my", "sqlite": "lite", "duckdb": "duck",
             "parquet": "pq", "csv": "csv"}


@dataclass
class Federation:
    """The gateway serving every source kind, and where each source logs what it ran."""

    gateway: GatewayProcess
    pg: PgSource
    logs: dict[str, Path]  # kind -> the statement log that source writes or its server keeps
    root: Path
    proxies: dict[str, TcpProxy]  # the "gone_*" sources reach their server through these
    gone_files: dict[str, Path]  # files the "gone_*" file sources read
    config: str  # the gateway's configuration: another gateway over the same sources


@pytest.fixture(scope="session")
def federation(tmp_path_factory: pytest.TempPathFactory, pg_source: PgSource,
               mariadb_server: MariaDBServer,
               file_sources: dict[str, Path]) -> Iterator[Federation]:
    root = tmp_path_factory.mktemp("federation")
    logs = {"postgres": pg_source.server.logfile, "mysql": mariadb_server.general_log,
            **{kind: root / f"{kind}.log" for kind in ("sqlite", "duckdb", "parquet", "csv")}}
    # Sources that can be made unreachable later: their own proxy or their own files.
    pg_url = pg_source.dsn.split("@", 1)[1]
    pg_host, pg_port = pg_url.split("/", 1)[0].split(":")
    proxies = {"postgres": TcpProxy(pg_host, int(pg_port)),
               "mysql": TcpProxy(mariadb_server.host, mariadb_server.port)}
    gone_lite = root / "gone.db"
    con = sqlite3.connect(gone_lite)
    con.execute("CREATE TABLE t (id INTEGER)")
    con.execute("INSERT INTO t VALUES (1)")
    con.commit()
    con.close()
    gone_files = root / "gone_files"
    gone_files.mkdir()
    pq.write_table(pa.table({"id": [1]}), gone_files / "t.parquet")
    config = f"""
[catalog]
search_path = ["pg"]
[sources.pg]
kind = "postgres"
dsn = "{pg_source.dsn}"
[sources.my]
kind = "mysql"
dsn = "{mariadb_server.dsn('shop')}"
[sources.lite]
kind = "sqlite"
path = "{file_sources['sqlite']}"
statement_log = "{logs['sqlite']}"
[sources.duck]
kind = "duckdb"
path = "{file_sources['duckdb']}"
statement_log = "{logs['duckdb']}"
[sources.pq]
kind = "parquet"
path = "{file_sources['parquet']}"
statement_log = "{logs['parquet']}"
[sources.csv]
kind = "csv"
path = "{file_sources['csv']}"
statement_log = "{logs['csv']}"
[sources.gone_pg]
kind = "postgres"
dsn = "postgresql://postgres@127.0.0.1:{proxies['postgres'].port}/fedgate_src"
pool_size = 2
[sources.gone_my]
kind = "mysql"
dsn = "mysql://root@127.0.0.1:{proxies['mysql'].port}/shop"
pool_size = 2
[sources.gone_lite]
kind = "sqlite"
path = "{gone_lite}"
[sources.gone_pq]
kind = "parquet"
path = "{gone_files}"
"""
    gateway = start_gateway(config, root / "gateway")
    try:
        yield Federation(gateway, pg_source, logs, root, proxies,
                         {"sqlite": gone_lite, "parquet": gone_files / "t.parquet"}, config)
    finally:
        gateway.stop()
        for proxy in proxies.values():
            proxy.close()


@pytest.fixture(scope="session")
async def gw(federation: Federation) -> AsyncIterator[asyncpg.Connection]:
    """One client session on the federation gateway, shared by the tests that only read.
    They test the planner's road to each source, so the relay is off: a statement of one
    PostgreSQL source, qualified or not, would otherwise go to it whole."""
    conn = await asyncpg.connect(federation.gateway.dsn)
    await conn.execute("SET fedgate.relay = off")
    yield conn
    await conn.close()


@pytest.fixture(scope="session")
async def pgref(pg_source: PgSource) -> AsyncIterator[asyncpg.Connection]:
    """A session on PostgreSQL itself, in UTC: the reference answers."""
    conn = await asyncpg.connect(pg_source.dsn, server_settings={"TimeZone": "UTC"})
    yield conn
    await conn.close()


@pytest.fixture
async def gwc(federation: Federation) -> AsyncIterator[asyncpg.Connection]:
    """A session of its own on the federation gateway, for one test."""
    conn = await asyncpg.connect(federation.gateway.dsn)
    yield conn
    await conn.close()


@pytest.fixture
async def pgc(federation: Federation) -> AsyncIterator[asyncpg.Connection]:
    """PostgreSQL itself, behind the `pg` source: the ground truth of PostgreSQL targets."""
    conn = await asyncpg.connect(federation.pg.dsn, server_settings={"TimeZone": "UTC"})
    yield conn
    await conn.close()
