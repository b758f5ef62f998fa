"""Notice, while a Spark statement runs, that its cluster went away, and say so.

A standalone application that loses its master and its executors is not stopped: its
SparkContext waits for a master to come back, and a master that restarts does not know
the application, so it never gets executors again. Its jobs neither finish nor fail. So
while a statement runs, `ClusterWatch.lost` looks every `POLL_S` seconds (on a thread of
its own, each look bounded) at:

- the master's (or Spark Connect server's) port: a TCP probe, the way a start probes it;
- on a classic session, the application's executors (the status tracker's executor list,
  without the driver): an application that had executors and has none left cannot make
  progress.

When either stays wrong for `stall_timeout_s` (a look that does not answer within
`LOOK_S` counts as wrong), it returns why; the engine then cancels the statement's jobs,
fails it with 08006 naming the cluster, and drops the session, so the next statement
builds a new one. A statement therefore ends within `stall_timeout_s + 2 * (POLL_S +
LOOK_S)` of its cluster's loss (the first wrong look, then the look that sees it has
lasted), which the README rounds up to `spark_stall_timeout_s + 10`. An application that
never got an executor (a cold start still waiting for one) is not judged on that count:
only on its master's port.

The finding outlives the statement, because `spark_job_timeout_s` may end it first: a
statement that times out while the last look found its application lost drops the session
too, and before each statement an application that had executors and has none left while
its master answers (`stranded`) is dropped and a new one started, so the next statement is answered once the
cluster is back.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, TypeVar

from connectors.engines.spark_session import endpoints, in_thread, probe

T = TypeVar("T")
POLL_S = 1.0
LOOK_S = 3.0  # one look (a TCP probe, a JVM call) answers within this, or counts as lost
LOST_EXECUTORS = "the application lost all of its executors"


class ClusterLost(Exception):
    """The watch's finding: why the cluster is taken as lost."""


class ClusterWatch:
    def __init__(self, master: str, remote: str | None, stall_timeout_s: float) -> None:
        self.url = remote or master
        self.classic = remote is None
        self.pairs = endpoints(master, remote)
        self.stall_timeout_s = stall_timeout_s
        self._had_executors: set[int] = set()  # id() of root sessions that had executors
        # id() of root sessions whose last look found them lost -> why (kept between
        # statements: a statement that timed out on a lost application says so).
        self._looked_lost: dict[int, str] = {}

    def forget(self, root: Any) -> None:
        self._had_executors.discard(id(root))
        self._looked_lost.pop(id(root), None)

    def looked_lost(self, root: Any) -> str | None:
        """Why the last look at `root` found its cluster lost, or None."""
        return self._looked_lost.get(id(root))

    async def stranded(self, root: Any) -> str | None:
        """Before a statement: why a classic application that had executors cannot run it
        although its master answers (it has none left: a master that restarted without it
        had them killed), or None. A master that does not answer is left to the
        statement's watch, which fails it with 08006 as before. One look, within LOOK_S."""
        if not self.classic or not self.pairs or id(root) not in self._had_executors:
            return None
        try:
            reason = await asyncio.wait_for(asyncio.shield(in_thread(self._look, root)), LOOK_S)
        except Exception:  # noqa: BLE001 - a driver that fails or does not answer a look
            return None    # is judged by the statement's watch (08006 after the stall)
        return reason if reason == LOST_EXECUTORS else None

    def _look(self, root: Any) -> str | None:
        """Why the cluster looks lost now, or None (remembered: `looked_lost`)."""
        reason = self._looked(root)
        if reason is None:
            self._looked_lost.pop(id(root), None)
        else:
            self._looked_lost[id(root)] = reason
        return reason

    def _looked(self, root: Any) -> str | None:
        reason = probe(self.pairs, LOOK_S - 1.0) if self.pairs else None
        if reason is not None:
            return f"its master is unreachable ({reason})"
        if self.classic and self.pairs:
            # The driver is in the list too.
            executors = len(root.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) - 1
            if executors > 0:
                self._had_executors.add(id(root))
            elif id(root) in self._had_executors:
                return LOST_EXECUTORS
        return None

    async def lost(self, root: Any) -> str:
        """Returns (why) once the cluster has looked lost for `stall_timeout_s`; never
        returns while it is fine (the caller cancels it when the statement ends)."""
        wrong_since: float | None = None
        while True:
            await asyncio.sleep(POLL_S)
            try:
                reason = await asyncio.wait_for(asyncio.shield(in_thread(self._look, root)), LOOK_S)
            except TimeoutError:
                reason = f"its driver did not answer within {LOOK_S:g} s"
            except Exception as exc:  # a JVM call failing is a lost cluster's symptom too
                reason = str(exc).strip().split("\n")[0] or type(exc).__name__
            if reason is None:
                wrong_since = None
                continue
            now = time.monotonic()
            wrong_since = now if wrong_since is None else wrong_since
            if now - wrong_since >= self.stall_timeout_s:
                return f"{reason} for {self.stall_timeout_s:g} s"

    async def outcome(self, root: Any, running: asyncio.Future[T], timeout_s: float | None) -> T:
        """`running`'s result; TimeoutError after `timeout_s`; ClusterLost when the watch
        finds the cluster gone first. `running` itself is never cancelled here."""
        if not self.pairs or self.stall_timeout_s <= 0:
            return await asyncio.wait_for(asyncio.shield(running), timeout_s)
        watching = asyncio.ensure_future(self.lost(root))
        try:
            done, _ = await asyncio.wait({running, watching}, timeout=timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
        if running in done:
            return running.result()
        if watching in done:
            raise ClusterLost(watching.result())
        raise TimeoutError
