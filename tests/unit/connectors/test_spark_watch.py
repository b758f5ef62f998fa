"""ClusterWatch on real sockets: a Connect URL, so each look is a TCP probe and no JVM."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from connectors.engines.spark_watch import POLL_S, ClusterLost, ClusterWatch
from tests.support.system import free_port

STALL_S = 1.0


async def _slow(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "answer"


async def test_a_reachable_cluster_lets_the_statement_answer() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        watch = ClusterWatch("local[2]", f"sc://127.0.0.1:{server.getsockname()[1]}", STALL_S)
        running = asyncio.ensure_future(_slow(STALL_S + 3 * POLL_S))
        assert await watch.outcome(None, running, 30) == "answer"


async def test_a_lost_cluster_ends_the_wait_within_the_bound_and_leaves_the_statement() -> None:
    port = free_port()
    watch = ClusterWatch("local[2]", f"sc://127.0.0.1:{port}", STALL_S)
    running = asyncio.ensure_future(_slow(60))
    started = time.monotonic()
    with pytest.raises(ClusterLost, match=f"127.0.0.1:{port}.* for 1 s"):
        await watch.outcome(None, running, 30)
    assert time.monotonic() - started < STALL_S + 10  # the README's bound
    assert not running.done()  # the engine cancels the work, not the watch
    running.cancel()


async def test_the_job_timeout_still_applies() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        watch = ClusterWatch("local[2]", f"sc://127.0.0.1:{server.getsockname()[1]}", 30)
        running = asyncio.ensure_future(_slow(60))
        with pytest.raises(TimeoutError):
            await watch.outcome(None, running, 0.5)
        running.cancel()


async def test_a_local_master_is_not_watched() -> None:
    watch = ClusterWatch("local[2]", None, STALL_S)
    assert await watch.outcome(None, asyncio.ensure_future(_slow(0.1)), 30) == "answer"
