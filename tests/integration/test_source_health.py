"""One source down stays local, and says where (docs/design.md §7).

A real gateway process serves a real SQLite file (`lite`) and a real PostgreSQL server
(`pg`) that the tests stop and start again. What is proved:
- with PostgreSQL stopped right after DDL through the gateway, and while the catalog
  refreshes every second, SQLite-only statements keep answering;
- every statement that needs the stopped source, relayed or planned, qualified or not,
  fails with the one shape: 08001/08006 `source "pg" is unavailable: ...`, its hint naming
  `[sources.pg]`; and the source serves again once it is back;
- a source that cannot be read at start-up (stopped, or an unknown role in its dsn) is
  mounted down: the gateway starts, its tables give 08001, not 42P01, and they appear once
  it answers;
- each health transition is logged once, and no traceback is logged.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import psycopg
import pytest

from connectors.postgres.source import PostgresSource
from gateway.server.http.health import Health
from gateway.state.health import HealthBoard

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, start_postgres

ANSWER_WITHIN_S = 15.0
UNAVAILABLE = {"08001", "08006"}


@pytest.fixture(scope="module")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    server = start_postgres(tmp_path_factory.mktemp("health") / "pg")
    try:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (a int); INSERT INTO t VALUES (1), (2)")
        yield server
    finally:
        try:
            server.stop()
        except RuntimeError:
            pass  # a test left it stopped; stop() has removed its files anyway


@pytest.fixture
def lite(tmp_path: Path) -> Path:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE events (id integer, kind text)")
        con.executemany("INSERT INTO events VALUES (?, ?)", [(i, f"k{i % 3}") for i in range(500)])
    return path


def config(lite: Path, dsn: str, refresh_s: int = 0) -> str:
    return (f'[catalog]\nsearch_path = ["lite", "pg"]\nrefresh_seconds = {refresh_s}\n'
            f'[sources.lite]\nkind = "sqlite"\npath = "{lite}"\n'
            f'[sources.pg]\nkind = "postgres"\ndsn = "{dsn}"\n')



async def connect(gateway: GatewayProcess) -> psycopg.AsyncConnection:
    return await psycopg.AsyncConnection.connect(gateway.dsn, autocommit=True, connect_timeout=10)


async def run(conn: psycopg.AsyncConnection, sql: str) -> list[tuple]:
    cur = await asyncio.wait_for(conn.execute(sql), ANSWER_WITHIN_S)
    return await cur.fetchall() if cur.description else []


async def unavailable(conn: psycopg.AsyncConnection, sql: str) -> psycopg.Error:
    """The error `sql` gets: the one shape of a source that is down."""
    with pytest.raises(psycopg.Error) as caught:
        await run(conn, sql)
    diag = caught.value.diag
    assert caught.value.sqlstate in UNAVAILABLE, (sql, caught.value.sqlstate, diag.message_primary)
    assert diag.message_primary.startswith('source "pg" is unavailable: '), diag.message_primary
    assert "[sources.pg]" in (diag.message_hint or ""), diag.message_hint
    return caught.value


async def eventually(conn: psycopg.AsyncConnection, sql: str, within: float = 20.0) -> list[tuple]:
    """`sql`'s rows once it stops failing because its source is unavailable."""
    deadline = time.monotonic() + within
    while True:
        try:
            return await run(conn, sql)
        except psycopg.Error as exc:
            if exc.sqlstate not in UNAVAILABLE | {"42P01"} or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.3)


class Bystander:
    """A session on the SQLite source asking again and again while PostgreSQL fails."""

    def __init__(self, gateway: GatewayProcess) -> None:
        self.gateway = gateway
        self.answers = 0
        self.failures: list[BaseException] = []
        self.task: asyncio.Task | None = None

    async def _run(self) -> None:
        conn = await connect(self.gateway)
        try:
            while True:
                try:
                    assert await run(conn, "SELECT count(*) FROM events WHERE kind = 'k1'") == [(167,)]
                except (AssertionError, psycopg.Error, TimeoutError) as exc:
                    self.failures.append(exc)
                    return
                self.answers += 1
                await asyncio.sleep(0.05)
        finally:
            await conn.close()

    def __enter__(self) -> Bystander:
        self.task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()


def assert_transitions_logged_once(log: str) -> None:
    assert "Traceback" not in log, log
    assert log.count('source "pg" is unavailable') == 1, log
    assert log.count('source "pg" is up again') == 1, log


async def test_the_probe_of_a_postgres_source_is_one_round_trip_not_a_catalog_read(
        pg: PostgresServer) -> None:
    # The probe runs every PROBE_EVERY_S and for /readyz: a catalog read (every table's
    # columns, keys and pg_stats) would be thrown away each time.
    source = PostgresSource("pg", pg.dsn)
    catalog_reads = []
    real_tables = source.tables

    async def counted_tables():
        catalog_reads.append(1)
        return await real_tables()

    source.tables = counted_tables  # type: ignore[method-assign]
    ctx = SimpleNamespace(sources={"pg": source}, health=HealthBoard())
    try:
        health = Health(ctx)  # type: ignore[arg-type]
        await health.check(["pg"])
        assert health.sources["pg"].up and catalog_reads == []
        assert not ctx.health["pg"].down
    finally:
        await source.close()


async def test_a_stopped_source_fails_only_the_statements_that_need_it(
        pg: PostgresServer, lite: Path, tmp_path: Path) -> None:
    gateway = start_gateway(config(lite, pg.dsn, refresh_s=1), tmp_path / "gw")
    down = False
    try:
        conn = await connect(gateway)
        with Bystander(gateway) as bystander:
            # DDL through the gateway marks the catalog stale; the source then goes away.
            await run(conn, "CREATE TABLE pg.made_here (b text)")
            await asyncio.to_thread(pg.crash)
            down = True
            # The next statement reads the catalog again first: only the SQLite source
            # answers, and a SQLite-only statement does not care.
            assert await run(conn, "SELECT count(*) FROM lite.events") == [(500,)]
            relayed = await unavailable(conn, "SELECT a FROM pg.t")
            await unavailable(conn, "SELECT count(*) FROM t")  # unqualified, relayed too
            await unavailable(conn, "SELECT e.kind, t.a FROM lite.events e JOIN pg.t ON t.a = e.id")
            await unavailable(conn, "INSERT INTO pg.t VALUES (3)")
            print("relayed:", relayed.sqlstate, relayed.diag.message_primary)
            await asyncio.sleep(2.5)  # a few refresh rounds with the source down
            assert await run(conn, "SELECT count(*) FROM events") == [(500,)]
            await asyncio.to_thread(pg.start_again)
            down = False
            assert await eventually(conn, "SELECT a FROM pg.t ORDER BY a") == [(1,), (2,)]
            assert await eventually(conn, "SELECT count(*) FROM pg.made_here") == [(0,)]
            assert await run(conn, "SELECT e.kind, t.a FROM lite.events e JOIN pg.t "
                                   "ON t.a = e.id ORDER BY t.a") == [("k1", 1), ("k2", 2)]
            await asyncio.sleep(1.5)  # the refresh that sees it up again
            assert not bystander.failures, bystander.failures
            assert bystander.answers >= 20, bystander.answers
        await conn.close()
        assert_transitions_logged_once(gateway.log())
    finally:
        gateway.stop()
        if down:
            pg.start_again()


async def test_a_source_down_at_start_is_mounted_down(pg: PostgresServer, lite: Path,
                                                     tmp_path: Path) -> None:
    await asyncio.to_thread(pg.crash)
    down = True
    try:
        gateway = start_gateway(config(lite, pg.dsn), tmp_path / "gw")
        try:
            conn = await connect(gateway)
            assert await run(conn, "SELECT count(*) FROM events") == [(500,)]
            err = await unavailable(conn, "SELECT a FROM pg.t")
            assert err.sqlstate == "08001"
            # Not in any source that answered, and a source on search_path is down.
            await unavailable(conn, "SELECT a FROM t")
            with pytest.raises(psycopg.errors.UndefinedTable):  # lite answered: it is not there
                await run(conn, "SELECT 1 FROM lite.nowhere")
            await asyncio.to_thread(pg.start_again)
            down = False
            # The miss reads the catalog again (once a second at most): the tables appear.
            assert await eventually(conn, "SELECT a FROM pg.t ORDER BY a") == [(1,), (2,)]
            assert await run(conn, "SELECT a FROM t ORDER BY a") == [(1,), (2,)]
            await conn.close()
            assert_transitions_logged_once(gateway.log())
        finally:
            gateway.stop()
    finally:
        if down:
            pg.start_again()


async def test_an_unknown_role_in_the_dsn_mounts_the_source_down(pg: PostgresServer, lite: Path,
                                                                 tmp_path: Path) -> None:
    dsn = f"postgresql://nobody@{pg.host}:{pg.port}/postgres"
    gateway = start_gateway(config(lite, dsn), tmp_path / "gw")
    try:
        conn = await connect(gateway)
        assert await run(conn, "SELECT count(*) FROM events") == [(500,)]
        err = await unavailable(conn, "SELECT a FROM pg.t")
        assert err.sqlstate == "08001"
        assert 'role "nobody" does not exist' in err.diag.message_primary
        await conn.close()
        log = gateway.log()
        assert "Traceback" not in log, log
        warnings = [line for line in log.splitlines() if 'source "pg" is unavailable' in line]
        assert len(warnings) == 1 and 'role "nobody" does not exist' in warnings[0], log
    finally:
        gateway.stop()


async def test_a_wrong_password_in_the_dsn_mounts_the_source_down(pg: PostgresServer, lite: Path,
                                                                 tmp_path: Path) -> None:
    """The test server trusts everyone; one role is made to need its password (SCRAM)."""
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute("CREATE ROLE guarded LOGIN PASSWORD 'right'")
    hba = pg.datadir / "pg_hba.conf"
    hba.write_text("host all guarded 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
    pg.reload()
    await asyncio.sleep(0.5)  # the postmaster reads pg_hba.conf on SIGHUP
    with pytest.raises(psycopg.OperationalError):  # the server refuses it now
        psycopg.connect(f"postgresql://guarded:wrong@{pg.host}:{pg.port}/postgres").close()
    dsn = f"postgresql://guarded:wrong@{pg.host}:{pg.port}/postgres"
    gateway = start_gateway(config(lite, dsn), tmp_path / "gw")
    try:
        conn = await connect(gateway)
        assert await run(conn, "SELECT count(*) FROM events") == [(500,)]
        err = await unavailable(conn, "SELECT a FROM pg.t")
        assert err.sqlstate == "08001"  # not 28P01: the client's own password was right
        assert "password authentication failed" in err.diag.message_primary
        await conn.close()
        log = gateway.log()
        assert "Traceback" not in log, log
        assert log.count('source "pg" is unavailable: password authentication failed') == 1, log
    finally:
        gateway.stop()
