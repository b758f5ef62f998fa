"""Zone-dependent values through a real gateway agree with PostgreSQL's in the client's zone.

The same rows (instants either side of both 2024 New York DST changes, a new-year instant
whose New York date is the day before, naive timestamps in the spring-forward gap and the
fall-back overlap) are held by a DuckDB file, a Parquet folder, and a temporary table on
the suite's PostgreSQL server. With `SET TimeZone = 'America/New_York'`, every expression
whose value depends on the session zone (casts of timestamptz to text/date/time/timestamp,
extract/date_part/date_trunc, timestamptz +- interval across a DST change, to_char,
timestamp -> timestamptz, a comparison with zone-less text) must give PostgreSQL's answer,
whether it runs in the engine (shipped statements keep it off the sources) or in filters.
In UTC the same statements still ship whole to the source.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Iterator

import asyncpg
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer

UTC = dt.UTC
ZONE = "America/New_York"
ROWS = [
    (1, dt.datetime(2024, 3, 10, 6, 59, 59, tzinfo=UTC), dt.datetime(2024, 3, 10, 2, 30)),
    (2, dt.datetime(2024, 3, 10, 7, 0, 0, tzinfo=UTC), dt.datetime(2024, 3, 10, 1, 59, 59)),
    (3, dt.datetime(2024, 11, 3, 5, 30, tzinfo=UTC), dt.datetime(2024, 11, 3, 0, 30)),
    (4, dt.datetime(2024, 11, 3, 6, 30, tzinfo=UTC), dt.datetime(2024, 11, 3, 3, 0)),
    (5, dt.datetime(2024, 1, 1, 0, 0, tzinfo=UTC), dt.datetime(2024, 1, 1, 0, 0)),
    (6, dt.datetime(2024, 3, 9, 12, 0, 0, 123456, tzinfo=UTC), dt.datetime(2024, 6, 1, 12, 0)),
    (7, None, None),
]
SCHEMA = pa.schema([("id", pa.int32()), ("ts", pa.timestamp("us", tz="UTC")),
                    ("t", pa.timestamp("us"))])

EXPRESSIONS = [
    "ts::text",
    "extract(hour from ts)",
    "date_part('day', ts)",
    "date_trunc('day', ts)",
    "ts::date",
    "ts::timestamp",
    "ts + interval '1 day'",
    "ts - interval '1 day'",
    "to_char(ts, 'YYYY-MM-DD HH24:MI:SS')",
    "t::timestamptz",
]
FILTERS = [
    "ts::date = date '2024-03-10'",
    "extract(hour from ts) between 1 and 3",
    "ts >= '2024-03-10' and ts < '2024-03-11'",
    "date_trunc('day', ts) = timestamptz '2024-03-10 05:00:00+00'",
]


def _table() -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, row)) for row in ROWS], schema=SCHEMA)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("timezone")
    con = duckdb.connect(str(root / "duck.duckdb"))
    con.execute("SET TimeZone = 'UTC'")
    con.register("rows", _table())
    con.execute("CREATE TABLE trap AS SELECT id, ts::timestamptz AS ts, t FROM rows")
    con.close()
    files = root / "files"
    files.mkdir()
    pq.write_table(_table(), files / "trap.parquet")
    process = start_gateway(
        '[catalog]\nsearch_path = ["duck"]\n'
        f'[sources.duck]\nkind = "duckdb"\npath = "{root / "duck.duckdb"}"\n'
        f'[sources.pq]\nkind = "parquet"\npath = "{files}"\n', root / "gw")
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
async def reference(postgres_server: PostgresServer) -> AsyncIterator[asyncpg.Connection]:
    """A session on the suite's PostgreSQL holding the rows in a temporary table."""
    conn = await asyncpg.connect(postgres_server.dsn)
    try:
        await conn.execute("CREATE TEMPORARY TABLE trap (id int, ts timestamptz, t timestamp)")
        await conn.executemany("INSERT INTO trap VALUES ($1, $2, $3)", ROWS)
        await conn.execute(f"SET TimeZone = '{ZONE}'")
        yield conn
    finally:
        await conn.close()


async def _both(gateway: GatewayProcess, reference: asyncpg.Connection, sql: str,
                zone: str = ZONE) -> tuple[list[tuple], list[tuple]]:
    conn = await asyncpg.connect(gateway.dsn)
    try:
        await conn.execute(f"SET TimeZone = '{zone}'")
        got = [tuple(r.values()) for r in await conn.fetch(sql)]
    finally:
        await conn.close()
    await reference.execute(f"SET TimeZone = '{zone}'")
    want = [tuple(r.values()) for r in await reference.fetch(sql.replace("duck.", "").replace("pq.", ""))]
    return got, want


@pytest.mark.parametrize("source", ["duck", "pq"])
@pytest.mark.parametrize("expression", EXPRESSIONS)
async def test_projection_matches_postgres(gateway, reference, source: str, expression: str) -> None:
    got, want = await _both(gateway, reference,
                            f"SELECT id, {expression} FROM {source}.trap ORDER BY id")
    assert got == want


@pytest.mark.parametrize("source", ["duck", "pq"])
@pytest.mark.parametrize("condition", FILTERS)
async def test_filter_matches_postgres(gateway, reference, source: str, condition: str) -> None:
    got, want = await _both(gateway, reference,
                            f"SELECT id FROM {source}.trap WHERE {condition} ORDER BY id")
    assert got == want and want  # a filter that keeps nothing would prove little


async def test_cross_source_join_matches_postgres(gateway, reference) -> None:
    # Federated: each side is a fragment, the zone-dependent parts run in the engine.
    sql = ("SELECT d.id, d.ts::text, extract(hour from p.ts), p.ts + interval '1 day' "
           "FROM duck.trap d JOIN pq.trap p ON p.id = d.id WHERE d.ts::date = date '2024-03-10' "
           "ORDER BY d.id")
    conn = await asyncpg.connect(gateway.dsn)
    try:
        await conn.execute(f"SET TimeZone = '{ZONE}'")
        got = [tuple(r.values()) for r in await conn.fetch(sql)]
    finally:
        await conn.close()
    want = [tuple(r.values()) for r in await reference.fetch(
        "SELECT d.id, d.ts::text, extract(hour from p.ts), p.ts + interval '1 day' "
        "FROM trap d JOIN trap p ON p.id = d.id WHERE d.ts::date = date '2024-03-10' ORDER BY d.id")]
    assert got == want and want


async def test_utc_session_still_ships_and_matches(gateway, reference) -> None:
    sql = "SELECT id, ts::text, extract(hour from ts), ts::date FROM duck.trap ORDER BY id"
    got, want = await _both(gateway, reference, sql, zone="UTC")
    assert got == want
    conn = await asyncpg.connect(gateway.dsn)
    try:
        utc = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN {sql}"))
        await conn.execute(f"SET TimeZone = '{ZONE}'")
        zoned = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN {sql}"))
    finally:
        await conn.close()
    assert "EXTRACT" in utc and "Residual" not in utc
    assert "Residual" in zoned or "engine" in zoned.lower()


async def test_sessions_in_different_zones_do_not_mix(gateway, reference) -> None:
    """Concurrent sessions share one engine; each query computes in its own session's zone."""
    sql = "SELECT id, ts::text, extract(hour from ts) FROM pq.trap ORDER BY id"
    zones = ["UTC", ZONE, "Asia/Kolkata", "Europe/Berlin"] * 3

    async def run(zone: str) -> list[tuple]:
        conn = await asyncpg.connect(gateway.dsn)
        try:
            await conn.execute(f"SET TimeZone = '{zone}'")
            results = []
            for _ in range(5):
                results.append([tuple(r.values()) for r in await conn.fetch(sql)])
            return results
        finally:
            await conn.close()

    answers = await asyncio.gather(*(run(zone) for zone in zones))
    for zone, results in zip(zones, answers):
        await reference.execute(f"SET TimeZone = '{zone}'")
        want = [tuple(r.values()) for r in await reference.fetch(sql.replace("pq.", ""))]
        assert all(result == want for result in results), zone
    await reference.execute(f"SET TimeZone = '{ZONE}'")
