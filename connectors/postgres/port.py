"""A link's socket read by callbacks: bytes go straight into the link's message buffer.

asyncio's StreamReader copies each chunk once more and wakes a task per chunk. A link
(`connectors.postgres.link`) reads through this protocol instead: a coroutine that needs more
bytes awaits `wait()`, and an express exchange (`gateway.relay.express`) is fed inside the
callback itself, so a relayed statement's answer reaches the client without a task
switch. The stream protocol it replaces stays behind it for the writing side, so
`StreamWriter.drain()` and `wait_closed()` keep working.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pgwire.protocol.client import BackendReader

# Unread bytes above this stop reading from the socket until a reader catches up: the
# source then waits, instead of our memory growing (StreamReader's limit did this before).
HIGH_WATER = 1024 * 1024


class LinkPort(asyncio.Protocol):
    def __init__(self, transport: asyncio.Transport, wire: BackendReader) -> None:
        self.transport = transport
        self.inner = transport.get_protocol()
        self.wire = wire
        self.eof = False
        # Called after every chunk while an express exchange owns the link.
        self.consumer: Callable[[], None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused: set[str] = set()
        transport.set_protocol(self)

    # --- callbacks -----------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        self.wire.feed(data)
        consumer = self.consumer
        if consumer is not None:
            consumer()
            return
        if len(self.wire.buffer) - self.wire.pos > HIGH_WATER:
            self.pause("unread")
        self._wake()

    def eof_received(self) -> bool:
        self._ended()
        return False  # close our side too: a source that hung up sends nothing more

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended()
        self.inner.connection_lost(exc)  # wakes a writer waiting in drain()

    def pause_writing(self) -> None:
        self.inner.pause_writing()  # type: ignore[attr-defined]

    def resume_writing(self) -> None:
        self.inner.resume_writing()  # type: ignore[attr-defined]

    def _ended(self) -> None:
        if self.eof:
            return
        self.eof = True
        self._wake()
        if self.consumer is not None:
            self.consumer()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the coroutine side --------------------------------------------------------------

    async def wait(self) -> None:
        """Return once more bytes are in the buffer, or the connection ended."""
        self.resume("unread")  # the reader consumed what it had
        if self.eof:
            return
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def pause(self, reason: str) -> None:
        if not self._paused and not self.transport.is_closing():
            self.transport.pause_reading()
        self._paused.add(reason)

    def resume(self, reason: str) -> None:
        if reason not in self._paused:
            return
        self._paused.discard(reason)
        if not self._paused and not self.transport.is_closing():
            self.transport.resume_reading()
