"""A worker's accept loop on the shared listening socket, keeping the workers balanced.

Clients such as pgbench or a connection pool open a handful of long-lived connections at
once; whichever worker wakes first would take most of them (the kernel's SO_REUSEPORT
hash is no better), and one worker would then be the bottleneck while another idles.
So every worker publishes its number of open client connections in a shared array, and
one that accepts a connection while another worker has fewer passes the socket to that
worker (SCM_RIGHTS over the other's private datagram socket) before reading a byte from
it. The receiver serves what it is given without passing it on, so a connection moves
at most once; when the hand-over fails (the other worker is restarting) the connection
is served where it landed.
"""

from __future__ import annotations

import array
import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Self

log = logging.getLogger("fedgate.workers")

BACKLOG = 1024
Accept = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass(frozen=True)
class WorkerSpec:
    """What one worker needs besides the config: who it is and where its peers are
    (made by the supervisor, gateway.server.workers)."""

    index: int
    count: int
    runtime_dir: str  # private directory of the cancel sockets
    sock: socket.socket  # the listening socket the parent bound
    supervisor_pid: int
    loads: Any  # multiprocessing RawArray("i", count): open client connections per worker


def handoff_socket_path(runtime_dir: str, index: int) -> str:
    return os.path.join(runtime_dir, f"handoff-{index}.sock")


class BalancedListener:
    """Accepts on `spec.sock`, serves each connection with `accept(reader, writer)`."""

    def __init__(self, spec: WorkerSpec, accept: Accept) -> None:
        self.spec = spec
        self.accept = accept
        self.loads = spec.loads  # shared: open client connections per worker
        self.inbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.outbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._accepting: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        path = handoff_socket_path(self.spec.runtime_dir, self.spec.index)
        if os.path.exists(path):  # left by this worker's predecessor
            os.unlink(path)
        self.inbox.bind(path)
        self.inbox.setblocking(False)
        self.outbox.setblocking(False)
        self.loads[self.spec.index] = 0
        loop = asyncio.get_running_loop()
        loop.add_reader(self.inbox.fileno(), self._adopt)
        self.spec.sock.listen(BACKLOG)  # the first worker to get here opens the port
        self._accepting = asyncio.ensure_future(self._accept_loop())

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(self.spec.sock)
            except OSError as exc:  # out of file descriptors and the like: breathe, go on
                log.error("accept failed: %s", exc)
                await asyncio.sleep(0.1)
                continue
            target = self._lighter()
            if target is None or not self._hand_off(conn, target):
                self._serve(conn)

    def _lighter(self) -> int | None:
        """The worker with the fewest connections, if it has fewer than this one."""
        mine = self.loads[self.spec.index]
        target = min(range(self.spec.count), key=self.loads.__getitem__)
        return target if self.loads[target] < mine else None

    def _hand_off(self, conn: socket.socket, target: int) -> bool:
        try:
            # (socket.send_fds would drop the address: sendmsg it is.)
            self.outbox.sendmsg([b"c"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                          array.array("i", [conn.fileno()]))],
                               0, handoff_socket_path(self.spec.runtime_dir, target))
        except OSError as exc:  # it is restarting, or its inbox is full: serve it here
            log.info("could not hand a connection to worker %d (%s); serving it here", target, exc)
            return False
        conn.close()  # the other worker holds the connection now
        return True

    def _adopt(self) -> None:
        while True:
            try:
                _, fds, _, _ = socket.recv_fds(self.inbox, 16, 8)
            except BlockingIOError:
                return
            for fd in fds:
                self._serve(socket.socket(fileno=fd))

    def _serve(self, conn: socket.socket) -> None:
        self.loads[self.spec.index] += 1  # now, so that the next accept sees it
        task = asyncio.ensure_future(self._run(conn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, conn: socket.socket) -> None:
        try:
            conn.setblocking(False)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as asyncio's own server
            reader, writer = await asyncio.open_connection(sock=conn)
            await self.accept(reader, writer)
        except OSError as exc:  # the client left before we started
            log.debug("connection lost before it was served: %s", exc)
            conn.close()
        finally:
            self.loads[self.spec.index] -= 1

    def close(self) -> None:
        if self.inbox.fileno() == -1:
            return  # closed already
        if self._accepting is not None:
            self._accepting.cancel()
            # This worker's copy of the listening socket, once nothing waits on it: with
            # the supervisor's and the other workers' copies closed too, connects are
            # refused instead of queueing where no one accepts (shutdown).
            self._accepting.add_done_callback(lambda _: self.spec.sock.close())
        asyncio.get_running_loop().remove_reader(self.inbox.fileno())
        self.inbox.close()
        self.outbox.close()

    async def wait_closed(self) -> None:
        if self._accepting is not None:
            await asyncio.gather(self._accepting, return_exceptions=True)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
        await self.wait_closed()
