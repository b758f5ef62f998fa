"""Drivers that repeat statements get PostgreSQL's answers from the express lane's memory.

The lane remembers a relayed statement's shape or extended-protocol run the second time
it sees it (gateway/relay/express/memory.py) and answers later repeats from that memory. Drivers
repeat statements in every way the memory keys on: asyncpg prepares named statements and
binds binary parameters (fetch, fetchrow with its row limit, executemany); psycopg sends
unnamed Parse/Bind runs with text or binary parameters, prepares after a threshold, and
sends simple Queries; each way with values that change type (int4, int8, numeric, NULL)
between repeats. Every answer must equal what the same calls return directly from
PostgreSQL, and the statements must have been run by the lane.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from decimal import Decimal

import asyncpg
import psycopg
import pytest

from tests.support.gateway_proc import PgSourceGateway, gateway_on_new_database
from tests.support.postgres import PostgresServer

DDL = ("CREATE TABLE acct (id bigint PRIMARY KEY, bal numeric NOT NULL, note text);"
       "INSERT INTO acct SELECT g, g * 10, CASE WHEN g % 3 = 0 THEN NULL ELSE 'n' || g END "
       "FROM generate_series(1, 50) AS g")
IDS = [1, 2, 3, 49, 50, 51, 3_000_000_000, 7, 7, 7]


@pytest.fixture(scope="module")
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgSourceGateway]:
    with gateway_on_new_database(postgres_server.dsn, tmp_path_factory.mktemp("express-drivers"),
                                 DDL) as found:
        yield found


def dsns(setup: PgSourceGateway) -> dict[str, str]:
    return {"direct": setup.truth, "gateway": setup.gateway.dsn}


async def asyncpg_calls(dsn: str) -> list:
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        out: list = []
        point = await conn.prepare("SELECT id, bal, note FROM acct WHERE id = $1")
        for i in IDS:
            out.append([tuple(r) for r in await point.fetch(i)])
            out.append(await conn.fetchval("SELECT bal FROM acct WHERE id = $1", i))
            row = await conn.fetchrow("SELECT id, note FROM acct WHERE id >= $1 ORDER BY id", i)
            out.append(tuple(row) if row is not None else None)
        await conn.executemany("UPDATE acct SET bal = bal + $1 WHERE id = $2",
                               [(Decimal("0.5"), i) for i in range(1, 21)])
        async with conn.transaction():
            for i in range(1, 6):
                await conn.execute("UPDATE acct SET note = $1 WHERE id = $2", f"t{i}", i)
                out.append(await conn.fetchval("SELECT note FROM acct WHERE id = $1", i))
        out.append([tuple(r) for r in await conn.fetch("SELECT id, bal, note FROM acct ORDER BY id")])
        return out
    finally:
        await conn.close()


def psycopg_calls(dsn: str) -> list:
    out: list = []
    with psycopg.connect(dsn, autocommit=True, connect_timeout=10, prepare_threshold=3) as conn:
        for i in IDS:
            out.append(conn.execute("SELECT id, bal, note FROM acct WHERE id = %s", (i,)).fetchall())
            out.append(conn.execute("SELECT bal FROM acct WHERE id = %b", (i,)).fetchall())
            out.append(conn.execute(f"SELECT id, note FROM acct WHERE id = {i}",
                                    prepare=False).fetchall())
        for value in (1, 2**40, Decimal("2.5"), None, 3):
            out.append(conn.execute("SELECT count(*) FROM acct WHERE bal > %s", (value,)).fetchall())
        with conn.transaction():
            for i in range(21, 26):
                conn.execute("UPDATE acct SET bal = bal * 2 WHERE id = %s", (i,))
                out.append(conn.execute("SELECT bal FROM acct WHERE id = %s", (i,)).fetchall())
        with conn.cursor() as cur:
            cur.executemany("UPDATE acct SET note = %s WHERE id = %s", [(f"m{i}", i) for i in range(26, 36)])
        out.append(conn.execute("SELECT id, bal, note FROM acct ORDER BY id").fetchall())
    return out


def reset(setup: PgSourceGateway) -> None:
    with psycopg.connect(setup.truth, autocommit=True) as conn:
        conn.execute("TRUNCATE acct")
        conn.execute(DDL.split(";", 1)[1])


def test_asyncpg_repeats_answer_as_postgresql(setup: PgSourceGateway) -> None:
    answers = {}
    for target, dsn in dsns(setup).items():
        reset(setup)
        answers[target] = asyncio.run(asyncio.wait_for(asyncpg_calls(dsn), 60))
    assert answers["gateway"] == answers["direct"]


def test_psycopg_repeats_answer_as_postgresql(setup: PgSourceGateway) -> None:
    answers = {}
    for target, dsn in dsns(setup).items():
        reset(setup)
        answers[target] = psycopg_calls(dsn)
    assert answers["gateway"] == answers["direct"]


def test_the_lane_ran_the_repeats(setup: PgSourceGateway) -> None:
    """On one connection: prepared, unnamed and simple repeats are counted by the lane."""
    reset(setup)
    with psycopg.connect(setup.gateway.dsn, autocommit=True, prepare_threshold=None) as conn:
        before = int(conn.execute("SHOW fedgate.express_statements").fetchone()[0])
        for i in range(1, 31):
            assert conn.execute("SELECT bal FROM acct WHERE id = %s", (i,)).fetchone() == (Decimal(i * 10),)
            assert conn.execute(f"SELECT bal FROM acct WHERE id = {i}", prepare=False).fetchone() \
                == (Decimal(i * 10),)
        after = int(conn.execute("SHOW fedgate.express_statements").fetchone()[0])
    assert after - before >= 55, after - before
