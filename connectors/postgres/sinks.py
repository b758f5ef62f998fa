"""Where a link's relayed answer goes (`PgLink.relay`): the client, or the link itself.

The client's side implements `Sink` (the session's port); `CopyDataSink` keeps a COPY
TO's data for the gateway, `DiscardSink` drops an answer nobody reads.
"""

from __future__ import annotations

import asyncio
from typing import Protocol


class Sink(Protocol):
    def write(self, data: bytes) -> None: ...
    async def maybe_flush(self) -> None: ...

    def direct(self) -> asyncio.StreamWriter | None:
        """Send what is written so far and return the client's writer, for a result's
        DataRows to go to it straight; None: everything goes through `write`."""


class CopyDataSink:
    """Keeps the payload of CopyData messages (the relay passes whole messages)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        if data[:1] == b"d":
            self.data += data[5:]

    async def maybe_flush(self) -> None:
        pass

    def direct(self) -> None:
        return None  # the rows are gathered here, not sent


class DiscardSink:
    """Drops the answer (a statement run for its effect alone)."""

    def write(self, data: bytes) -> None:
        pass

    async def maybe_flush(self) -> None:
        pass

    def direct(self) -> None:
        return None
