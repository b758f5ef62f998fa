"""Remote fragments streamed into the engine through bounded queues.

Each fragment's batches are pumped from its source by an asyncio task into a queue of a
few batches; the engine reads them on its own worker thread as a pyarrow
RecordBatchReader. A full queue stops the pump, so a slow engine slows the sources
instead of growing memory. A failing fragment wakes the engine with its error, and
closing the feeds cancels every pump, which stops the remote queries.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from connectors.base import BatchStream

QUEUE_BATCHES = 4


class _End:
    pass


@dataclass
class _Failed:
    error: BaseException


@dataclass
class FeedStats:
    """What EXPLAIN ANALYZE reports for one fragment."""

    name: str
    source: str
    rows: int = 0
    bytes: int = 0
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None

    @property
    def seconds(self) -> float:
        return (self.finished or time.perf_counter()) - self.started


class Feed:
    def __init__(self, name: str, source: str, stream: BatchStream) -> None:
        self.stream = stream
        self.stats = FeedStats(name, source)
        self.error: BaseException | None = None
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[pa.RecordBatch | _End | _Failed] = asyncio.Queue(QUEUE_BATCHES)
        self._task = self._loop.create_task(self._pump())

    async def _pump(self) -> None:
        try:
            async for batch in self.stream:
                self.stats.rows += batch.num_rows
                self.stats.bytes += batch.nbytes
                await self._queue.put(batch)
            await self._queue.put(_End())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.error = exc
            self._wake(_Failed(exc))
        finally:
            self.stats.finished = time.perf_counter()
            await self.stream.aclose()

    def _wake(self, item: _End | _Failed) -> None:
        """Make room and leave `item` for a consumer that may be waiting right now."""
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(item)

    def reader(self) -> pa.RecordBatchReader:
        """The fragment's rows for the engine; consumed on the engine's worker thread."""
        def batches() -> Iterator[pa.RecordBatch]:
            while True:
                item = asyncio.run_coroutine_threadsafe(self._queue.get(), self._loop).result()
                if isinstance(item, _End):
                    return
                if isinstance(item, _Failed):
                    raise item.error
                yield item

        return pa.RecordBatchReader.from_batches(self.stream.schema, batches())

    async def close(self) -> None:
        if not self._task.done():
            self._task.cancel()
            await asyncio.wait([self._task])
        self._wake(_Failed(asyncio.CancelledError("fragment closed")))


class EngineStream:
    """The engine's result stream, owning the feeds that supply it."""

    def __init__(self, stream: BatchStream, feeds: list[Feed], engine: str) -> None:
        self._stream = stream
        self.feeds = feeds
        self.schema = stream.schema
        self.engine = engine
        self.notes: list[str] = []  # what the executor decided at run time (dynamic filters)
        self.rows = 0
        self.started = time.perf_counter()
        self.finished: float | None = None

    def __aiter__(self) -> EngineStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        try:
            batch = await anext(aiter(self._stream))
        except StopAsyncIteration:
            self.finished = time.perf_counter()
            await self.aclose()
            raise
        except Exception as exc:
            raise self.root_cause(exc) from exc
        self.rows += batch.num_rows
        return batch

    def root_cause(self, exc: BaseException) -> BaseException:
        """A fragment's own error, when the engine failed because a fragment did."""
        return next((feed.error for feed in self.feeds if feed.error is not None), exc)

    async def aclose(self) -> None:
        await self._stream.aclose()
        for feed in self.feeds:
            await feed.close()
