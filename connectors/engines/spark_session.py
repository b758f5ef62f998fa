"""The one Spark session a gateway process keeps, and the rules that keep the gateway
responsive whatever Spark does.

- Every Spark call runs on a daemon thread of its own (`in_thread`), never on the event
  loop and never on the default executor, whose threads the interpreter joins at exit: a
  Spark Connect channel that hangs in `close()` or a job that ignores its cancel must not
  keep the gateway from stopping.
- The event loop never waits on a lock a Spark call holds. A start is one shared future,
  which a statement awaits (a cancel or statement_timeout ends the wait, not the start).
  An unreachable cluster answers `08001 Spark cluster at <url> is unavailable: <reason>`
  within `connect_timeout_s`. A start that finishes later is kept for the next statement;
  one that fails is forgotten, so the next statement starts again (the cluster may be back).
- Before starting, the master or Connect server is probed over TCP: an unreachable
  cluster is reported at once, instead of after SparkContext's registration retries or
  Spark Connect's ten minutes of retries. A Connect client retries for at most about
  `connect_timeout_s` too.
- A session whose SparkContext stopped (its master gave up), whose Connect server went
  away, or whose cluster the statement's watch found lost (connectors.engines.spark_watch)
  is dropped (`discard`), and the next statement builds a new one.
- After `idle_stop_s` without statements the session is stopped, which gives the cluster
  its cores back; the next statement starts it again.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from pgwire.errors import PgError

log = logging.getLogger("fedgate.spark")
T = TypeVar("T")
CONNECTION_FAILURE = "08001"
CONNECT_DEFAULT_PORT = 15002
STANDALONE_DEFAULT_PORT = 7077
STOP_WAIT_S = 5.0


def in_thread(function: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """`function(*args)` on a new daemon thread, as a future of the running loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def run() -> None:
        try:
            result, error = function(*args), None
        except BaseException as exc:  # handed to the awaiting task, whatever it is
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed meanwhile: nobody waits any more
            pass

    threading.Thread(target=run, name=f"spark-{getattr(function, '__name__', 'call')}",
                     daemon=True).start()
    return future


def unavailable(url: str, reason: str) -> PgError:
    return PgError(CONNECTION_FAILURE, f"Spark cluster at {url} is unavailable: {reason}")


def endpoints(master: str, remote: str | None) -> list[tuple[str, int]]:
    """The (host, port) pairs a cluster start needs: the Connect server, or every
    standalone master of a `spark://h1:p1,h2:p2` URL. Empty for local and other masters
    (YARN, Kubernetes), which are not probed."""
    if remote is not None:
        url = urlparse(remote)
        return [(url.hostname or "localhost", url.port or CONNECT_DEFAULT_PORT)]
    if not master.startswith("spark://"):
        return []
    pairs = []
    for part in master[len("spark://"):].split(","):
        host, _, port = part.rpartition(":")
        pairs.append((host or part, int(port) if port.isdigit() else STANDALONE_DEFAULT_PORT))
    return pairs


def probe(pairs: list[tuple[str, int]], timeout_s: float) -> str | None:
    """None when one of `pairs` accepts a TCP connection, else why none did."""
    reasons = []
    for host, port in pairs:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return None
        except OSError as exc:
            reasons.append(f"{host}:{port}: {exc.strerror or exc}")
    return "; ".join(reasons) if reasons else None


class SessionKeeper:
    """Starts, hands out, drops and stops the gateway's root SparkSession."""

    def __init__(self, master: str, remote: str | None, conf: Mapping[str, str],
                 jars: list[str], connect_timeout_s: float, idle_stop_s: float) -> None:
        self.master = master
        self.remote = remote
        self.url = remote or master
        self.conf = dict(conf)
        self.jars = [path for path in jars if Path(path).is_file()]
        self.connect_timeout_s = connect_timeout_s
        self.idle_stop_s = idle_stop_s
        self.session: Any = None
        # Connect: the settings every new session gets (a Connect session starts from the
        # server's defaults, not from its parent's settings).
        self.session_conf: dict[str, str] = {}
        self._starting: asyncio.Future[Any] | None = None
        self._lock = threading.Lock()  # taken on Spark threads only, never on the loop
        self._active = 0
        self._last_used = time.monotonic()
        self._idle_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ start

    @property
    def start_pending(self) -> str | None:
        """What a statement that needs the session now would first wait for: a start to
        begin, or one under way (a notice for the client); None when a session is up.
        Reads this object's own state only, never the JVM, so the event loop may ask
        before every statement. A session whose SparkContext died counts as up here:
        `get` finds that out (a JVM call) and starts a new one."""
        if self.session is not None:
            return None
        if self._starting is not None and not self._starting.done():
            return f"waiting for the Spark engine ({self.url}) to start"
        return f"starting the Spark engine ({self.url}); the first Spark statement waits for it"

    async def get(self, limit_s: float | None = None) -> Any:
        """The root session, started if need be. An unreachable cluster fails within
        `connect_timeout_s`; a reachable one that is slow to give a session is waited for
        up to `limit_s` (None: until the statement ends)."""
        # Asking is use: work that does not hold `begin` (a describe, planning a direct
        # read) must not find the session stopped under it by the idle stop.
        self._last_used = time.monotonic()
        session = self.session
        if session is not None and _alive(session, connect=self.remote is not None):
            return session
        if session is not None:
            self.discard(session, "its SparkContext stopped")
        if self._starting is None or (self._starting.done() and self._starting.exception() is not None):
            log.info("Spark session on %s starting; statements that need it wait", self.url)
            self._starting = in_thread(self._start)
            self._starting.add_done_callback(self._started)
        # Reaching the cluster (the probe, Connect's retries) is bounded by
        # connect_timeout_s; what follows (a driver JVM's start, a busy server's first
        # answers) takes what the machine gives it. A cancel ends the wait, not the start.
        try:
            return await asyncio.wait_for(asyncio.shield(self._starting), limit_s or None)
        except TimeoutError:
            raise unavailable(self.url, f"no session within {limit_s:g} s") from None
        except PgError:
            raise
        except Exception as exc:
            raise unavailable(self.url, _first_line(exc)) from exc

    def _started(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled():
            self._starting = None
            return
        if future.exception() is not None:
            self._starting = None  # the next statement tries again
            return
        self.session = future.result()
        self._last_used = time.monotonic()  # the statements that waited for it run now
        if self._idle_task is None and self.idle_stop_s > 0:
            self._idle_task = asyncio.get_running_loop().create_task(self._stop_when_idle())

    def _start(self) -> Any:
        with self._lock:
            pairs = endpoints(self.master, self.remote)
            reason = probe(pairs, min(self.connect_timeout_s, 10.0))
            if reason is not None:
                raise unavailable(self.url, reason)
            from pyspark.sql import SparkSession  # imported on first use: a heavy import

            started = time.perf_counter()
            builder = SparkSession.builder.appName("fedgate")
            if self.remote:
                session = builder.remote(self.remote).create()
                bound_retries(session, self.connect_timeout_s)
                static = server_side_settings(session, self.conf)
                if static:
                    log.warning("Spark Connect at %s: spark_conf settings %s are static, only the "
                                "server takes them at its start; not applied", self.url,
                                ", ".join(sorted(static)))
                self.session_conf = {k: v for k, v in self.conf.items() if k not in static}
            else:
                builder = builder.master(self.master)
                for key, value in self.conf.items():
                    builder = builder.config(key, value)
                if self.jars:
                    builder = builder.config("spark.jars", ",".join(self.jars))
                session = builder.getOrCreate()
                # Query errors reach the client as ErrorResponses; Spark would also print
                # each one with a full JVM stack trace.
                session.sparkContext.setLogLevel("ERROR")
            logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
            log.info("Spark session on %s started in %.1f s", self.url, time.perf_counter() - started)
            return session

    # ------------------------------------------------------------------ use

    def begin(self) -> None:
        self._active += 1
        self._last_used = time.monotonic()

    def end(self) -> None:
        self._active -= 1
        self._last_used = time.monotonic()

    def discard(self, session: Any, reason: str) -> None:
        """Forget `session` (the next statement starts a new one) and stop it meanwhile."""
        if self.session is not session:
            return
        log.warning("Spark session on %s dropped (%s); the next statement starts a new one",
                    self.url, reason)
        self.session = None
        self._starting = None
        in_thread(self._stop_locked, session)

    async def _stop_when_idle(self) -> None:
        while True:
            await asyncio.sleep(max(0.5, min(self.idle_stop_s / 4, 30.0)))
            session = self.session
            idle = time.monotonic() - self._last_used
            if session is None or self._active or idle < self.idle_stop_s:
                continue
            log.info("Spark session on %s stopped after %.0f s without statements (it starts "
                     "again on demand)", self.url, idle)
            self.session = None
            self._starting = None
            await self._stop(session)

    def _stop_locked(self, session: Any) -> None:
        """Stop `session`. A classic start waits for it (it would otherwise find the
        stopping session still registered and reuse it). A Connect session is the
        server's: releasing it gets one quick try (the server may be the one that is
        gone), and a new session need not wait for that."""
        if self.remote:
            bound_retries(session, 0)
            _stop_quietly(session)
            return
        with self._lock:
            _stop_quietly(session)

    async def _stop(self, session: Any) -> None:
        stopping = in_thread(self._stop_locked, session)
        try:
            await asyncio.wait_for(asyncio.shield(stopping), STOP_WAIT_S)
        except TimeoutError:
            log.warning("Spark session on %s did not stop within %.0f s; left to its thread",
                        self.url, STOP_WAIT_S)

    async def close(self) -> None:
        """Stop the session at gateway shutdown, waiting at most STOP_WAIT_S."""
        if self._idle_task is not None:
            self._idle_task.cancel()
            self._idle_task = None
        session, self.session, self._starting = self.session, None, None
        if session is not None:
            await self._stop(session)


def _alive(session: Any, connect: bool) -> bool:
    if connect:
        return not session.is_stopped
    context = session.sparkContext
    return context._jsc is not None and not context._jsc.sc().isStopped()


def _stop_quietly(session: Any) -> None:
    try:
        session.stop()
    except Exception as exc:  # stopping is best effort: the session is already dropped
        log.warning("stopping a Spark session failed: %s", _first_line(exc))


def bound_retries(session: Any, within_s: float) -> None:
    """Spark Connect retries an unreachable server for about ten minutes by default; at
    most about `within_s` here, so a lost server fails the statement instead."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    retries = max(1, int(within_s // 2)) if within_s > 0 else 0
    session.client.set_retry_policies([DefaultPolicy(max_retries=retries, backoff_multiplier=2.0,
                                                     initial_backoff=200, max_backoff=2000)])


def server_side_settings(session: Any, conf: Mapping[str, str]) -> list[str]:
    """The keys of `conf` a Spark Connect session cannot set (static settings: the
    server takes them at its start)."""
    static = []
    for key in conf:
        try:
            modifiable = session.conf.isModifiable(key)
        except Exception as exc:  # an unknown key: the server decides, so report it
            log.debug("isModifiable(%s) failed: %s", key, _first_line(exc))
            modifiable = False
        if not modifiable:
            static.append(key)
    return static


LOOPBACK_HOSTS = ("localhost", "::1", "ip6-localhost")


def reach_warnings(url: str, sources: list[tuple[str, str, str | None, str | None]]) -> list[str]:
    """Why executors on other machines may not reach a source as configured: `sources`
    holds (name, kind, dsn, path) per source. For a cluster or Connect server `url` only."""
    warnings = []
    for name, kind, dsn, path in sources:
        if kind in ("postgres", "mysql") and dsn:
            try:
                host = urlparse(dsn).hostname or ""
            except ValueError:
                continue
            if host in LOOPBACK_HOSTS or host.startswith("127."):
                warnings.append(f"source {name}: its dsn names {host}, which on the executors of "
                                f"{url} is each executor's own machine; use a host they can route to")
        elif kind in ("parquet", "csv") and path and "://" not in path:
            warnings.append(f"source {name}: its files are at a local path ({path}); the executors "
                            f"of {url} read them at the same path, so it must be storage every "
                            "node mounts")
    return warnings


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().split("\n")[0]
    return text or type(exc).__name__
