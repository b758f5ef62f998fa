"""The client's socket read by callbacks: bytes go to the express lane or to the decoder.

The connection's task reads messages from the decoder and waits on `wait()` when it has
none. While it waits with nothing buffered, the session is idle, and a chunk that holds
a statement the express lane (`gateway.relay.express`) can relay is answered right here, in
the callback, without waking the task. Every other chunk is fed to the decoder, in
order. The stream protocol this replaces stays behind it for the writing side, so
`StreamWriter.drain()` and `wait_closed()` keep working. The connection
(`gateway.server.connection`) gives the port its lane; the lane sees the port only as
`gateway.relay.express.lane.ClientSide`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.server.limits import MessageBudget
from pgwire.protocol.decoder import FrontendDecoder, asks_for_work

if TYPE_CHECKING:
    from gateway.relay.express.taking import ExpressLane

log = logging.getLogger("fedgate.connection")

# Undecoded bytes beyond the message being received (a fast COPY FROM STDIN, pipelined
# statements), or bytes the express lane holds while a statement of its runs, above this
# stop reading from the socket until the session catches up: the client waits, instead
# of our memory growing. The message being received itself may be as long as
# `[server] max_message_bytes` (the decoder refuses longer ones from their header); one
# longer than LARGE_MESSAGE is read past its first LARGE_MESSAGE bytes only with room in
# the process's budget for large messages (`gateway.server.limits.MessageBudget`). So one
# connection buffers at most HIGH_WATER + one read, plus what it took from the budget.
HIGH_WATER = 4 * 1024 * 1024
LARGE_MESSAGE = 1024 * 1024


class ClientPort(asyncio.Protocol):
    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.Transport,
                 decoder: FrontendDecoder, budget: MessageBudget) -> None:
        self.transport = transport
        self.budget = budget
        self._taken = 0  # of the budget, for the message being received
        self._budget_waited = False
        self.inner = transport.get_protocol()
        self.decoder = decoder
        self.lane: ExpressLane | None = None
        self.on_lost: Callable[[], None] | None = None  # the session's cancel, once it runs
        self.eof = False
        self.tls = False  # `use_transport` gave it the TLS transport
        # The client shut its side with statements sent and not yet run: they are run and
        # answered before the session ends (`eof_received`).
        self.half_closed = False
        self.waiting = False  # the connection's task waits for bytes
        self.writing_paused = False
        self.draining = False  # the server shuts down: the lane takes nothing new
        self.discarding = False  # the connection ends: what still arrives is dropped
        self._waiter: asyncio.Future[None] | None = None
        self._reading_paused = False
        transport.set_protocol(self)
        # Bytes that reached the stream reader before this port took over (the client
        # may send its startup packet before the connection's task first runs).
        early = reader._buffer  # noqa: SLF001 - no public way to take them without awaiting
        if early:
            decoder.feed(bytes(early))
            early.clear()
        if reader.at_eof():
            self.eof = True

    def use_transport(self, transport: asyncio.Transport) -> None:
        """Read and write through `transport` from now on (the TLS transport that took
        over the socket after SSLRequest; it calls this port's callbacks already)."""
        self.transport = transport
        self.tls = True

    def send(self, data: bytes) -> None:
        """`data` to the client, unless its socket is closing (the express lane's answers)."""
        transport = self.transport
        if not transport.is_closing():
            transport.write(data)

    @property
    def idle(self) -> bool:
        """The session waits for the client with nothing left to decode."""
        return (self.waiting and not self.eof and self.decoder.buffered == 0
                and not self.draining)

    # --- callbacks -----------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.discarding:
            return
        lane = self.lane
        if lane is not None:
            try:
                if lane.offer(data):  # (which called `consumed()`)
                    return
            except Exception:  # a bug of ours: this connection stays on the task's road
                log.exception("express lane failed; the session carries on without it")
                self.lane = lane.state.lane = None
        self.feed(data)

    def feed(self, data: bytes) -> None:
        """Hand bytes to the connection's task (the lane does, for what it declines)."""
        if self.lane is not None:
            self.lane.disarm()
        self.decoder.feed(data)
        self._update_reading()
        self._wake()

    def consumed(self) -> None:
        """The lane ran or handed on what it held: read again if we stopped for it."""
        self._update_reading()

    def _update_reading(self) -> None:
        """Stop reading while too much waits for the session; read again once it is not.
        What the decoder holds of a large message being received counts only beyond what
        the message took from the budget: it cannot be handed out before its last byte
        is read."""
        decoder = self.decoder
        lane = self.lane
        if (not self._reading_paused and not self._taken and not decoder.buffered
                and (lane is None or not lane.held)):
            return  # nothing waits (the express lane's case after every statement)
        awaited = decoder.awaited
        if self._taken and self._taken != awaited:  # that message is whole (or gone)
            self._give_back()
        limit = HIGH_WATER + self._taken
        if awaited > LARGE_MESSAGE and not self._taken and not self.eof:
            if self.budget.take(awaited):
                self._taken = awaited
                limit = HIGH_WATER + awaited
            else:  # the rest of it waits for room in the budget
                limit = LARGE_MESSAGE
                if not self._budget_waited:
                    self._budget_waited = True
                    self.budget.wait(self._budget_freed)
        held = lane.held_bytes if lane is not None else 0
        over = held > HIGH_WATER or decoder.buffered > limit
        if over != self._reading_paused and not self.transport.is_closing():
            self._reading_paused = over
            if over:
                self.transport.pause_reading()
            else:
                self.transport.resume_reading()

    def _budget_freed(self) -> None:
        self._budget_waited = False
        self._update_reading()

    def _give_back(self) -> None:
        taken, self._taken = self._taken, 0
        if taken:
            self.budget.give(taken)

    def eof_received(self) -> bool:
        """The client shut its side of the socket, or closed it: the two look the same.
        With statements sent and not yet run (pipelined ahead of a half-close), they are
        run and answered, as PostgreSQL does, and the socket stays open until the
        decoder holds no more of them. Otherwise the client is taken as gone: the
        transport closes and the statement running, if any, is cancelled (a gone
        client's Spark job stops), as PostgreSQL does with client_connection_check_interval.
        (TLS has no half-close: its transport closes regardless.)"""
        if not self.tls and self._work_pending():
            self.half_closed = self.eof = True
            lane = self.lane
            if lane is not None:
                lane.disarm()
                if lane.exchange is not None:
                    # The end of file waits behind the lane's statement in flight, as
                    # bytes arriving meanwhile do: at its end the lane hands what it
                    # holds (this empty chunk at least) to the task, which wakes.
                    lane.held.append(b"")
            self._wake()
            return True
        self._ended()
        return False

    def _work_pending(self) -> bool:
        lane = self.lane
        return self.decoder.holds_work() or (
            lane is not None and bool(lane.held) and asks_for_work(b"".join(lane.held)))

    @property
    def finished(self) -> bool:
        """The client sent its last byte and nothing of it is left to run by the lane:
        once the decoder holds no more messages, the session ends."""
        return self.eof and not (self.half_closed and self.lane is not None
                                 and self.lane.exchange is not None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended()
        self._give_back()
        if self.on_lost is not None:
            self.on_lost()
        if self.lane is not None:
            self.lane.client_lost()
        self.inner.connection_lost(exc)  # wakes a writer waiting in drain()

    def pause_writing(self) -> None:
        self.writing_paused = True
        self.inner.pause_writing()  # type: ignore[attr-defined]
        if self.lane is not None:
            self.lane.client_paused(True)

    def resume_writing(self) -> None:
        self.writing_paused = False
        self.inner.resume_writing()  # type: ignore[attr-defined]
        if self.lane is not None:
            self.lane.client_paused(False)

    def _ended(self) -> None:
        self.eof = True
        if self.lane is not None:
            self.lane.disarm()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the task's side -----------------------------------------------------------------

    async def linger(self, seconds: float) -> None:
        """Drop what the client still sends, until it closes or `seconds` pass. A client
        cut off mid-message (one over the size limit) is still writing it: closing the
        socket with its bytes unread would reset the connection, and the client would
        lose the error it was sent. (Nor is our side half-closed first: libpq, reading
        while it writes, would report the end of file instead of the error.)"""
        self.discarding = True
        self.lane = None
        self._give_back()
        if self._reading_paused:
            self._reading_paused = False
            self.transport.resume_reading()
        try:
            async with asyncio.timeout(seconds):
                while not self.eof:
                    await self.wait()
        except TimeoutError:
            pass  # it did not close in time: the socket is closed all the same

    async def wait(self) -> None:
        """Return once more bytes were fed, or the client went away (or `interrupt`).

        The caller found no complete message in the decoder, so whatever it holds is part
        of the message being received: reading goes on (a paused socket would also never
        see the client leave)."""
        self._update_reading()
        if self.finished:
            return
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        self.waiting = True
        try:
            await waiter
        finally:
            self.waiting = False
            self._waiter = None
            if self.lane is not None:  # the session's task acts: the lane's repeats wait
                self.lane.disarm()
