"""Tables created in a source while the gateway runs become visible without a restart."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import asyncpg
import pytest

from tests.support.gateway_proc import start_gateway


async def test_a_new_table_is_found_by_the_query_that_names_it(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as con:
        con.execute("create table first_t (a integer)")
    gateway = start_gateway(f'[catalog]\nsearch_path = ["lite"]\nrefresh_seconds = 0\n'
                            f'[sources.lite]\nkind = "sqlite"\npath = "{db}"\n', tmp_path / "gw")
    try:
        conn = await asyncpg.connect(gateway.dsn)
        try:
            with pytest.raises(asyncpg.UndefinedTableError):
                await conn.fetch("select * from later_t")
            with sqlite3.connect(db) as con:
                con.execute("create table later_t (b text)")
                con.execute("insert into later_t values ('x'), ('y')")
            # The miss triggers one refresh (at most one a second), then planning retries.
            for _ in range(30):
                try:
                    rows = await conn.fetch("select b from later_t order by b")
                    break
                except asyncpg.UndefinedTableError:
                    await asyncio.sleep(0.1)  # within the one-refresh-a-second limit
            assert [r["b"] for r in rows] == ["x", "y"]
            names = {r["table_name"] for r in await conn.fetch(
                "select table_name from information_schema.tables where table_schema = 'lite'")}
            assert names == {"first_t", "later_t"}
        finally:
            await conn.close()
    finally:
        gateway.stop()
