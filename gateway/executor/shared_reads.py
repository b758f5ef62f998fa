"""One remote read for fragments that are the same query: read once, fed to each.

The planner can emit the same fragment twice in one plan (TPC-H Q17, Q18: lineitem
scanned for the outer query and again for a decorrelated subquery), and each copy would
make the source do the whole work again. The executor starts one stream and hands every
copy a view of it. Views read at their own pace: a batch stays buffered until every
view has read it, so the memory held is the distance between the fastest and the
slowest reader. That can reach the whole fragment (an engine builds a hash table from
one copy before it reads the other), which is why the executor shares only fragments
whose estimated size is under a cap.
"""

from __future__ import annotations

import asyncio

import pyarrow as pa

from connectors.base import BatchStream
from gateway.state.memory import StatementMemory


class SharedRead:
    """A stream read once for `consumers` views."""

    def __init__(self, stream: BatchStream, consumers: int,
                 memory: StatementMemory | None = None, name: str = "") -> None:
        self.schema = stream.schema
        # The statement's share: the batches buffered here count until every view read them.
        self._memory = memory
        self._name = name
        self._stream = stream
        self._batches = aiter(stream)
        self._buffer: list[pa.RecordBatch] = []
        self._base = 0  # the index of _buffer[0] among all batches read
        self._positions: dict[int, int] = {i: 0 for i in range(consumers)}
        self._lock = asyncio.Lock()
        self._done = False
        self._error: BaseException | None = None

    def views(self) -> list[View]:
        return [View(self, i) for i in self._positions]

    async def next(self, view: int) -> pa.RecordBatch:
        while True:
            index = self._positions[view] - self._base
            if index < len(self._buffer):
                batch = self._buffer[index]
                self._positions[view] += 1
                self._trim()
                return batch
            if self._error is not None:
                raise self._error
            if self._done:
                raise StopAsyncIteration
            async with self._lock:  # one view reads on for all; the others wait here
                if self._positions[view] - self._base < len(self._buffer) or self._done:
                    continue
                try:
                    batch = await anext(self._batches)
                    if self._memory is not None:
                        self._memory.charge(batch.nbytes, self._name)
                    self._buffer.append(batch)
                except StopAsyncIteration:
                    self._done = True
                except Exception as exc:
                    self._error = exc
                    raise

    def _trim(self) -> None:
        low = min(self._positions.values(), default=self._base + len(self._buffer))
        if low > self._base:
            if self._memory is not None:
                self._memory.release(sum(b.nbytes for b in self._buffer[:low - self._base]))
            del self._buffer[:low - self._base]
            self._base = low

    async def close(self, view: int) -> None:
        self._positions.pop(view, None)
        self._trim()
        if not self._positions:
            if self._memory is not None:
                self._memory.release(sum(b.nbytes for b in self._buffer))
            self._buffer.clear()
            await self._stream.aclose()


class View:
    """One consumer's BatchStream over a SharedRead."""

    def __init__(self, shared: SharedRead, index: int) -> None:
        self.schema = shared.schema
        self._shared = shared
        self._index = index
        self._closed = False

    def __aiter__(self) -> View:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        if self._closed:
            raise StopAsyncIteration
        return await self._shared.next(self._index)

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._shared.close(self._index)
