"""A bare TCP byte relay on the gateway's event loop: the floor for any Python proxy.

    python tests/bench/bare_relay.py LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT

Every client connection gets its own upstream connection, and bytes are passed on as they
arrive, both ways: no message is parsed, nothing is routed, checked or rewritten. The
gateway does strictly more per statement (it must read each message to route it), so what
this relay reaches in bench_pgbench.py bounds what any gateway written in Python on the
same event loop can reach on the same machine. Writing is flow-controlled: when one side's
send buffer fills, reading from the other side pauses, so a slow reader does not grow
memory. Listens on 127.0.0.1 only. This is a benchmark tool, not a test and not a product
component.
"""

from __future__ import annotations

import asyncio
import sys

try:  # the loop the gateway runs on (gateway/server/listener.py), when installed
    import uvloop
except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
    uvloop = None


class Side(asyncio.Protocol):
    """One socket of a relayed pair: what it reads goes to the other side's transport."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: Side | None = None
        self.early: list[bytes] = []  # read before the upstream connection was made

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def join(self, peer: "Side") -> None:
        self.peer, peer.peer = peer, self
        for chunk in self.early:
            peer.transport.write(chunk)
        self.early.clear()

    def data_received(self, data: bytes) -> None:
        if self.peer is None:
            self.early.append(data)
        else:
            self.peer.transport.write(data)

    def pause_writing(self) -> None:  # our send buffer is full: stop reading the other side
        if self.peer is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None:
            self.peer.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()


async def serve(listen_port: int, upstream_host: str, upstream_port: int) -> None:
    loop = asyncio.get_running_loop()

    class Client(Side):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            loop.create_task(self.connect())

        async def connect(self) -> None:
            try:
                _, upstream = await loop.create_connection(Side, upstream_host, upstream_port)
            except OSError:
                self.transport.close()
                return
            self.join(upstream)

    server = await loop.create_server(Client, "127.0.0.1", listen_port)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    coroutine = serve(int(argv[0]), argv[1], int(argv[2]))
    if uvloop is not None:
        uvloop.run(coroutine)
    else:
        asyncio.run(coroutine)


if __name__ == "__main__":
    main(sys.argv[1:])
