"""Remote fragments streamed into the engine through bounded queues.

Each fragment's batches are pumped from its source by an asyncio task into a queue of a
few batches; the engine reads them on its own worker thread as a pyarrow
RecordBatchReader. A full queue stops the pump, so a slow engine slows the sources
instead of growing memory.

Failures and cancels must reach every part, whatever the engine's thread waits for:
- a failing fragment stops its siblings' remote queries and wakes the engine's reader of
  every fragment with its error, so an engine still waiting on a slow sibling (say the
  build side of a hash join) fails now, not when that sibling sends its first batch;
- a cancelled engine call (CancelRequest, statement timeout, client gone) wakes those
  readers first, so the engine's worker gets to see its interrupt, then stops the
  pumps, which cancels the remote queries;
- an error that means a source went away names the source
  (`pgwire.errors.source_failure`), on the engine path and the direct one alike.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

import pyarrow as pa

from connectors.base import BatchStream, Source
from gateway.state.memory import StatementMemory
from pgwire.errors import QUERY_CANCELED, PgError, source_failure

log = logging.getLogger("fedgate.feeds")

QUEUE_BATCHES = 4
T = TypeVar("T")


class _End:
    """The last item of a fragment's queue: no more batches (or a failure, see Feed._fail)."""


_END = _End()


def _closed() -> PgError:
    return PgError(QUERY_CANCELED, "canceling statement: fragment closed")


def _raise_from_source(source: str, exc: Exception) -> NoReturn:
    failure = source_failure(source, exc)
    if failure is exc:
        raise exc
    raise failure from exc


class SourceStream:
    """A source's batch stream whose errors name the source when the source went away."""

    def __init__(self, source: str, stream: BatchStream) -> None:
        self.source = source
        self._stream = stream
        self._batches = aiter(stream)

    @property
    def schema(self) -> pa.Schema:
        return self._stream.schema

    def __aiter__(self) -> SourceStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        try:
            return await anext(self._batches)
        except StopAsyncIteration:
            raise
        except Exception as exc:
            _raise_from_source(self.source, exc)

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        except Exception as exc:
            _raise_from_source(self.source, exc)


async def open_remote(source: Source, sql: str, params: Sequence[Any]) -> SourceStream:
    """Start `sql` on `source`; a source that cannot be reached is named in the error."""
    try:
        stream = await source.run_remote(sql, params)
    except Exception as exc:
        _raise_from_source(source.name, exc)
    return SourceStream(source.name, stream)


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
    """One fragment's rows on their way to the engine.

    The pump (an asyncio task) and the engine's reader (a worker thread) share a
    thread-safe queue, bounded by a semaphore the reader releases. The reader never
    needs the event loop to get a batch or to learn of a failure: the loop may itself be
    blocked waiting for the engine (closing a DuckDB result waits for DuckDB's threads),
    and a reader waiting on the loop then would hang the whole gateway.
    """

    def __init__(self, name: str, source: str, stream: BatchStream,
                 memory: StatementMemory | None = None, holds: bool = False) -> None:
        self.stream = stream
        self.stats = FeedStats(name, source)
        # The statement's share: a queued batch counts until the engine takes the next
        # one (DuckDB has copied it by then), or for the whole statement when the engine
        # holds its inputs (`holds`: Spark reads every input whole before it starts).
        self.memory = memory
        self._holds = holds
        self._counted = 0  # bytes this feed has charged and not released
        self._queued = 0  # batches in the queue, not yet taken by the engine
        self._took = asyncio.Event()  # the engine took a batch
        self.error: BaseException | None = None
        self.siblings: Sequence[Feed] = ()  # the other fragments of the same query
        self._loop = asyncio.get_running_loop()
        self._items: queue.SimpleQueue[pa.RecordBatch | _End] = queue.SimpleQueue()
        self._room = asyncio.Semaphore(QUEUE_BATCHES)
        self._failure: BaseException | None = None  # what the reader raises at its next step
        # A fragment read whole before the engine started (gateway.executor.execute) is
        # handed over as its table, not a stream: the engine then knows its row count.
        table = getattr(stream, "table", None)
        self.table = table if isinstance(table, pa.Table) else None
        if self.table is not None:
            self.stats.rows, self.stats.bytes = self.table.num_rows, self.table.nbytes
        self._task = self._loop.create_task(self._pump() if self.table is None else self._held())

    async def _held(self) -> None:
        self.stats.finished = time.perf_counter()
        await self.stream.aclose()

    async def _pump(self) -> None:
        try:
            async for batch in self.stream:
                self.stats.rows += batch.num_rows
                self.stats.bytes += batch.nbytes
                await self._room.acquire()
                if self.memory is not None:
                    # An engine that holds its inputs keeps every batch: past the share the
                    # statement fails (53200). One that streams them: over the share with
                    # batches still queued, wait for the engine to take one (back-pressure
                    # by bytes); with none queued the engine may be waiting for this very
                    # batch (a hash join's build side, while the probe's queue is full),
                    # so it goes in: at most one batch a feed beyond the share.
                    while not self._holds and self._queued and not self.memory.fits(batch.nbytes):
                        self._took.clear()
                        await self._took.wait()
                    self.memory.charge(batch.nbytes, f"{self.stats.name} on {self.stats.source}",
                                       checked=self._holds or bool(self._queued))
                    self._counted += batch.nbytes
                self._queued += 1
                self._items.put(batch)
            self._items.put(_END)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.error = source_failure(self.stats.source, exc)
            self._fail(self.error)
            for sibling in self.siblings:
                sibling.abort(self.error)
        finally:
            self.stats.finished = time.perf_counter()
            try:
                await self.stream.aclose()
            except Exception:  # the fragment is over either way; its answer stands
                log.warning("closing fragment %s on %s failed", self.stats.name,
                            self.stats.source, exc_info=True)

    def _fail(self, error: BaseException) -> None:
        """Make the reader raise `error` at its next step, waking it if it waits now."""
        if self._failure is None:
            self._failure = error
        self._items.put(_END)

    def abort(self, error: BaseException) -> None:
        """Stop pumping (the remote query is cancelled as the pump unwinds) and make the
        engine's reader fail with `error` at once, without waiting for the pump."""
        if not self._task.done():
            self._task.cancel()
        self._fail(error)

    def reader(self) -> pa.RecordBatchReader | pa.Table:
        """The fragment's rows for the engine; consumed on the engine's worker thread."""
        if self.table is not None:
            return self.table
        def batches() -> Iterator[pa.RecordBatch]:
            given = 0  # the bytes of the batch the engine has now
            while True:
                item = self._items.get()
                if self._failure is not None:
                    raise self._failure
                if isinstance(item, _End):
                    return
                self._loop.call_soon_threadsafe(self._taken, 0 if self._holds else given)
                given = item.nbytes
                yield item

        return pa.RecordBatchReader.from_batches(self.stream.schema, batches())

    def _taken(self, done_bytes: int) -> None:
        """The engine took a batch (on the loop): room for the next, and the batch before
        it no longer counts."""
        self._room.release()
        self._queued = max(0, self._queued - 1)
        self._uncount(done_bytes)
        self._took.set()

    def _uncount(self, nbytes: int) -> None:
        nbytes = min(nbytes, self._counted)
        if nbytes and self.memory is not None:
            self.memory.release(nbytes)
            self._counted -= nbytes

    async def close(self) -> None:
        if not self._task.done():
            self._task.cancel()
            await asyncio.wait([self._task])
        self._fail(_closed())
        self._uncount(self._counted)


async def _guarded(work: Awaitable[T], feeds: Sequence[Feed]) -> T:
    """Await engine work whose worker thread may be blocked reading a feed.

    Cancelling the engine interrupts its worker and waits for it; but a worker waiting
    for a fragment's next batch sees no interrupt until that batch comes, which a slow
    remote query may not send for minutes. So a cancel first wakes every reader.
    """
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        for feed in feeds:
            feed.abort(_closed())
        task.cancel()
        await asyncio.wait([task])
        if not task.cancelled() and task.exception() is None:
            # Finished just as the cancel came: what it returned is ours to close.
            leftover = task.result()
            if hasattr(leftover, "aclose"):
                await leftover.aclose()
        raise


def _root_cause(feeds: Sequence[Feed], exc: Exception) -> Exception:
    """A fragment's own error, when the engine failed because a fragment did."""
    return next((f.error for f in feeds if isinstance(f.error, Exception)), exc)


async def start_engine(work: Awaitable[T], feeds: Sequence[Feed]) -> T:
    """Await the engine's start (`work`) over `feeds`, the fragments of one query.

    The feeds become siblings first, so a failing one stops the others, and a cancel
    wakes their readers (see `_guarded`).
    """
    for feed in feeds:
        feed.siblings = [f for f in feeds if f is not feed]
    return await _guarded(work, feeds)


class EngineStream:
    """The engine's result stream, owning the feeds that supply it."""

    def __init__(self, stream: BatchStream, feeds: list[Feed], engine: str,
                 memory: StatementMemory | None = None,
                 on_close: Callable[[], None] | None = None) -> None:
        self._stream = stream
        self.feeds = feeds
        self.memory = memory  # the statement's share, given back when the stream closes
        self._on_close = on_close
        self.schema = stream.schema
        self.engine = engine
        self.notes: list[str] = []  # what the executor decided at run time (dynamic filters)
        self.rows = 0
        self.started = time.perf_counter()
        self.finished: float | None = None

    def __aiter__(self) -> EngineStream:
        return self

    async def _next(self) -> pa.RecordBatch | None:
        return await anext(aiter(self._stream), None)

    async def __anext__(self) -> pa.RecordBatch:
        try:
            batch = await _guarded(self._next(), self.feeds)
        except Exception as exc:
            root = self.root_cause(exc)
            if root is exc:
                raise
            raise root from exc
        if batch is None:
            self.finished = time.perf_counter()
            await self.aclose()
            raise StopAsyncIteration
        self.rows += batch.num_rows
        return batch

    def root_cause(self, exc: Exception) -> Exception:
        """A fragment's own error, when the engine failed because a fragment did."""
        return _root_cause(self.feeds, exc)

    async def aclose(self) -> None:
        # Wake the engine's threads that wait for a batch first: closing the engine's
        # result waits for those threads (on the event loop, for DuckDB).
        for feed in self.feeds:
            feed.abort(_closed())
        try:
            await self._stream.aclose()
        finally:
            for feed in self.feeds:
                await feed.close()
            on_close, self._on_close = self._on_close, None
            if on_close is not None:
                on_close()
