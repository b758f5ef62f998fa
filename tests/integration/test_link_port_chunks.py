"""A relayed result cut into chunks at every awkward place reaches the client unchanged.

The link's socket callback (connectors/postgres/port.py) passes runs of DataRows to the
client's transport and completes a row the previous chunk cut short, its 5-byte header
included. Here a stand-in source writes a canned answer over a real TCP socket in chunks
cut inside a row's header, inside its body and right after it (one chunk at a time, each
read before the next is sent), and a real TCP client reads what the pipe passes: the rows
arrive byte for byte and in order, and what follows them is left in the link's buffer for
the coroutine, which is woken only for that.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

from connectors.postgres.port import LinkPort
from pgwire.protocol.client import BackendReader


def row(payload: bytes) -> bytes:
    return b"D" + struct.pack("!I", 4 + len(payload)) + payload


ROWS = b"".join(row(b"\x00\x01\x00\x00\x00\x03r%02d" % i) for i in range(12))
AFTER = b"C\0\0\0\x0dSELECT 9\0" + b"Z\0\0\0\x05I"
SIZE = len(row(b"\x00\x01\x00\x00\x00\x03r00"))  # every row is this long


def cuts() -> list[tuple[int, ...]]:
    """Chunk boundaries: inside the 2nd row's header at each offset, inside its body, at
    its end, and two cuts within one header (a chunk of 2 bytes)."""
    second = SIZE
    found = [(second + k,) for k in range(1, 5)]  # inside the header
    found += [(second + 7,), (second + SIZE,), (second + 1, second + 3), (second + 2, second + 9)]
    return found


@pytest.mark.parametrize("boundaries", cuts())
async def test_rows_cut_anywhere_pass_unchanged(boundaries: tuple[int, ...]) -> None:
    stream = ROWS + AFTER
    piped, done = asyncio.Event(), asyncio.Event()

    async def source(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await piped.wait()  # as after a RowDescription: the pipe is open before the rows
        at = 0
        for cut in (*boundaries, len(stream)):
            writer.write(stream[at:cut])
            await writer.drain()
            await asyncio.sleep(0.05)  # read on its own before the next chunk is sent
            at = cut
        await done.wait()
        writer.close()

    accepted: asyncio.Future[asyncio.StreamReader] = asyncio.get_running_loop().create_future()

    def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(reader)

    server = await asyncio.start_server(source, "127.0.0.1", 0)
    client_server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    try:
        _, link_writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
        wire = BackendReader()
        link = LinkPort(link_writer.transport, wire)  # type: ignore[arg-type]
        # The client's socket: the pipe writes to our end, the client reads the other.
        _, pipe_writer = await asyncio.open_connection(*client_server.sockets[0].getsockname()[:2])
        client = await asyncio.wait_for(accepted, 10)
        link.pipe = pipe_writer.transport  # type: ignore[assignment]
        piped.set()
        wakes = 0
        while bytes(wire.buffer[wire.pos:]) != AFTER:
            assert wakes < 1, f"woken for {bytes(wire.buffer[wire.pos:])!r}, not for the end"
            await asyncio.wait_for(link.wait(), 10)
            wakes += 1
        # The rows went to the client, unchanged; the coroutine sees only what follows.
        assert await asyncio.wait_for(client.readexactly(len(ROWS)), 10) == ROWS
        done.set()
        link_writer.close()
        pipe_writer.close()
    finally:
        server.close()
        client_server.close()
