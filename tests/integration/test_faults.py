"""Fault tests: sources dying mid-query, cancel and statement timeout reaching the remote.

One real gateway process serves four sources: PostgreSQL (`pg`, and `pg2` = another schema
of the same server), MariaDB (`shop`) and Parquet (`files`). The PostgreSQL and MariaDB
servers belong to this module alone, because the tests stop and restart them.

What is proved (every wait is bounded, so a hang fails the test within seconds):
- a source stopped mid-stream reaches the client as one ErrorResponse naming the source
  within seconds, while a session on another source keeps getting answers; the gateway
  stays up and the source works again once restarted (no dead pooled connection reused);
- a CancelRequest, a statement timeout, and a sibling fragment's failure each leave no
  `active` backend in the remote's `pg_stat_activity` (MariaDB: its process list), not
  just a quiet client, on the planner's path and on the relay alike;
- a client reading a huge federated result slowly holds the gateway's memory flat while
  PostgreSQL waits on the gateway (backpressure reaches the source), and a client that
  goes away or closes a half-read cursor stops the remote query without freezing anything.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import asyncmy
import asyncpg
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support import rawpg
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.mariadb import MariaDBServer, start_mariadb
from tests.support.postgres import PostgresServer, start_postgres
from tests.support.slow import MARIADB_SLOW_VIEW, PG_SLOW_VIEW

T = TypeVar("T")

ROWS = 200_000_000  # the streaming views: far more than any test reads
# generate_series in the select list streams (in FROM it would be materialized first).
BIG_VIEW = (f"CREATE VIEW big AS SELECT x, md5(x::text) AS s "
            f"FROM (SELECT generate_series(1, {ROWS}) AS x) g")
# Division by zero after some 10M rows: PostgreSQL fails a second or so into the query.
LATE_ERROR_VIEW = ("CREATE VIEW side.late AS SELECT min(1 / (x - 10000000)) AS m "
                   "FROM (SELECT generate_series(1, 12000000) AS x) g")
ERROR_WITHIN_S = 5.0  # a source failure must reach the client this fast
# MariaDB's rows already in the socket buffers when it dies (10-20 MB) are read through
# asyncmy, at some 150k rows/s on a busy machine, before its end of stream shows.
MARIADB_ERROR_WITHIN_S = 8.0
IDLE_WITHIN_S = 2.0  # the remote backend must stop this fast after a cancel
# A client's own housekeeping (a bystander stopped and its statement cancelled, a socket
# closed, a look at a server's activity) ends this fast, or the test fails saying what.
HOUSEKEEPING_S = 15.0
RSS_GROWTH_MB = 150
SLOW_READ_S = 8.0
# Every row of the PostgreSQL stream joined to one Parquet row: a federated result as big
# as the stream itself, computed by the engine.
FEDERATED_BIG = "SELECT b.x, b.s, i.name FROM pg.big b CROSS JOIN files.items i WHERE i.id = 1"


@dataclass
class World:
    pg: PostgresServer
    maria: MariaDBServer
    gateway: GatewayProcess


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("faults")
    pg = start_postgres(root / "pg")
    maria: MariaDBServer | None = None
    gateway: GatewayProcess | None = None
    try:
        maria = start_mariadb()
        asyncio.run(_fill_postgres(pg.dsn))
        asyncio.run(_fill_mariadb(maria))
        files = root / "files"
        files.mkdir()
        pq.write_table(pa.table({"id": list(range(100)), "name": [f"n{i}" for i in range(100)]}),
                       files / "items.parquet")
        gateway = start_gateway(
            '[catalog]\nsearch_path = ["pg"]\nrefresh_seconds = 0\n'
            f'[sources.pg]\nkind = "postgres"\ndsn = "{pg.dsn}"\n'
            f'[sources.pg2]\nkind = "postgres"\ndsn = "{pg.dsn}"\nschema = "side"\n'
            f'[sources.shop]\nkind = "mysql"\ndsn = "{maria.dsn("shop")}"\n'
            f'[sources.files]\nkind = "parquet"\npath = "{files}"\n', root / "gw")
        yield World(pg, maria, gateway)
    finally:
        if gateway is not None:
            gateway.stop()
        if maria is not None:
            maria.stop()
        _stop_quietly(pg)


async def _fill_postgres(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(BIG_VIEW)
        await conn.execute(PG_SLOW_VIEW)  # minutes of counting: only a cancel ends it
        await conn.execute("CREATE SCHEMA side")
        await conn.execute(LATE_ERROR_VIEW)
    finally:
        await conn.close()


async def _fill_mariadb(server: MariaDBServer) -> None:
    conn = await asyncmy.connect(host=server.host, port=server.port, user="root", autocommit=True)
    try:
        async with conn.cursor() as cur:
            await cur.execute("CREATE DATABASE shop")
            # The SEQUENCE engine's virtual table streams without storing anything.
            await cur.execute(f"CREATE VIEW shop.big AS SELECT seq AS x, md5(seq) AS s "
                              f"FROM shop.seq_1_to_{ROWS}")
            await cur.execute(MARIADB_SLOW_VIEW.format(schema="shop"))
    finally:
        conn.close()


def _stop_quietly(pg: PostgresServer) -> None:
    try:
        pg.stop()
    except RuntimeError:
        pass  # stopped by a test already; stop() has removed its files anyway


# --------------------------------------------------------------------------- helpers


async def bounded(work: Awaitable[T], what: str, within: float = HOUSEKEEPING_S) -> T:
    """Await `work`, failing the test (not hanging it) if it takes over `within` s."""
    try:
        return await asyncio.wait_for(work, within)
    except TimeoutError:
        raise AssertionError(f"{what}: not done within {within}s") from None


async def wait_for(check: Callable[[], Awaitable[object]], within: float,
                   every: float = 0.05) -> float:
    """Poll an async `check` until it returns something true; the seconds it took."""
    started = time.monotonic()
    while True:
        if await check():
            return time.monotonic() - started
        if time.monotonic() - started > within:
            raise AssertionError(f"condition not met within {within}s")
        await asyncio.sleep(every)


async def fedgate_backends(pg: PostgresServer, state: str = "active") -> list[asyncpg.Record]:
    """The gateway's backends on the PostgreSQL server in `state` (a direct connection)."""
    conn = await asyncpg.connect(pg.dsn, timeout=HOUSEKEEPING_S)
    try:
        return await conn.fetch(
            "SELECT pid, state, wait_event_type, wait_event, query FROM pg_stat_activity "
            "WHERE application_name = 'fedgate' AND state = $1", state, timeout=HOUSEKEEPING_S)
    finally:
        await bounded(conn.close(), "closing a connection to PostgreSQL")


async def gateway_connect(world: World) -> psycopg.AsyncConnection:
    return await psycopg.AsyncConnection.connect(
        host=world.gateway.host, port=world.gateway.port, user="fedgate",
        dbname=world.gateway.database, autocommit=True, connect_timeout=10)


class RawClient:
    """A raw protocol client on asyncio streams that reads a result as slowly as told."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.buf = bytearray()
        self.bytes_read = 0
        self.rows = 0

    @classmethod
    async def open(cls, gateway: GatewayProcess) -> RawClient:
        reader, writer = await bounded(asyncio.open_connection(gateway.host, gateway.port),
                                       "connecting to the gateway")
        client = cls(reader, writer)
        writer.write(rawpg.startup_message({"user": "fedgate", "database": gateway.database}))
        await client.until("Z", within=10)
        return client

    async def read_some(self, chunk: int = 65536) -> list[rawpg.Message]:
        """One read from the socket; the whole messages it completes, DataRows counted only."""
        data = await self.reader.read(chunk)
        if not data:
            raise rawpg.ConnectionClosed("gateway closed the connection")
        self.bytes_read += len(data)
        self.buf += data
        out, at = [], 0
        while len(self.buf) - at >= 5:
            (length,) = struct.unpack_from("!i", self.buf, at + 1)
            if len(self.buf) - at < 1 + length:
                break
            tag = chr(self.buf[at])
            if tag == "D":
                self.rows += 1
            else:
                out.append(rawpg.Message(tag, bytes(self.buf[at + 5:at + 1 + length])))
            at += 1 + length
        del self.buf[:at]
        return out

    async def until(self, types: str, within: float, pause: float = 0.0) -> list[rawpg.Message]:
        """Read (sleeping `pause` between reads) until a message whose type is in `types`."""
        deadline = time.monotonic() + within
        seen: list[rawpg.Message] = []
        while not any(m.type in types for m in seen):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {types!r} within {within}s ({self.rows} rows read); "
                                     f"got {seen[-5:]}")
            seen += await asyncio.wait_for(self.read_some(), left)
            if pause:
                await asyncio.sleep(pause)
        return seen

    async def query(self, sql: str) -> None:
        self.writer.write(rawpg.query(sql))
        await bounded(self.writer.drain(), "sending a Query")

    async def close(self) -> None:
        self.writer.close()
        try:
            await bounded(self.writer.wait_closed(), "closing a raw client's socket")
        except (ConnectionError, OSError):
            pass


@dataclass
class Bystander:
    """A session on the Parquet source asking again and again while another source fails."""

    answers: list[float] = field(default_factory=list)  # seconds each answer took
    failures: list[BaseException] = field(default_factory=list)
    _task: asyncio.Task | None = None

    async def _run(self, world: World) -> None:
        conn = await gateway_connect(world)
        try:
            while True:
                started = time.monotonic()
                try:
                    cur = await asyncio.wait_for(
                        conn.execute("SELECT count(*), max(name) FROM files.items"), 10)
                    assert await cur.fetchone() == (100, "n99")
                except (AssertionError, psycopg.Error, TimeoutError) as exc:
                    self.failures.append(exc)
                    return
                self.answers.append(time.monotonic() - started)
                await asyncio.sleep(0.05)
        finally:
            await bounded(conn.close(), "closing the bystander's connection")

    def start(self, world: World) -> None:
        self._task = asyncio.ensure_future(self._run(world))

    def since(self, mark: int) -> list[float]:
        return self.answers[mark:]

    async def stop(self) -> None:
        """Cancel the bystander. A statement in flight is cancelled on the gateway too
        (psycopg sends a CancelRequest and reads the session's answer): that answer must
        come, so a session left without one fails here instead of hanging the run."""
        assert self._task is not None
        self._task.cancel()
        done, _ = await asyncio.wait([self._task], timeout=HOUSEKEEPING_S)
        if not done:
            raise AssertionError(
                f"the bystander did not stop within {HOUSEKEEPING_S}s: its statement, "
                f"cancelled, got neither its answer nor 57014 from the gateway "
                f"({len(self.answers)} answers before)")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS line")


def kill_mariadb(server: MariaDBServer) -> None:
    server.proc.kill()
    server.proc.wait(10)


def restart_mariadb(server: MariaDBServer) -> None:
    """Start mariadbd again on the same data directory and port."""
    server.proc = subprocess.Popen(server.proc.args, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((server.host, server.port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"mariadbd did not come back:\n{server.log()[-2000:]}")


# --------------------------------------------------------------------------- tests

# What a lost source reports: the connection lost mid-statement (or, when the source
# went before the statement reached it, no connection made).
CONNECTION_LOST = {"08006", "08001"}
ANSWER_WITHIN_S = 15.0  # any statement expected to succeed


async def run(conn: psycopg.AsyncConnection, sql: str) -> list[tuple]:
    cur = await asyncio.wait_for(conn.execute(sql), ANSWER_WITHIN_S)
    return await cur.fetchall() if cur.description else []


async def _stream_then_break(world: World, table: str, source: str, kill: Callable[[], None],
                             revive: Callable[[], None], within: float = ERROR_WITHIN_S) -> None:
    """Stream `table` slowly, kill its source, and check the error, the bystander and recovery."""
    bystander = Bystander()
    bystander.start(world)
    client = await RawClient.open(world.gateway)
    down = False
    try:
        await client.query(f"SELECT x, s FROM {table}")
        while client.rows < 50_000:  # the remote query is streaming for sure
            messages = await asyncio.wait_for(client.read_some(), ANSWER_WITHIN_S)
            assert "E" not in [m.type for m in messages], messages
            await asyncio.sleep(0.005)
        mark, at_kill = len(bystander.answers), client.bytes_read
        await asyncio.to_thread(kill)
        down, stopped = True, time.monotonic()
        messages = await client.until("E", within=within * 3, pause=0.005)
        took = time.monotonic() - stopped
        print(f"{source} stopped: the error came {took:.2f}s later, after "
              f"{(client.bytes_read - at_kill) / 1e6:.1f} MB buffered before it")
        error = next(m for m in messages if m.type == "E").fields
        assert error["C"] in CONNECTION_LOST, error
        # The one shape of a source gone (pgwire.errors.source_unavailable).
        assert error["M"].startswith(f'source "{source}" is unavailable: '), error
        assert f"[sources.{source}]" in error.get("H", ""), error
        assert error["S"] == "ERROR"  # this statement failed, the session did not
        assert took < within, f"the error took {took:.1f}s"
        if "Z" not in [m.type for m in messages]:
            await client.until("Z", within=5)
        # The same session answers from another source at once.
        await client.query("SELECT count(*) FROM files.items")
        assert "E" not in [m.type for m in await client.until("Z", within=5)]
        await asyncio.sleep(1.0)  # the bystander keeps answering while the source is down
        assert world.gateway.proc.poll() is None, "the gateway process died"
        await asyncio.to_thread(revive)
        down = False
        # Several sessions at once, so more than one pooled connection is put to work.
        firsts = await asyncio.gather(*(_first_rows(world, f"SELECT x FROM {table} LIMIT 3")
                                        for _ in range(4)))
        assert firsts == [[(1,), (2,), (3,)]] * 4
        assert not bystander.failures, bystander.failures
        answered = bystander.since(mark)
        assert len(answered) >= 10 and max(answered) < ERROR_WITHIN_S, answered
    finally:
        try:
            await client.close()
            await bystander.stop()
        finally:
            if down:
                revive()


async def _first_rows(world: World, sql: str) -> list[tuple]:
    conn = await gateway_connect(world)
    try:
        return await run(conn, sql)
    finally:
        await conn.close()


@pytest.mark.parametrize("table", ["pg.big", "big"], ids=["planner", "relay"])
async def test_postgres_stopped_mid_stream(world: World, table: str) -> None:
    await _stream_then_break(world, table, "pg",
                             world.pg.crash, world.pg.start_again)


async def test_mariadb_killed_mid_stream(world: World) -> None:
    await _stream_then_break(world, "shop.big", "shop",
                             lambda: kill_mariadb(world.maria),
                             lambda: restart_mariadb(world.maria), within=MARIADB_ERROR_WITHIN_S)


async def _running_remotely(world: World, text: str) -> bool:
    return any(text in r["query"] for r in await fedgate_backends(world.pg))


async def _all_idle(world: World) -> bool:
    return not await fedgate_backends(world.pg)


# A qualified name goes through the planner and the source's COPY stream; an unqualified
# one (search_path = pg) is relayed to PostgreSQL as the client wrote it; with a join to
# Parquet, DuckDB waits for the PostgreSQL fragment (its worker blocked on the feed).
PATHS = pytest.mark.parametrize("table", ["pg.slow", "slow", "pg.slow CROSS JOIN files.items"],
                                ids=["planner", "relay", "federated"])


@PATHS
async def test_cancel_request_stops_the_postgres_backend(world: World, table: str) -> None:
    conn = await gateway_connect(world)
    try:
        running = asyncio.ensure_future(conn.execute(f"SELECT n FROM {table}"))
        await wait_for(lambda: _running_remotely(world, "slow"), within=10)
        await conn.cancel_safe(timeout=5)
        with pytest.raises(psycopg.errors.QueryCanceled) as caught:
            await asyncio.wait_for(running, 10)
        assert caught.value.sqlstate == "57014"
        await wait_for(lambda: _all_idle(world), within=IDLE_WITHIN_S)
        # The session and the pool go on.
        assert await run(conn, "SELECT x FROM pg.big LIMIT 2") == [(1,), (2,)]
    finally:
        await conn.close()


async def _mariadb_running(server: MariaDBServer, text: str) -> list[int]:
    """Ids of MariaDB connections running a statement that mentions `text`."""
    admin = await bounded(asyncmy.connect(host=server.host, port=server.port, user="root",
                                          autocommit=True), "connecting to MariaDB")
    try:
        async with admin.cursor() as cur:
            await bounded(cur.execute(
                "SELECT ID FROM information_schema.PROCESSLIST "
                "WHERE COMMAND = 'Query' AND INFO LIKE %s AND ID <> CONNECTION_ID()",
                (f"%{text}%",)), "reading MariaDB's process list")
            return [row[0] for row in await cur.fetchall()]
    finally:
        admin.close()


async def test_cancel_request_stops_the_mariadb_query(world: World) -> None:
    conn = await gateway_connect(world)
    try:
        running = asyncio.ensure_future(conn.execute("SELECT n FROM shop.slow"))

        async def started() -> bool:
            return bool(await _mariadb_running(world.maria, "slow"))

        async def stopped() -> bool:
            return not await _mariadb_running(world.maria, "slow")

        await wait_for(started, within=10)
        await conn.cancel_safe(timeout=5)
        with pytest.raises(psycopg.errors.QueryCanceled):
            await asyncio.wait_for(running, 10)
        await wait_for(stopped, within=IDLE_WITHIN_S)
        # The session and the pool go on.
        assert await run(conn, "SELECT x FROM shop.big LIMIT 2") == [(1,), (2,)]
    finally:
        await conn.close()


@PATHS
async def test_statement_timeout_stops_the_postgres_backend(world: World, table: str) -> None:
    conn = await gateway_connect(world)
    try:
        await run(conn, "SET statement_timeout = '500ms'")
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled) as caught:
            await asyncio.wait_for(conn.execute(f"SELECT n FROM {table}"), 10)
        assert caught.value.sqlstate == "57014"
        assert "statement timeout" in str(caught.value)
        assert time.monotonic() - started < 3
        await wait_for(lambda: _all_idle(world), within=IDLE_WITHIN_S)
    finally:
        await conn.close()


@pytest.mark.parametrize("failing", ["pg2", "shop"])
async def test_failing_fragment_stops_its_postgres_sibling(world: World, failing: str) -> None:
    """One fragment fails while PostgreSQL still computes the other: the client gets that
    error alone, soon, and the PostgreSQL sibling is cancelled on the server."""
    conn = await gateway_connect(world)
    try:
        other = "pg2.late" if failing == "pg2" else "shop.slow"
        running = asyncio.ensure_future(
            conn.execute(f"SELECT s.n, o.* FROM pg.slow s CROSS JOIN {other} o"))
        await wait_for(lambda: _running_remotely(world, "slow"), within=10)
        if failing == "shop":  # MariaDB's connection is killed while it counts
            await _kill_mariadb_queries(world.maria, "slow")
        # else PostgreSQL itself raises division by zero a second or so into `late`
        started = time.monotonic()
        with pytest.raises(psycopg.Error) as caught:
            await asyncio.wait_for(running, 15)
        took = time.monotonic() - started
        if failing == "pg2":  # some 10M rows in, PostgreSQL fails: error within a few seconds
            assert caught.value.sqlstate == "22012", caught.value
            assert str(caught.value) == "division by zero"
        else:
            assert caught.value.sqlstate in CONNECTION_LOST, caught.value
            assert str(caught.value).startswith('source "shop" is unavailable: '), caught.value
        assert took < ERROR_WITHIN_S, f"the error took {took:.1f}s"
        await wait_for(lambda: _all_idle(world), within=IDLE_WITHIN_S)
        assert await run(conn, "SELECT count(*) FROM files.items") == [(100,)]  # it goes on
    finally:
        await conn.close()


async def _kill_mariadb_queries(server: MariaDBServer, text: str) -> None:
    """KILL the connections running a query that mentions `text`, once one runs."""
    async def running() -> bool:
        return bool(await _mariadb_running(server, text))

    await wait_for(running, within=10)
    admin = await bounded(asyncmy.connect(host=server.host, port=server.port, user="root",
                                          autocommit=True), "connecting to MariaDB")
    try:
        async with admin.cursor() as cur:
            for thread in await _mariadb_running(server, text):
                await bounded(cur.execute(f"KILL CONNECTION {int(thread)}"), "KILL CONNECTION")
    finally:
        admin.close()


async def test_slow_client_keeps_gateway_memory_flat(world: World) -> None:
    """A federated result of ~10 GB read at about 1 MB/s: PostgreSQL is made to wait for
    the gateway, and the gateway's memory stays flat."""
    pid = world.gateway.proc.pid
    # Warm up first (DuckDB, the pools, Arrow's allocator): what is measured is growth
    # while the result streams, not the cost of a first federated query.
    assert len(await _first_rows(world, FEDERATED_BIG + " LIMIT 3")) == 3
    before = rss_mb(pid)
    client = await RawClient.open(world.gateway)
    samples, held_back = [before], False
    try:
        await client.query(FEDERATED_BIG)
        started = time.monotonic()
        next_sample = started
        while time.monotonic() - started < SLOW_READ_S:
            messages = await asyncio.wait_for(client.read_some(16384), ANSWER_WITHIN_S)
            assert "E" not in [m.type for m in messages], messages
            await asyncio.sleep(0.01)
            if time.monotonic() >= next_sample:
                next_sample += 0.5
                samples.append(rss_mb(pid))
                held_back = held_back or any(r["wait_event"] == "ClientWrite"
                                             for r in await fedgate_backends(world.pg))
        seconds = time.monotonic() - started
        print(f"slow client: {client.bytes_read / 1e6:.1f} MB in {seconds:.1f}s; gateway RSS "
              f"{before:.0f} MB before, peak {max(samples):.0f} MB")
        assert client.bytes_read > 2_000_000
        assert max(samples) - before < RSS_GROWTH_MB, samples
        assert held_back, "PostgreSQL never waited for the gateway to read"
    finally:
        await client.close()
    # The client went away mid-result: the remote query stops too.
    await wait_for(lambda: _all_idle(world), within=5)


async def test_cursor_left_open_does_not_freeze_the_gateway(world: World) -> None:
    """COMMIT closes a half-read federated cursor while DuckDB may be waiting for the next
    PostgreSQL batch; closing must neither deadlock the event loop nor leave PostgreSQL
    streaming."""
    conn = await asyncpg.connect(world.gateway.dsn, command_timeout=ANSWER_WITHIN_S)
    try:
        async with conn.transaction():
            cursor = await conn.cursor(FEDERATED_BIG)
            assert len(await asyncio.wait_for(cursor.fetch(10), 15)) == 10
            await asyncio.sleep(0.5)  # let the engine's threads block on a full pipeline
        await asyncio.wait_for(conn.close(), 5)
        assert await _first_rows(world, "SELECT count(*) FROM files.items") == [(100,)]
        await wait_for(lambda: _all_idle(world), within=5)
    finally:
        conn.terminate()
