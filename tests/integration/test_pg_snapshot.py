"""The PostgreSQL fragments of one federated query read one snapshot.

A database of our own on the session PostgreSQL (log_statement = all) holds tables `a`
and `b`; a DuckDB file holds `c`; the gateway (a real subprocess) mounts them as sources
`pg` and `d`. A join of a, c and b makes two PostgreSQL fragments and one DuckDB fragment.

- The statement log shows it: one fragment's backend exports its snapshot, the other's
  imports it with SET TRANSACTION SNAPSHOT before its COPY; a query with a single
  PostgreSQL fragment exports nothing.
- A concurrent writer cannot split them, deterministically: the writer holds an ACCESS
  EXCLUSIVE lock on `b` with a new row of `b` uncommitted, so the fragment on `b` blocks
  (describing its query) while the fragment on `a` has already exported its snapshot.
  The writer commits only once PostgreSQL shows exactly that state; the fragment on `b`
  then still must not see the new row.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Iterator

import asyncpg
import duckdb
import psycopg
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer

DATABASE = "fedgate_snapshot"


@pytest.fixture(scope="module")
def snapshot_gateway(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
                     ) -> Iterator[tuple[GatewayProcess, str]]:
    root = tmp_path_factory.mktemp("snapshot")
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        admin.execute(f"CREATE DATABASE {DATABASE}")
        admin.execute(f"ALTER DATABASE {DATABASE} SET log_statement = 'all'")
    direct = postgres_server.dsn.rsplit("/", 1)[0] + f"/{DATABASE}"
    with psycopg.connect(direct, autocommit=True) as conn:
        conn.execute("CREATE TABLE a (k int PRIMARY KEY, v int)")
        conn.execute("CREATE TABLE b (j int PRIMARY KEY, w int)")
        conn.execute("INSERT INTO a SELECT g, g FROM generate_series(1, 200) g")
        conn.execute("INSERT INTO b SELECT g, g FROM generate_series(1, 100) g")
        conn.execute("ANALYZE a")
        conn.execute("ANALYZE b")
    con = duckdb.connect(str(root / "c.duckdb"))
    con.execute("CREATE TABLE c AS SELECT range::int AS k, range::int AS j FROM range(1, 201)")
    con.close()
    gateway = start_gateway(
        '[catalog]\nsearch_path = ["pg", "d"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{direct}"\n'
        f'[sources.d]\nkind = "duckdb"\npath = "{root / "c.duckdb"}"\n', root / "gw")
    try:
        yield gateway, direct
    finally:
        gateway.stop()


def _marker() -> int:
    # A fresh constant per query makes fresh fragment SQL, so log lines are ours and the
    # gateway's describe cache cannot skip the remote describe.
    return random.randrange(10**6, 10**9)


def _log_by_backend(server: PostgresServer) -> dict[str, list[str]]:
    """Each backend's logged statements in order (log_line_prefix '%m [%p] ')."""
    statements: dict[str, list[str]] = {}
    for line in server.log().splitlines():
        m = re.search(r"\[(\d+)\] LOG:  (?:statement|execute [^:]*): (.*)$", line)
        if m:
            statements.setdefault(m.group(1), []).append(m.group(2))
    return statements


def _before(log: dict[str, list[str]], needle: str) -> list[str]:
    """The statements each backend ran in the transaction of its COPY naming `needle`."""
    found = []
    for statements in log.values():
        for i, text in enumerate(statements):
            if text.startswith("COPY") and needle in text:
                begin = max(j for j in range(i + 1) if statements[j].startswith("BEGIN"))
                found.append(statements[begin:i + 1])
    return found


async def _fetch(dsn: str, sql: str) -> list[tuple]:
    conn = await asyncpg.connect(dsn)
    try:
        return [tuple(r.values()) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


async def test_two_fragments_share_one_snapshot(snapshot_gateway, postgres_server) -> None:
    gateway, _ = snapshot_gateway
    ma, mb = _marker(), _marker()
    sql = (f"SELECT count(*) FROM a JOIN c ON a.k = c.k JOIN b ON b.j = c.j "
           f"WHERE a.v > -{ma} AND b.w > -{mb}")
    assert await _fetch(gateway.dsn, sql) == [(100,)]
    log = _log_by_backend(postgres_server)
    (on_a,), (on_b,) = _before(log, str(ma)), _before(log, str(mb))
    assert on_a[0] == on_b[0] == "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;"
    roles = sorted([on_a[1:-1], on_b[1:-1]])
    assert roles[0] == ["SELECT pg_export_snapshot()"], roles
    assert len(roles[1]) == 1 and re.fullmatch(r"SET TRANSACTION SNAPSHOT '[0-9A-F-]+'",
                                               roles[1][0]), roles


async def test_one_fragment_exports_nothing(snapshot_gateway, postgres_server) -> None:
    gateway, _ = snapshot_gateway
    ma = _marker()
    sql = f"SELECT count(*) FROM a JOIN c ON a.k = c.k WHERE a.v > -{ma}"
    assert await _fetch(gateway.dsn, sql) == [(200,)]
    (on_a,) = _before(_log_by_backend(postgres_server), str(ma))
    assert on_a == ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;", on_a[-1]]


def _simple_query(dsn: str, statements: list[str]) -> list[tuple]:
    """Run statements with the simple query protocol (no Describe step: the gateway
    starts the fragments at once) and return the last one's rows."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for sql in statements:
            res = conn.pgconn.exec_(sql.encode())
            assert res.error_message == b"", res.error_message.decode()
        return [tuple(res.get_value(r, c).decode() for c in range(res.nfields))
                for r in range(res.ntuples)]


async def test_concurrent_writer_is_invisible_to_every_fragment(snapshot_gateway) -> None:
    gateway, direct = snapshot_gateway
    ma, mb = _marker(), _marker()
    sql = (f"SELECT count(*) FROM a JOIN c ON a.k = c.k JOIN b ON b.j = c.j "
           f"WHERE a.v > -{ma} AND b.w > -{mb}")
    writer = await asyncpg.connect(direct)
    watcher = await asyncpg.connect(direct)
    try:
        tx = writer.transaction()
        await tx.start()
        await writer.execute("LOCK TABLE b IN ACCESS EXCLUSIVE MODE")
        await writer.execute("INSERT INTO b VALUES (101, 101)")
        # Dynamic filtering off: it would start the fragments one after the other.
        query = asyncio.create_task(asyncio.to_thread(
            _simple_query, gateway.dsn, ["SET fedgate.dynamic_filtering = off", sql]))
        deadline = time.monotonic() + 30
        while True:
            rows = await watcher.fetch(
                "SELECT wait_event_type, query FROM pg_stat_activity "
                "WHERE datname = $1 AND application_name = 'fedgate'", DATABASE)
            blocked = any(r["wait_event_type"] == "Lock" and str(mb) in r["query"] for r in rows)
            exported = any(r["query"].startswith("COPY") and str(ma) in r["query"] for r in rows)
            if blocked and exported:
                break
            assert not query.done(), query.result()
            assert time.monotonic() < deadline, rows
            await asyncio.sleep(0.02)
        await tx.commit()
        assert await asyncio.wait_for(query, 60) == [("100",)]
        # The row is there for the next query: only the snapshot hid it.
        assert await _fetch(gateway.dsn, sql.replace(str(mb), str(mb + 1))) == [(101,)]
    finally:
        await writer.execute("DELETE FROM b WHERE j = 101")
        await writer.close()
        await watcher.close()
