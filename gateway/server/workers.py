"""Several gateway worker processes sharing one port (`[server] workers = N`).

One gateway process is pure Python on one core; workers multiply that. The parent
(`supervise`) binds the listening socket once, without SO_REUSEPORT, and starts N workers
with multiprocessing's "spawn" method (never fork: nothing of the parent's interpreter,
threads or DuckDB state is copied). Each worker inherits the socket and runs today's
`serve()` with its own sources, catalog, engines and plan cache; the Spark session stays
lazy, so an idle worker costs nothing there.

Why one shared socket rather than one SO_REUSEPORT socket per worker: a second gateway
started by mistake on the same port fails with "address in use" instead of silently
joining the kernel's load balancing (SO_REUSEPORT only asks for the same user), and the
connections queued on a worker that dies are not lost with its socket. Neither balances
a few long-lived connections: 8 pgbench clients over 2 workers, six trials each, split
4/4 twice, 3/5 three times and 1/7 once on the shared socket, and 3/5 four times and 2/6
twice with SO_REUSEPORT's 4-tuple hash. So a worker that accepts a connection while
another has fewer hands it over (gateway/server/worker_listen.py): 4/4 in six trials out of
six. The parent binds but does not listen: the first worker that serves calls listen(),
so no client waits in a backlog nobody accepts from. `max_connections` applies per
worker, as does each source's `pool_size`.

CancelRequest: a backend pid encodes its worker (`pid % count == index`, see
`ServerContext.next_pid`). A CancelRequest that lands on another worker is forwarded, as
the same 16-byte packet, to the owner's private unix socket in a 0700 directory of the
parent's; the owner checks the key in constant time, exactly as for a local one.

Catalog: each worker reads its sources' tables on its own: periodically, after DDL, and
whenever a statement names a table it does not know (before answering 42P01). A worker
that relayed DDL tells the others over the same private sockets (`CatalogAnnouncer`) and
waits for their answers before the client hears CommandComplete, so a table dropped and
re-created with another shape through one worker is never planned with its old shape by
another.

Supervision: SIGTERM/SIGINT stop every worker: the supervisor forwards SIGTERM and each
worker drains its sessions (gateway/server/shutdown.py) within `shutdown_timeout_s`; a
second signal is forwarded too, and ends the sessions at once; SIGKILL comes only after
the timeout and a grace period. Workers ignore SIGINT themselves: a terminal's Ctrl-C
reaches the whole process group, and only the supervisor counts it. A worker that dies
after it started serving is logged and restarted, with a growing delay when it keeps
dying young; a worker that dies before it ever served on the first start (a
configuration error, an unreachable file) stops the whole gateway with that worker's
exit code, so there is no restart loop.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gateway.config import Config, ConfigError, connect_command, listen_error
from pgwire.errors import PgError
from gateway.server.loop import run_loop
from gateway.server.worker_listen import Accept, BalancedListener, WorkerSpec
from gateway.state import logs
from gateway.state.context import ServerContext

if TYPE_CHECKING:
    from multiprocessing.connection import Connection as PipeEnd
    from multiprocessing.process import BaseProcess

log = logging.getLogger("fedgate.workers")

# gateway.server.listener.serve: what each worker process runs.
Serve = Callable[..., Coroutine[object, object, None]]

CANCEL_REQUEST_CODE = 80877102
# Between workers only: "DDL ran through me" (a code no client packet uses), and its answer.
CATALOG_CHANGED_CODE = 0x46474343
CATALOG_CHANGED_ACK = b"k"
ANNOUNCE_TIMEOUT_S = 2.0
STOP_GRACE_S = 10.0  # SIGTERM, then SIGKILL
YOUNG_S = 10.0  # a worker that dies younger than this counts as failing to start
MAX_YOUNG_DEATHS = 5  # in a row, for one worker slot: give up
PR_SET_PDEATHSIG = 1


def cancel_socket_path(runtime_dir: str, index: int) -> str:
    return os.path.join(runtime_dir, f"cancel-{index}.sock")


def pid_owner(pid: int, count: int) -> int:
    return pid % count


# ---------------------------------------------------------------------------- in a worker


async def listen(spec: WorkerSpec, accept: Accept) -> BalancedListener:
    """Serve client connections on the socket inherited from the parent."""
    listener = BalancedListener(spec, accept)
    await listener.start()
    return listener


async def serve_peers(ctx: ServerContext, spec: WorkerSpec) -> asyncio.Server:
    """This worker's private socket, where the other workers send what concerns it: a
    CancelRequest for one of its pids, or word that DDL ran through them (answered with
    one byte once this worker's catalog is marked stale)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            packet = await asyncio.wait_for(reader.readexactly(16), 5.0)
            length, code, pid, key = struct.unpack("!IIII", packet)
            ours = pid_owner(pid, spec.count) == spec.index
            if length == 16 and code == CATALOG_CHANGED_CODE:
                ctx.note_catalog_change()
                writer.write(CATALOG_CHANGED_ACK)
                await writer.drain()
            elif length == 16 and code == CANCEL_REQUEST_CODE and ours:
                ctx.cancel(pid, key)
            else:
                log.warning("worker %d: malformed message from another worker ignored", spec.index)
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            pass  # the sending worker went away; it no longer waits for an answer
        finally:
            writer.close()

    path = cancel_socket_path(spec.runtime_dir, spec.index)
    return await asyncio.start_unix_server(handle, path=path)


@dataclass
class CatalogAnnouncer:
    """Tells every other worker that DDL ran through this one, and waits until each has
    marked its catalog stale (so a client that goes on on another connection, hence maybe
    another worker, finds the change). A worker that does not answer within
    `ANNOUNCE_TIMEOUT_S` is restarting or stuck: it is logged and not waited for; its
    statements that name a table it lacks still read the sources again first
    (`ServerContext.recheck_missing`), and its periodic refresh catches the rest."""

    spec: WorkerSpec

    async def __call__(self) -> None:
        others = [i for i in range(self.spec.count) if i != self.spec.index]
        await asyncio.gather(*(self._tell(index) for index in others))

    async def _tell(self, index: int) -> None:
        path = cancel_socket_path(self.spec.runtime_dir, index)
        writer = None
        try:
            async with asyncio.timeout(ANNOUNCE_TIMEOUT_S):
                reader, writer = await asyncio.open_unix_connection(path)
                writer.write(struct.pack("!IIII", 16, CATALOG_CHANGED_CODE, 0, 0))
                await writer.drain()
                await reader.readexactly(len(CATALOG_CHANGED_ACK))
        except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            log.warning("could not tell worker %d that the catalog changed: %s", index,
                        exc or type(exc).__name__)
        finally:
            if writer is not None:
                writer.close()


@dataclass
class CancelForwarder:
    """Sends a CancelRequest to the worker that owns its pid (fire and forget, as the
    protocol's CancelRequest itself is: the client gets no answer either way)."""

    spec: WorkerSpec
    _tasks: set[asyncio.Task] = field(default_factory=set)

    def __call__(self, owner: int, pid: int, key: int) -> None:
        task = asyncio.ensure_future(self._send(owner, pid, key))
        self._tasks.add(task)  # a reference, so the task is not collected mid-flight
        task.add_done_callback(self._tasks.discard)

    async def _send(self, owner: int, pid: int, key: int) -> None:
        path = cancel_socket_path(self.spec.runtime_dir, owner)
        try:
            _, writer = await asyncio.wait_for(asyncio.open_unix_connection(path), 5.0)
            writer.write(struct.pack("!IIII", 16, CANCEL_REQUEST_CODE, pid, key & 0xFFFFFFFF))
            await writer.drain()
            writer.close()
            await writer.wait_closed()
            log.info("cancel request for pid %d forwarded to worker %d", pid, owner)
        except (OSError, TimeoutError) as exc:  # the owner is restarting: its sessions are gone
            log.warning("could not forward a cancel request to worker %d: %s", owner, exc)


def _die_with_parent() -> None:
    """Linux: the kernel sends us SIGTERM when the supervisor dies, even by SIGKILL, so
    workers never outlive it. Elsewhere the supervisor's own shutdown has to do."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def worker_main(config: Config, spec: WorkerSpec, ready: PipeEnd, serve: Serve) -> None:
    """The entry point of a spawned worker process: `serve` is the listener's
    (gateway.server.listener.serve), passed in by the process that called `supervise`."""
    _die_with_parent()
    logs.configure(config.server.log_format, f"worker {spec.index}")
    if os.getppid() != spec.supervisor_pid:  # it died before prctl took effect
        sys.exit(1)
    # Ctrl-C in a terminal reaches every process of the group: only the supervisor counts
    # it, and forwards SIGTERM (a second Ctrl-C, a second SIGTERM).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    def on_ready() -> None:
        ready.send(b"ready")
        ready.close()

    try:
        run_loop(serve(config, worker=spec, on_ready=on_ready))
    except ConfigError as exc:
        print(f"fedgate: configuration error: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
    except PgError as exc:
        print(f"fedgate: ERROR {exc.sqlstate}: {exc.message}", file=sys.stderr, flush=True)
        sys.exit(1)


# ---------------------------------------------------------------------------- the parent


@dataclass
class _Slot:
    index: int
    proc: BaseProcess | None = None
    ready_end: PipeEnd | None = None
    started: float = 0.0
    served: bool = False  # this process reported that it listens
    ever_served: bool = False  # some process in this slot did
    young_deaths: int = 0
    restart_at: float | None = None


def _bind(config: Config) -> socket.socket:
    """The one listening socket every worker accepts on (no SO_REUSEPORT: a second
    gateway on the same port must fail, not share it)."""
    host, port = config.server.host, config.server.port
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio does
        # Bound (the port is ours) but not listening: the first worker that serves calls
        # listen(), so nobody connects before a worker can answer.
        sock.bind(address)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise listen_error(config, exc) from exc
    return sock


class Supervisor:
    def __init__(self, config: Config, serve: Serve) -> None:
        self.config = config
        self.serve = serve
        self.count = config.server.workers
        self.mp = multiprocessing.get_context("spawn")
        self.slots = [_Slot(i) for i in range(self.count)]
        self.loads = self.mp.RawArray("i", self.count)
        self.stopping = False
        self.runtime_dir = ""
        self.sock: socket.socket | None = None

    def _start(self, slot: _Slot) -> None:
        assert self.sock is not None
        spec = WorkerSpec(slot.index, self.count, self.runtime_dir, self.sock, os.getpid(),
                          self.loads)
        reader, writer = self.mp.Pipe(duplex=False)
        proc = self.mp.Process(target=worker_main, args=(self.config, spec, writer, self.serve),
                               name=f"fedgate-worker-{slot.index}", daemon=False)
        proc.start()
        writer.close()  # the child has its copy; ours would hide the child's end of file
        slot.proc, slot.ready_end, slot.started = proc, reader, time.monotonic()
        slot.served, slot.restart_at = False, None
        log.info("worker %d started (pid %d)", slot.index, proc.pid)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        if self.stopping:  # a second signal: the workers end their sessions now
            self._terminate_workers()
        self.stopping = True

    def _on_reload(self, signum: int, _frame: Any) -> None:
        """SIGHUP: each serving worker re-reads the TLS certificate and key. A worker still
        starting reads the files anyway, and has no SIGHUP handler yet."""
        for slot in self.slots:
            if slot.served and slot.proc is not None and slot.proc.pid is not None:
                try:
                    os.kill(slot.proc.pid, signal.SIGHUP)
                except ProcessLookupError:
                    pass  # it just exited; _check_exit restarts it with the new files

    def _terminate_workers(self) -> list[BaseProcess]:
        running = [s.proc for s in self.slots if s.proc is not None and s.proc.is_alive()]
        for proc in running:
            proc.terminate()
        return running

    def run(self) -> int:
        self.sock = _bind(self.config)
        self.runtime_dir = tempfile.mkdtemp(prefix="fedgate-")  # mode 0700
        wake_r, wake_w = socket.socketpair()
        wake_w.setblocking(False)
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGTERM, signal.SIGINT)}
        # Always handled: a reload signal must never end the supervisor (without TLS the
        # workers only log that there is nothing to re-read).
        previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, self._on_reload)
        old_fd = signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
        try:
            for slot in self.slots:
                self._start(slot)
            return self._loop(wake_r)
        finally:
            self._stop_all()  # a second signal meanwhile is forwarded (_on_signal)
            signal.set_wakeup_fd(old_fd)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            wake_r.close()
            wake_w.close()
            self.sock.close()
            shutil.rmtree(self.runtime_dir, ignore_errors=True)

    def _loop(self, wake_r: socket.socket) -> int:
        announced = False
        wake_r.setblocking(False)
        while not self.stopping:
            waitables: list[Any] = [wake_r]
            for slot in self.slots:
                if slot.proc is not None:
                    waitables.append(slot.proc.sentinel)
                if slot.ready_end is not None:
                    waitables.append(slot.ready_end)
            pending = [s.restart_at for s in self.slots if s.restart_at is not None]
            timeout = max(0.0, min(pending) - time.monotonic()) if pending else None
            multiprocessing.connection.wait(waitables, timeout)
            try:
                wake_r.recv(4096)  # signals, drained
            except BlockingIOError:
                pass
            if self.stopping:
                break
            for slot in self.slots:
                self._check_ready(slot)
                code = self._check_exit(slot)
                if code is not None:
                    return code
                if slot.restart_at is not None and time.monotonic() >= slot.restart_at:
                    self._start(slot)
            if not announced and all(s.served for s in self.slots):
                announced = True
                log.info("fedgate: %d workers serving %s:%d; connect with: %s", self.count,
                         self.config.server.host, self.config.server.port,
                         connect_command(self.config))
        log.info("shutting down %d workers", self.count)
        return 0

    def _check_ready(self, slot: _Slot) -> None:
        end = slot.ready_end
        if end is None or not end.poll():
            return
        try:
            end.recv_bytes()
            if slot.ever_served:
                log.info("worker %d serving again (pid %s)", slot.index,
                         slot.proc.pid if slot.proc else "?")
            slot.served = slot.ever_served = True
        except EOFError:
            pass  # it exited before serving; _check_exit sees it
        end.close()
        slot.ready_end = None

    def _check_exit(self, slot: _Slot) -> int | None:
        """Handle a worker that exited; a return value is the gateway's exit code."""
        proc = slot.proc
        if proc is None or proc.is_alive():
            return None
        proc.join()
        code = proc.exitcode if proc.exitcode is not None else 1
        lived = time.monotonic() - slot.started
        slot.proc = None
        if slot.ready_end is not None:
            slot.ready_end.close()
            slot.ready_end = None
        if not slot.ever_served:
            log.error("worker %d exited with code %s before it could serve; stopping the gateway",
                      slot.index, code)
            return code if code > 0 else 1
        slot.young_deaths = slot.young_deaths + 1 if (lived < YOUNG_S or not slot.served) else 0
        if slot.young_deaths >= MAX_YOUNG_DEATHS:
            log.error("worker %d keeps dying (%d times in a row, last exit code %s); stopping "
                      "the gateway", slot.index, slot.young_deaths, code)
            return 1
        delay = 0.1 if slot.young_deaths == 0 else min(0.5 * 2 ** slot.young_deaths, 10.0)
        log.error("worker %d (pid %d) exited with code %s after %.1f s; restarting it in %.1f s",
                  slot.index, proc.pid, code, lived, delay)
        slot.restart_at = time.monotonic() + delay
        return None

    def _stop_all(self) -> None:
        """SIGTERM to every worker, which drains its sessions (gateway.server.shutdown)
        within shutdown_timeout_s; SIGKILL for one that has not exited STOP_GRACE_S later."""
        self.stopping = True  # from here a signal is a second one
        if self.sock is not None:
            self.sock.close()  # ours is one copy of the listening socket; the workers close theirs
        running = self._terminate_workers()
        grace = self.config.server.shutdown_timeout_s + STOP_GRACE_S
        deadline = time.monotonic() + grace
        for proc in running:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                log.error("worker pid %d did not stop in %.0f s; killing it", proc.pid, grace)
                proc.kill()
                proc.join(5.0)
        for slot in self.slots:
            if slot.ready_end is not None:
                slot.ready_end.close()
                slot.ready_end = None


def supervise(config: Config, serve: Serve) -> int:
    """Run `config.server.workers` workers, each running `serve`, until SIGTERM/SIGINT;
    the exit code."""
    logs.configure(config.server.log_format, "supervisor")
    return Supervisor(config, serve).run()
