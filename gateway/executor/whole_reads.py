"""Fragments read whole before the engine starts: dynamic filters' builds (their keys
narrow the probes) and fragments estimated small enough to hand over as tables (an
engine planning over streams sees no row counts).

Their rows count against the statement's memory (gateway.state.memory) until it ends.
One that outgrows a quarter of the statement's share is not held: `read_whole` hands it
back as a `Prefetched` stream, the batches read so far and then the rest, which the
engine reads like any other fragment's stream and which narrows nothing.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from connectors.base import TableStream
from gateway.state.memory import StatementMemory


class WholeStream(TableStream):
    """A build fragment read whole: its rows stay at hand for every probe it narrows."""

    def __init__(self, table: pa.Table) -> None:
        super().__init__(table)
        self.table = table


class Prefetched:
    """A fragment whose whole read was given up (its rows would not fit in a quarter of
    the statement's share): the batches read so far, then the rest of its stream. Each batch
    stops counting as it is handed on (the engine's feed counts it then)."""

    def __init__(self, batches: list[pa.RecordBatch], stream: Any, memory: StatementMemory) -> None:
        self.schema = stream.schema
        self._batches = batches
        self._stream = stream
        self._memory = memory

    def __aiter__(self) -> Prefetched:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        if self._batches:
            batch = self._batches.pop(0)
            self._memory.release(batch.nbytes)
            return batch
        return await anext(self._stream)

    async def aclose(self) -> None:
        self._memory.release(sum(b.nbytes for b in self._batches))
        self._batches.clear()
        await self._stream.aclose()


async def read_whole(stream: Any, memory: StatementMemory | None = None,
                 name: str = "") -> WholeStream | Prefetched:
    """`stream` read to its end; its rows count against the statement's share until the
    statement ends. One that outgrows half the share is handed back as a stream instead
    (`Prefetched`): streamed into the engine, and narrowing nothing."""
    if isinstance(stream, (WholeStream, Prefetched)):
        # Read whole before: a fresh iterator over the same rows; given up: as it is.
        return WholeStream(stream.table) if isinstance(stream, WholeStream) else stream
    batches = []
    try:
        async for batch in stream:
            if memory is not None:
                if not memory.room_to_hold(batch.nbytes):
                    memory.charge(batch.nbytes, f"{name}, read whole", checked=False)
                    batches.append(batch)
                    return Prefetched(batches, stream, memory)
                memory.charge(batch.nbytes, f"{name}, read whole")
            batches.append(batch)
    except BaseException:
        await stream.aclose()
        if memory is not None:
            memory.release(sum(b.nbytes for b in batches))
        raise
    await stream.aclose()
    return WholeStream(pa.Table.from_batches(batches, schema=stream.schema))
