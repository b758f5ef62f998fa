"""A link's socket read by callbacks: bytes go straight into the link's message buffer.

asyncio's StreamReader copies each chunk once more and wakes a task per chunk. A link
(`connectors.postgres.link`) reads through this protocol instead: a coroutine that needs more
bytes awaits `wait()`, and an express exchange (`gateway.relay.express`) is fed inside the
callback itself, so a relayed statement's answer reaches the client without a task
switch. The stream protocol it replaces stays behind it for the writing side, so
`StreamWriter.drain()` and `wait_closed()` keep working.

While a relayed result streams, the link opens a pipe to the client (`pipe`): the run of
whole DataRows at the head of each chunk is written to the client's transport right here,
as a slice of the chunk received (no copy, no task switch), and only what follows the
run (the end of the result, an error, a row cut by the chunk's end) is left to the
coroutine. A client that reads slowly fills its transport's buffer; above
CLIENT_HIGH_WATER reading from the source pauses until the coroutine has drained it.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

from pgwire.protocol.client import BackendReader, data_rows_end

_U32 = struct.Struct("!I")
# Unread bytes above this stop reading from the socket until a reader catches up: the
# source then waits, instead of our memory growing (StreamReader's limit did this before).
HIGH_WATER = 1024 * 1024
# Bytes waiting in the client's transport above this pause reading from the source (a
# passed-through result); the coroutine resumes it once the client has caught up.
CLIENT_HIGH_WATER = 1024 * 1024
# The reason `pause` is given for a client that reads slower than the source sends.
SLOW_CLIENT = "slow client"


class LinkPort(asyncio.Protocol):
    def __init__(self, transport: asyncio.Transport, wire: BackendReader) -> None:
        self.transport = transport
        self.inner = transport.get_protocol()
        self.wire = wire
        self.eof = False
        # Called after every chunk while an express exchange owns the link.
        self.consumer: Callable[[], None] | None = None
        # Given every chunk instead, while the express lane's repeats own the link
        # (gateway.relay.express.memory): they feed the reader themselves (`consumer` is set too).
        self.taker: Callable[[bytes], None] | None = None
        # The client's side while a relayed result streams: DataRows go straight to it.
        self.pipe: asyncio.WriteTransport | None = None
        self._waiter: asyncio.Future[None] | None = None
        # Why reading is paused ("client": the client reads slower); read by the lane's
        # repeats, which resume a paused link at a statement's end.
        self.paused_by: set[str] = set()
        transport.set_protocol(self)

    def attach(self, consumer: Callable[[], None], taker: Callable[[bytes], None] | None = None) -> None:
        """An express exchange owns the link now: `consumer` after every chunk, or
        `taker` given every chunk instead (the lane's repeats)."""
        self.consumer = consumer
        self.taker = taker

    def detach(self) -> None:
        """The express exchange is over: chunks go to the buffer and the coroutine."""
        self.consumer = None
        self.taker = None

    def release(self) -> None:
        """The express lane's repeat is over (`detach`), and reading goes on if a client
        that read slower than the source sent had paused it."""
        self.detach()
        if self.paused_by:
            self.resume("client")

    def write(self, data: bytes) -> None:
        """`data` to the source (the express lane's requests)."""
        self.transport.write(data)

    def at_eof(self) -> bool:
        """The source hung up: nothing more comes."""
        return self.eof

    # --- callbacks -----------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        taker = self.taker
        if taker is not None:
            taker(data)
            return
        consumer = self.consumer
        if consumer is not None:
            self.wire.feed(data)
            consumer()
            return
        pipe = self.pipe
        if pipe is not None:
            data = self._pass_rows(pipe, data)
            if pipe.get_write_buffer_size() > CLIENT_HIGH_WATER or pipe.is_closing():
                # (a client gone: the coroutine's drain() raises, ending the relay)
                self.pause(SLOW_CLIENT)
                self._wake()
            if not data:
                return
        wire = self.wire
        wire.feed(data)
        if pipe is not None and wire.unread_row_missing():
            return  # a row cut by the chunk's end: the next chunk completes it, here
        if len(wire.buffer) - wire.pos > HIGH_WATER:
            self.pause("unread")
        self._wake()

    def _pass_rows(self, pipe: asyncio.WriteTransport, data: bytes) -> bytes | memoryview:
        """Write the whole DataRows at the head of `data` to the client; returns the rest.

        Only when everything before this chunk is consumed: a row the previous chunk cut
        short (its header too, perhaps) is completed from this one first; anything else
        unread is the coroutine's to handle, in order, so then nothing is passed here.
        (A chunk ending inside a row's 5-byte header is common: about one in seven for
        short rows. Left to the coroutine, the next chunk would cost a wake-up and two
        copies.)"""
        wire = self.wire
        start = 0
        missing = wire.unread_row_missing()
        if missing:
            have = len(wire.buffer) - wire.pos
            if have < 5:  # the row's header was cut too: this chunk's head holds its length
                header = bytes(wire.buffer[wire.pos:]) + data[:missing]
                if len(header) < 5:
                    return data  # a chunk shorter still: gathered in the buffer
                missing = 1 + _U32.unpack_from(header, 1)[0] - have
                if missing <= 0:
                    return data  # a length below 4: the coroutine reports the violation
            if missing > len(data):
                return data  # a row longer than this chunk: gathered in the buffer
            head = bytes(wire.buffer[wire.pos:]) + data[:missing]
            wire.pos = len(wire.buffer)
        elif wire.pos != len(wire.buffer):
            return data
        else:
            head = b""
        start = missing
        stop = data_rows_end(data, start)
        view = memoryview(data)
        if stop == start:
            if head:
                pipe.write(head)
            return view[start:] if start else data
        run = data if start == 0 and stop == len(data) else view[start:stop]
        if head:
            pipe.writelines((head, run))  # one send for the completed row and the run
        else:
            pipe.write(run)
        return view[stop:] if stop < len(data) else b""

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
        if not self.paused_by and not self.transport.is_closing():
            self.transport.pause_reading()
        self.paused_by.add(reason)

    def paused_for(self, reason: str) -> bool:
        return reason in self.paused_by

    def resume(self, reason: str) -> None:
        if reason not in self.paused_by:
            return
        self.paused_by.discard(reason)
        if not self.paused_by and not self.transport.is_closing():
            self.transport.resume_reading()
