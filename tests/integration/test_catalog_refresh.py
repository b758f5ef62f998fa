"""Tables created in a source while the gateway runs become visible without a restart."""

from __future__ import annotations

import socket
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
            # The miss reads the sources again before answering 42P01 (right after the
            # miss above: misses are not rate-limited into a wrong answer).
            rows = await conn.fetch("select b from later_t order by b")
            assert [r["b"] for r in rows] == ["x", "y"]
            names = {r["table_name"] for r in await conn.fetch(
                "select table_name from information_schema.tables where table_schema = 'lite'")}
            assert names == {"first_t", "later_t"}
        finally:
            await conn.close()
    finally:
        gateway.stop()


async def test_an_unreachable_source_does_not_stop_the_gateway(tmp_path: Path) -> None:
    """A source that is down at startup is mounted down: the others are served, and a
    statement naming its tables hears that it is unavailable (tests/integration/
    test_source_health.py has its tables appear once it answers)."""
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as con:
        con.execute("create table t (a integer)")
        con.execute("insert into t values (1)")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there
    gateway = start_gateway(f'[catalog]\nsearch_path = ["lite"]\nrefresh_seconds = 0\n'
                            f'[sources.lite]\nkind = "sqlite"\npath = "{db}"\n'
                            f'[sources.down]\nkind = "postgres"\n'
                            f'dsn = "postgresql://postgres@127.0.0.1:{port}/postgres"\n',
                            tmp_path / "gw")
    try:
        conn = await asyncpg.connect(gateway.dsn)
        try:
            assert [r["a"] for r in await conn.fetch("select a from t")] == [1]
            with pytest.raises(asyncpg.PostgresError) as caught:
                await conn.fetch("select * from down.anything")
            assert caught.value.sqlstate == "08001"
            assert caught.value.message.startswith('source "down" is unavailable: ')
        finally:
            await conn.close()
        assert 'source "down" is unavailable' in gateway.log()
    finally:
        gateway.stop()
