"""Graceful shutdown of one gateway process, as PgBouncer and Kubernetes expect it.

On SIGTERM the listener stops accepting at once (it closes the listening socket) and
calls `drain`: a session waiting for its client ends now with FATAL 57P01 "terminating
connection due to administrator command"; a session running a statement ends the same
way once the statement is done and its answer sent, or when `[server]
shutdown_timeout_s` is over, or at a second SIGTERM/SIGINT (`now`), whichever comes
first. PostgreSQL's "smart" shutdown would wait for sessions to end by themselves and its
"fast" one ends them all at once; this is in between: no client loses a statement it
already sent, and no client holds the shutdown up for longer than the timeout.
"""

from __future__ import annotations

import asyncio
import logging

from gateway.server.limits import Gate

log = logging.getLogger("fedgate")

POLL_S = 0.05  # how often idle sessions are looked for (the lane's statements end in callbacks)
GOODBYE_S = 10.0  # ended sessions get this long to close their links


async def drain(gate: Gate, timeout_s: float, now: asyncio.Event) -> None:
    """End every connection of `gate`: idle ones at once, busy ones when they are done,
    all of them at `timeout_s` or when `now` is set."""
    gate.draining = True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    for connection in list(gate.connections):
        connection.stop_taking_statements()
    busy = len(gate.connections)
    if busy:
        log.info("shutting down: ending %d sessions (running statements may finish within "
                 "%gs)", busy, timeout_s)
    now_set = asyncio.ensure_future(now.wait())
    try:
        while gate.connections and not now.is_set() and loop.time() < deadline:
            for connection in list(gate.connections):
                if connection.idle:
                    connection.end()
            await asyncio.wait([now_set], timeout=min(POLL_S, max(0.0, deadline - loop.time())))
    finally:
        now_set.cancel()
    left = [c for c in gate.connections if not c.ending]
    if left:
        why = "a second signal" if now.is_set() else f"shutdown_timeout_s ({timeout_s:g}s)"
        log.info("shutting down: ending %d sessions still running statements (%s)",
                 len(left), why)
    tasks = [c.task for c in list(gate.connections) if c.task is not None]
    for connection in list(gate.connections):
        connection.end()
    if tasks:
        _, pending = await asyncio.wait(tasks, timeout=GOODBYE_S)
        if pending:
            log.warning("shutting down: %d sessions did not close within %gs", len(pending),
                        GOODBYE_S)
