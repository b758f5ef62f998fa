"""The event loop a gateway process runs on: uvloop's when it is installed."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine


def run_loop(main: Coroutine[object, object, None]) -> None:
    try:
        import uvloop  # the faster event loop, when installed
        loop_factory = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main)
