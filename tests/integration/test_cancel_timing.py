"""CancelRequests at every moment of a statement: the session always answers, soon.

One real gateway process serves a real PostgreSQL (`pg`) and a Parquet folder (`files`).
Raw protocol sessions send a statement and, after a delay drawn anew each time (none, a
fraction of a millisecond, a few milliseconds, tens of them), a CancelRequest for it, so
the cancel lands before the statement is read, while it is planned, while a source
connection is opened, while DuckDB starts, while rows stream, and after ReadyForQuery.
PostgreSQL's behaviour is what is checked: the statement ends with its answer or with
57014 "canceling statement due to user request" and ReadyForQuery, always within a bound;
a statement that cannot end on its own (a count over billions) always gets 57014; the
session stays usable; the CancelRequest's own connection is closed without a reply.
Every wait is bounded, so a hang fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import random
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support import rawpg
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, start_postgres
from tests.support.slow import PG_SLOW_VIEW, counting

ANSWER_WITHIN_S = 10.0  # a statement, cancelled or not, ends this fast
TEST_WITHIN_S = 28.0  # the whole hammering of one kind of statement
SESSIONS = 4
ROUNDS = 40  # per session
NEW_SESSION_EVERY = 5  # a fresh session now and then: its first statement opens links
CANCELED = "canceling statement due to user request"

# Statements that end on their own: the answer or 57014, both are right.
QUICK = {
    "parquet": "SELECT count(*), max(name) FROM files.items",
    "planner": "SELECT x FROM pg.t ORDER BY x LIMIT 3",
    "relay": "SELECT x FROM t ORDER BY x LIMIT 3",
    "federated": "SELECT count(*) FROM pg.t b JOIN files.items i ON i.id = b.x",
}
# Statements that never end on their own: only 57014 is right (a lost cancel hangs).
ENDLESS = {
    "planner": "SELECT n FROM pg.slow",
    "relay": "SELECT n FROM slow",
    "duckdb": counting("files.items"),  # shipped whole to the Parquet source's DuckDB
}


@dataclass
class World:
    pg: PostgresServer
    gateway: GatewayProcess


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("cancel_timing")
    pg = start_postgres(root / "pg")
    gateway: GatewayProcess | None = None
    try:
        asyncio.run(_fill_postgres(pg.dsn))
        files = root / "files"
        files.mkdir()
        pq.write_table(pa.table({"id": list(range(100)), "name": [f"n{i}" for i in range(100)]}),
                       files / "items.parquet")
        gateway = start_gateway(
            '[catalog]\nsearch_path = ["pg"]\nrefresh_seconds = 0\n'
            f'[sources.pg]\nkind = "postgres"\ndsn = "{pg.dsn}"\n'
            f'[sources.files]\nkind = "parquet"\npath = "{files}"\n', root / "gw")
        yield World(pg, gateway)
    finally:
        if gateway is not None:
            gateway.stop()
        pg.stop()


async def _fill_postgres(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(PG_SLOW_VIEW)
        await conn.execute("CREATE TABLE t AS SELECT g AS x FROM generate_series(1, 1000) g")
    finally:
        await conn.close()


class Session:
    """A raw protocol session on asyncio streams, with its cancel key."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.key: tuple[int, int] | None = None

    @classmethod
    async def open(cls, gateway: GatewayProcess) -> Session:
        reader, writer = await asyncio.open_connection(gateway.host, gateway.port)
        session = cls(reader, writer)
        writer.write(rawpg.startup_message({"user": "fedgate", "database": gateway.database}))
        for message in await session.until_ready("startup"):
            if message.type == "K":
                session.key = struct.unpack("!ii", message.payload)
        assert session.key is not None, "no BackendKeyData"
        return session

    async def _message(self) -> rawpg.Message:
        head = await self.reader.readexactly(5)
        (length,) = struct.unpack("!i", head[1:])
        return rawpg.Message(chr(head[0]), await self.reader.readexactly(length - 4))

    async def until_ready(self, what: str) -> list[rawpg.Message]:
        seen: list[rawpg.Message] = []
        deadline = time.monotonic() + ANSWER_WITHIN_S
        while not seen or seen[-1].type != "Z":
            try:
                seen.append(await asyncio.wait_for(self._message(), deadline - time.monotonic()))
            except TimeoutError:
                raise AssertionError(f"{what}: no ReadyForQuery within {ANSWER_WITHIN_S}s; "
                                     f"got {seen[-5:]}") from None
            except asyncio.IncompleteReadError:
                raise AssertionError(f"{what}: the gateway closed the session; "
                                     f"got {seen[-5:]}") from None
        return seen

    async def close(self) -> None:
        self.writer.write(rawpg.terminate())
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


async def send_cancel(gateway: GatewayProcess, key: tuple[int, int]) -> None:
    """A CancelRequest on a connection of its own, which the gateway closes unanswered."""
    reader, writer = await asyncio.open_connection(gateway.host, gateway.port)
    try:
        writer.write(rawpg.cancel_request(*key))
        await writer.drain()
        try:
            reply = await asyncio.wait_for(reader.read(), 5.0)
        except TimeoutError:
            raise AssertionError("the gateway kept the CancelRequest's connection open") from None
        assert reply == b"", f"the gateway answered a CancelRequest: {reply!r}"
    finally:
        writer.close()


async def _statement(gateway: GatewayProcess, session: Session, sql: str, endless: bool,
                     delay: float) -> str:
    """Run `sql`, cancel it `delay` seconds after sending it; 'answered' or 'cancelled'."""
    assert session.key is not None
    session.writer.write(rawpg.query(sql))
    await session.writer.drain()
    if delay:
        await asyncio.sleep(delay)
    await send_cancel(gateway, session.key)
    seen = await session.until_ready(f"{sql!r} cancelled after {delay * 1000:.2f} ms")
    errors = [m.fields for m in seen if m.type == "E"]
    what = f"{sql!r} cancelled after {delay * 1000:.2f} ms"
    if errors:
        assert len(errors) == 1, f"{what}: {errors}"
        assert (errors[0]["C"], errors[0]["M"]) == ("57014", CANCELED), f"{what}: {errors}"
        return "cancelled"
    assert not endless, f"{what}: an endless statement was answered: {seen[-3:]}"
    assert any(m.type == "C" for m in seen), f"{what}: {seen[-3:]}"
    return "answered"


async def _hammer(gateway: GatewayProcess, sql: str, endless: bool, seed: int) -> dict[str, int]:
    rnd = random.Random(seed)
    outcomes = {"answered": 0, "cancelled": 0}
    session = await Session.open(gateway)
    try:
        for i in range(ROUNDS):
            if i and i % NEW_SESSION_EVERY == 0:
                await session.close()
                session = await Session.open(gateway)
            delay = rnd.choice([0.0, rnd.uniform(0, 0.002), rnd.uniform(0, 0.02),
                                rnd.uniform(0.02, 0.08)])
            outcomes[await _statement(gateway, session, sql, endless, delay)] += 1
            if not endless and rnd.random() < 0.2:
                # A cancel while nothing runs is ignored: the next statement is answered.
                assert session.key is not None
                await send_cancel(gateway, session.key)
                session.writer.write(rawpg.query("SELECT 1"))
                seen = await session.until_ready("SELECT 1 after an idle cancel")
                assert [m.type for m in seen] == ["T", "D", "C", "Z"], seen
        # The session goes on after all of it.
        session.writer.write(rawpg.query("SELECT count(*) FROM files.items"))
        seen = await session.until_ready("the session's last statement")
        assert rawpg.data_rows(seen) == [["100"]], seen
    finally:
        await session.close()
    return outcomes


async def _hammer_all(world: World, sql: str, endless: bool) -> None:
    started = time.monotonic()
    try:
        results = await asyncio.wait_for(
            asyncio.gather(*(_hammer(world.gateway, sql, endless, seed)
                             for seed in range(SESSIONS))), TEST_WITHIN_S)
    except TimeoutError:
        raise AssertionError(f"{sql!r}: not done within {TEST_WITHIN_S}s\n"
                             f"{world.gateway.log()[-3000:]}") from None
    except AssertionError as failure:
        raise AssertionError(f"{failure}\n{world.gateway.log()[-3000:]}") from None
    answered = sum(r["answered"] for r in results)
    cancelled = sum(r["cancelled"] for r in results)
    print(f"{sql[:60]!r}: {answered} answered, {cancelled} cancelled "
          f"in {time.monotonic() - started:.1f}s")
    assert cancelled > 0
    assert world.gateway.proc.poll() is None, "the gateway process died"
    # No internal error, and no task collected mid-way (a lost cancel to a source hangs
    # a session).
    log = world.gateway.log()
    assert "Traceback" not in log and "Task was destroyed" not in log, log[-3000:]


@pytest.mark.parametrize("route", list(QUICK))
async def test_cancel_at_any_moment_of_a_quick_statement(world: World, route: str) -> None:
    await _hammer_all(world, QUICK[route], endless=False)


@pytest.mark.parametrize("route", list(ENDLESS))
async def test_cancel_at_any_moment_of_an_endless_statement(world: World, route: str) -> None:
    await _hammer_all(world, ENDLESS[route], endless=True)
