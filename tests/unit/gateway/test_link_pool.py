"""`gateway.relay.pool.LinkPool` on its own: room, taking back, FIFO waiting, timeout.

The links and sessions are stand-ins with the few attributes the pool reads; the pool
against a real PostgreSQL is tests/integration/test_pooling.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from gateway.relay import pool as pool_module
from gateway.relay.pool import LinkPool
from pgwire.errors import PgError


@dataclass
class FakePort:
    eof: bool = False


@dataclass(eq=False)
class FakeLink:
    source: str = "pg"
    status: str = "I"
    broken: bool = False
    idle: bool = True
    closed: bool = False
    port: FakePort = field(default_factory=FakePort)

    def close(self) -> None:
        self.closed = True


@dataclass(eq=False)
class FakeSession:
    links: dict = field(default_factory=dict)
    willing: bool = True  # idle outside a block: its link may go
    dropped: list = field(default_factory=list)
    told: int = 0  # times the pool said a client waits for its link

    def lendable(self, link: FakeLink, mode: str) -> bool:
        return mode == "transaction" and self.willing and self.links.get(link.source) is link

    def contended(self) -> None:
        self.told += 1

    def drop_dead(self, link: FakeLink) -> None:
        if self.links.get(link.source) is link:
            del self.links[link.source]
            self.dropped.append(link)


def opener(made: list[FakeLink]):
    async def connect() -> FakeLink:
        link = FakeLink()
        made.append(link)
        return link
    return connect


async def take(pool: LinkPool, session: FakeSession, made: list[FakeLink], notices=None) -> FakeLink:
    async def notice(text: str) -> None:
        notices.append(text)
    link = await pool.acquire(session, opener(made), notice if notices is not None else None)
    session.links[link.source] = link
    return link


async def test_links_are_opened_up_to_the_size_then_taken_back_from_idle_sessions() -> None:
    pool, made = LinkPool("pg", "u", 2, "transaction", 5), []
    a, b, c = FakeSession(), FakeSession(), FakeSession()
    first, second = await take(pool, a, made), await take(pool, b, made)
    assert len(made) == 2
    third = await take(pool, c, made)
    assert third is first and "pg" not in a.links and pool.reclaimed == 1
    assert pool.lent[third] is c and len(made) == 2


async def test_session_mode_waits_for_a_session_to_end_and_serves_in_order() -> None:
    pool, made = LinkPool("pg", "u", 1, "session", 5), []
    a = FakeSession()
    held = await take(pool, a, made)
    order: list[str] = []

    async def waiter(name: str) -> None:
        session = FakeSession()
        link = await take(pool, session, made)
        order.append(name)
        del session.links["pg"]
        pool.give_back(link)

    tasks = [asyncio.create_task(waiter(n)) for n in "xyz"]
    await asyncio.sleep(0.05)
    assert order == [] and len(pool.waiters) == 3
    del a.links["pg"]
    pool.give_back(held)
    await asyncio.gather(*tasks)
    assert order == ["x", "y", "z"] and len(made) == 1 and pool.free == [held]


async def test_a_waiter_times_out_with_53300_and_a_notice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_module, "NOTICE_AFTER_S", 0.05)
    pool, made = LinkPool("pg", "u", 1, "transaction", 0.3), []
    busy = FakeSession(willing=False)  # in a block
    await take(pool, busy, made)
    notices: list[str] = []
    with pytest.raises(PgError) as caught:
        await take(pool, FakeSession(), made, notices)
    assert caught.value.sqlstate == "53300"
    assert '"pg"' in caught.value.message and "pool of 1" in caught.value.message
    assert len(notices) == 1 and "waiting for a connection" in notices[0]
    assert pool.timeouts == 1 and not pool.waiters and pool.longest_wait_s >= 0.3


async def test_dead_links_make_room_for_new_ones() -> None:
    pool, made = LinkPool("pg", "u", 1, "session", 1), []
    a = FakeSession()
    old = await take(pool, a, made)
    old.port.eof = True  # the source restarted
    new = await take(pool, FakeSession(), made)
    assert new is not old and a.dropped == [old] and len(made) == 2


async def test_a_free_link_that_died_is_not_lent() -> None:
    pool, made = LinkPool("pg", "u", 2, "transaction", 1), []
    a = FakeSession()
    link = await take(pool, a, made)
    del a.links["pg"]
    pool.give_back(link)
    link.port.eof = True
    fresh = await take(pool, FakeSession(), made)
    assert fresh is not link and link.closed and pool.total == 1


async def test_a_session_between_statements_hands_its_link_to_the_first_waiter() -> None:
    """No polling: the waiter sleeps on its future until a session lends it a link."""
    pool, made = LinkPool("pg", "u", 1, "transaction", 5), []
    a = FakeSession(willing=False)  # in a block
    held = await take(pool, a, made)
    got: list[FakeLink] = []

    async def wait(name: str) -> None:
        session = FakeSession()
        got.append(await take(pool, session, made))
        del session.links["pg"]
        pool.give_back(got[-1])

    first = asyncio.create_task(wait("x"))
    await asyncio.sleep(0.01)
    assert a.told == 1 and len(pool.waiters) == 1 and not pool.waiters[0].future.done()
    del a.links["pg"]  # the block ended: the session lends its link (SessionLinks.lend_waited)
    assert pool.lend(held)
    await first
    assert got == [held] and pool.reclaimed == 1 and pool.free == [held] and len(made) == 1
    assert not pool.lend(held)  # nobody waits: the link stays


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    pool, made = LinkPool("pg", "u", 1, "transaction", 5), []
    a = FakeSession(willing=False)
    held = await take(pool, a, made)
    tasks = [asyncio.create_task(take(pool, FakeSession(), made)) for _ in range(3)]
    await asyncio.sleep(0.01)
    tasks[1].cancel()
    with pytest.raises(asyncio.CancelledError):
        await tasks[1]
    assert len(pool.waiters) == 2 and tasks[1] not in pool.waiters
    del a.links["pg"]
    pool.give_back(held)
    assert await tasks[0] is held
    pool.give_back(held)
    assert await tasks[2] is held and not pool.waiters


async def test_a_link_handed_to_a_waiter_cancelled_at_that_moment_goes_to_the_next() -> None:
    pool, made = LinkPool("pg", "u", 1, "transaction", 5), []
    a = FakeSession(willing=False)
    held = await take(pool, a, made)
    x, y = FakeSession(), FakeSession()
    first = asyncio.create_task(take(pool, x, made))
    second = asyncio.create_task(take(pool, y, made))
    await asyncio.sleep(0.01)
    del a.links["pg"]
    pool.give_back(held)  # handed to the first waiter ...
    first.cancel()  # ... whose client cancels before its task runs again
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await second is held and pool.lent[held] is y and "pg" not in x.links
    assert not pool.waiters and len(made) == 1


async def test_room_handed_to_a_waiter_cancelled_at_that_moment_goes_to_the_next() -> None:
    pool, made = LinkPool("pg", "u", 1, "transaction", 5), []
    held = await take(pool, FakeSession(willing=False), made)
    first = asyncio.create_task(take(pool, FakeSession(), made))
    second = asyncio.create_task(take(pool, FakeSession(), made))
    await asyncio.sleep(0.01)
    pool.forget(held)  # closed (say, it was pinned): room for one more, to the first
    held.close()
    assert pool.opening == 1
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    fresh = await second
    assert fresh is not held and made == [held, fresh] and pool.total == 1 and not pool.opening


async def test_a_link_past_its_lifetime_is_closed_when_given_back() -> None:
    pool, made = LinkPool("pg", "u", 2, "transaction", 5, idle_timeout_s=0, lifetime_s=0.05), []
    a = FakeSession()
    old = await take(pool, a, made)
    await asyncio.sleep(0.06)
    del a.links["pg"]
    pool.give_back(old)
    assert old.closed and pool.total == 0 and pool.lifecycle.retired == 1
    assert await take(pool, FakeSession(), made) is not old


async def test_a_free_link_idle_too_long_is_closed_by_the_sweep() -> None:
    pool, made = LinkPool("pg", "u", 2, "transaction", 5, idle_timeout_s=0.1, lifetime_s=0), []
    a = FakeSession()
    link = await take(pool, a, made)
    del a.links["pg"]
    pool.give_back(link)
    assert pool.free == [link]
    await asyncio.sleep(0.25)
    assert link.closed and not pool.free and pool.total == 0 and pool.lifecycle.retired == 1


async def test_a_link_free_a_while_is_checked_before_it_is_lent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_module, "CHECK_AFTER_IDLE_S", 0.02)
    pool, made = LinkPool("pg", "u", 2, "transaction", 5), []
    a = FakeSession()
    link = await take(pool, a, made)
    del a.links["pg"]
    pool.give_back(link)
    assert await take(pool, FakeSession(), made) is link and not pool.lifecycle.will_check(link)
    pool.give_back(link)
    await asyncio.sleep(0.03)
    assert await take(pool, FakeSession(), made) is link and pool.lifecycle.will_check(link)
