"""The express lane's place in a pool's line for a link (transaction pooling).

A session whose link went to a client waiting for it finds, at its next statement, that
clients still wait. Rather than the session's task (which would wait in line, then run
the statement on the slow road), the lane takes a place at the end of the pool's line
(`LinkPool.enqueue`: the waiters' FIFO of futures) and runs the statement itself once
handed a link. Whatever the lane cannot do there (room to open a link, another role on
it, a cancel, a wait long enough for the NOTICE) goes to the task with the place kept
(`to_task`, `Holder.adopted`, which `borrow` waits on instead of queueing again). Only
for a session whose one source is a pool in transaction mode, outside a block.

The pool keeps the line itself: a waiter that gives up its place leaves it
(`LinkPool.leave`), and what it was handed at that very moment goes on to the next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from connectors.postgres.link import PgLink
from gateway.relay.links import SessionLinks
from gateway.relay.pool import NOTICE_AFTER_S, LinkPool, Waiter
from gateway.state.session import SessionState


class Port(Protocol):
    """The client's socket as the place uses it (`gateway.relay.express.lane.ClientSide`)."""

    def feed(self, data: bytes) -> None: ...

    def consumed(self) -> None: ...


class InLine(Protocol):
    """What the place asks of the lane (`gateway.relay.express.lane.Lane`)."""

    state: SessionState
    links: SessionLinks
    held: list[bytes]  # what the client sent meanwhile; the lane runs it once handed a link
    closed: bool

    @property
    def port(self) -> Port: ...


class PlaceInLine:
    """At most one place at a time, in the line of the session's one pool."""

    def __init__(self, lane: InLine, resume: Callable[[], None]) -> None:
        self._lane = lane
        self._resume = resume  # the lane takes what was held, on the link it was handed
        self._taken: tuple[Waiter, LinkPool, str] | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def waiting(self) -> bool:
        """In line: what the client sends is held until a link is handed, or the task
        takes the place."""
        return self._taken is not None

    def join(self, data: bytes) -> bool:
        """A place in line for the statement `data` begins; False when the lane may not
        wait for it (the task takes `data`)."""
        lane = self._lane
        links = lane.links
        s = lane.state
        if (data[:1] not in (b"Q", b"P", b"B") or lane.closed or links.links
                or len(links.pools) != 1 or s.in_block or s.failed):
            return False  # (a statement's first message: a Query, or Parse or Bind)
        source, pool = next(iter(links.pools.items()))
        if not pool.waiters or s.access.pool_modes.get(source, pool.mode) != "transaction":
            return False
        waiter = pool.enqueue(links)
        self._taken = (waiter, pool, source)
        lane.held.append(data)
        waiter.future.add_done_callback(self._handed)
        if self._timer is None:  # (kept armed across places: see `_late`)
            self._timer = asyncio.get_running_loop().call_later(
                min(NOTICE_AFTER_S, pool.timeout_s), self._late)
        lane.port.consumed()
        return True

    def _late(self) -> None:
        """The timer is due: the place taken now goes to the task once it has waited long
        enough for the NOTICE. The timer is not cancelled when a place ends (a timer per
        statement cost as much as the rest of taking a place); it runs again for the
        place taken meanwhile, at most once per NOTICE_AFTER_S while the session waits."""
        self._timer = None
        taken = self._taken
        if taken is None:
            return
        waiter, pool, _source = taken
        loop = asyncio.get_running_loop()
        left = waiter.since + min(NOTICE_AFTER_S, pool.timeout_s) - loop.time()
        if left > 0:
            self._timer = loop.call_later(left, self._late)
        else:
            self.to_task()

    def leave(self) -> None:
        """The client is gone: out of the line; what was handed goes on to the next."""
        taken = self._untake()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if taken is not None:
            taken[1].leave(taken[0])

    def to_task(self) -> None:
        """The task takes the statement, and the place in line with it (`borrow`)."""
        taken = self._untake()
        if taken is None:
            return
        waiter, pool, source = taken
        lane = self._lane
        lane.links.adopted[source] = (waiter, pool)
        data = b"".join(lane.held)
        lane.held.clear()
        lane.port.feed(data)
        lane.port.consumed()

    def _untake(self) -> tuple[Waiter, LinkPool, str] | None:
        taken, self._taken = self._taken, None
        return taken

    def _handed(self, future: asyncio.Future[PgLink | None]) -> None:
        taken = self._taken
        if taken is None or taken[0].future is not future or future.cancelled():
            return  # (the task has the place now, or the line was left)
        waiter, pool, source = taken
        link = future.result()
        lane = self._lane
        if lane.closed or lane.state.closed:  # the session ended meanwhile: to the next
            self._untake()
            pool.leave(waiter)
            return
        if (link is None or link.broken or link.port.eof
                or pool.roles.get(link) != lane.state.access.source_roles.get(source)):
            self.to_task()  # it opens the link, sets the role, or finds it dead
            return
        self._untake()
        lane.links.links[source] = link
        self._resume()
