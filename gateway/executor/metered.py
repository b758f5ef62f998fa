"""The executor's part of /metrics: rows and bytes each source sent, queries per engine.

`Metered` wraps the stream `Executor.run` returns. A plan without an engine counts its
one fragment's batches as they pass; a plan through the engine adds each fragment's
totals (`gateway.executor.feeds.FeedStats`, which EXPLAIN ANALYZE reports too) when the
stream is closed. Fragments an engine reads from the source itself (Spark over JDBC)
never pass the gateway and are not counted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pyarrow as pa

from connectors.base import BatchStream
from gateway.executor.feeds import EngineStream
from gateway.state.metrics import Metrics


class Metered:
    def __init__(self, stream: BatchStream, metrics: Metrics, source: str | None) -> None:
        self.inner = stream
        self.schema = stream.schema
        self._metrics = metrics
        self._source = source  # the one fragment's source when there is no engine
        self._closed = False
        self._batches: AsyncIterator[pa.RecordBatch] | None = None
        if isinstance(stream, EngineStream):
            metrics.engine_queries[stream.engine] = metrics.engine_queries.get(stream.engine, 0) + 1

    def __aiter__(self) -> Metered:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        if self._batches is None:
            self._batches = aiter(self.inner)
        try:
            batch = await anext(self._batches)
        except StopAsyncIteration:
            self._count_feeds()
            raise
        if self._source is not None:
            self._metrics.fragment_read(self._source, batch.num_rows, batch.nbytes)
        return batch

    def _count_feeds(self) -> None:
        if self._closed:
            return
        self._closed = True
        if isinstance(self.inner, EngineStream):
            for feed in self.inner.feeds:
                self._metrics.fragment_read(feed.stats.source, feed.stats.rows, feed.stats.bytes)

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            self._count_feeds()
