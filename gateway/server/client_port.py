"""The client's socket read by callbacks: bytes go to the express lane or to the decoder.

The connection's task reads messages from the decoder and waits on `wait()` when it has
none. While it waits with nothing buffered, the session is idle, and a chunk that holds
a statement the express lane (`gateway.relay.express`) can relay is answered right here, in
the callback, without waking the task. Every other chunk is fed to the decoder, in
order. The stream protocol this replaces stays behind it for the writing side, so
`StreamWriter.drain()` and `wait_closed()` keep working.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pgwire.protocol.decoder import FrontendDecoder

if TYPE_CHECKING:
    from gateway.relay.express import ExpressLane

log = logging.getLogger("fedgate.connection")

# Undecoded bytes above this (a fast COPY FROM STDIN) stop reading from the socket until
# the session catches up: the client waits, instead of our memory growing.
HIGH_WATER = 4 * 1024 * 1024


class ClientPort(asyncio.Protocol):
    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.Transport,
                 decoder: FrontendDecoder) -> None:
        self.transport = transport
        self.inner = transport.get_protocol()
        self.decoder = decoder
        self.lane: ExpressLane | None = None
        self.on_lost: Callable[[], None] | None = None  # the session's cancel, once it runs
        self.eof = False
        self.waiting = False  # the connection's task waits for bytes
        self.writing_paused = False
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

    @property
    def idle(self) -> bool:
        """The session waits for the client with nothing left to decode."""
        return self.waiting and not self.eof and self.decoder.buffered == 0

    # --- callbacks -----------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        lane = self.lane
        if lane is not None:
            try:
                if lane.offer(data):
                    return
            except Exception:  # a bug of ours: this connection stays on the task's road
                log.exception("express lane failed; the session carries on without it")
                self.lane = lane.session.lane = None
        self.feed(data)

    def feed(self, data: bytes) -> None:
        """Hand bytes to the connection's task (the lane does, for what it declines)."""
        self.decoder.feed(data)
        if self.decoder.buffered > HIGH_WATER and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._ended()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended()
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
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the task's side -----------------------------------------------------------------

    async def wait(self) -> None:
        """Return once more bytes were fed, or the client went away."""
        if self._reading_paused and self.decoder.buffered < HIGH_WATER // 4:
            self._reading_paused = False
            self.transport.resume_reading()
        if self.eof:
            return
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        self.waiting = True
        try:
            await waiter
        finally:
            self.waiting = False
            self._waiter = None
