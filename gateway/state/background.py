"""Tasks that run on after the code that started them, held until they are done.

The event loop keeps only a weak reference to a task: one nobody holds can be collected
mid-way ("Task was destroyed but it is pending"), and what it was doing (a portal's
close giving a source connection back to its pool, a CancelRequest on its way to a
source) never finishes. The holder is the process's, not a session's: a session that
ends would take its tasks with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

_RUNNING: set[asyncio.Future[Any]] = set()


def in_background(work: Awaitable[Any]) -> asyncio.Future[Any]:
    """Start `work` and hold it until it is done."""
    task = asyncio.ensure_future(work)
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    return task
