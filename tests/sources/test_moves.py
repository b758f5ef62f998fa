"""Moves between sources through the gateway (docs/design.md §5, "Moves"): INSERT ...
SELECT and CREATE TABLE AS whose query reads other sources than the target, against the
federation's real PostgreSQL, MariaDB and SQLite, with Parquet and DuckDB files as
readers. Every outcome is checked on the target itself, not only through the gateway.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from collections.abc import AsyncIterator
from decimal import Decimal

import asyncmy
import asyncpg
import pytest

from tests.sources.conftest import TRAP_ROWS, Federation

TIMEOUT = 120


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
