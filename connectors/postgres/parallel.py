"""Read one big PostgreSQL scan fragment over several connections at once (ctid ranges).

A PostgreSQL backend sends a COPY on one core, and the gateway parses it on one thread:
a single stream leaves the second core idle. DuckDB's postgres scanner reads a table in
page ranges on several connections instead; this does the same for a fragment that
scans one table (projection and filters only: no join, aggregate, DISTINCT, ORDER BY,
LIMIT or window), estimated at `SPLIT_ROWS` rows or more:

    SELECT cols FROM t WHERE f
      -> SELECT cols FROM t WHERE f AND ctid >= '(0,0)'::tid AND ctid < '(N,0)'::tid
         SELECT cols FROM t WHERE f AND ctid >= '(N,0)'::tid            (the last is open)

PostgreSQL 14+ answers a ctid range with a TID Range Scan, which reads only those pages.
A fragment narrowed by a dynamic filter may read its table through a fence,
`SELECT cols FROM (SELECT ... FROM t WHERE keys OFFSET 0) AS a WHERE f` (see
planner.physical.fenced): the ctid range goes inside, next to the keys.
The parts start together and read one snapshot (connectors.postgres.snapshot: the first
exports it, the others import it), so a row an UPDATE moved to another page is seen
exactly once. Their batches are merged as they come (a scan has no order).

Deciding to split is the executor's job (`parts_for`); nothing changes in the source:
each part is one more `run_remote` call.
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from connectors import query_scope
from connectors.postgres import snapshot as pg_snapshot
from connectors.base import BatchStream, Source
from connectors.table_stats import one_row

SPLIT_ROWS = 1_000_000  # tables estimated smaller than this are read in one stream
PART_ROWS = 1_000_000  # about this many rows per part ...
MAX_PARTS = max(2, os.cpu_count() or 2)  # ... and at most one part per core
QUEUE_BATCHES = 4


def single_table_scan(sql: str) -> exp.Select | None:
    """The fragment's tree when it only projects and filters one table, else None. The
    table may sit in a fenced subquery (`fenced`): the split goes inside the fence.
    The tree is shared by every read of the same text (a repeated statement's fragment
    is parsed once): callers read it and copy it before changing it (`split_sql`)."""
    if len(sql) > CACHED_TEXT:
        return _single_table_scan(sql)
    return _cached_scan(sql)


CACHED_TEXT = 4096  # longer fragment texts (many join keys) are parsed at each read


def _single_table_scan(sql: str) -> exp.Select | None:
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Select):
        return None
    source = tree.args.get("from_") or tree.args.get("from")
    inner = source.this.this if source is not None and isinstance(source.this, exp.Subquery) else None
    if isinstance(inner, exp.Select) and _is_fence(inner.args.get("offset")):
        if not (_plain(tree, allow_subquery=inner) and _plain(inner, fence=True)):
            return None
        return tree
    return tree if _plain(tree) else None


_cached_scan = functools.lru_cache(maxsize=256)(_single_table_scan)


def _is_fence(offset: exp.Expression | None) -> bool:
    return isinstance(offset, exp.Offset) and offset.expression == exp.Literal.number(0)


def _plain(tree: exp.Select, allow_subquery: exp.Select | None = None, fence: bool = False) -> bool:
    """Whether `tree` only projects and filters its FROM item (one table, or the fence)."""
    if tree.args.get("joins") or tree.args.get("distinct"):
        return False
    if any(tree.args.get(k) for k in ("group", "having", "order", "limit", "with", "qualify")):
        return False
    if tree.args.get("offset") is not None and not (fence and _is_fence(tree.args["offset"])):
        return False
    source = tree.args.get("from_") or tree.args.get("from")
    if source is None:
        return False
    if allow_subquery is not None:
        if not (isinstance(source.this, exp.Subquery) and source.this.this is allow_subquery):
            return False
    elif not isinstance(source.this, exp.Table):
        return False
    inside = allow_subquery.parent if allow_subquery is not None else None
    for node in tree.walk(prune=lambda n: n is inside):
        if node is tree or node is inside:
            continue
        if isinstance(node, (exp.AggFunc, exp.Window, exp.Subquery, exp.Query)):
            return False
    return True


def scanned(tree: exp.Select) -> exp.Select:
    """The select that reads the table: `tree` itself, or the one inside its fence."""
    source = tree.args.get("from_") or tree.args.get("from")
    if isinstance(source.this, exp.Subquery):
        return source.this.this
    return tree


def split_sql(tree: exp.Select, pages: int, parts: int) -> list[str]:
    """The scan cut into `parts` page ranges, the last one open-ended."""
    step = math.ceil(pages / parts)
    ctid = exp.column("ctid")
    pieces = []
    for i in range(parts):
        low = exp.GTE(this=ctid.copy(), expression=_tid(i * step))
        cond: exp.Expression = low
        if i < parts - 1:
            cond = exp.and_(low, exp.LT(this=ctid.copy(), expression=_tid((i + 1) * step)))
        piece = tree.copy()
        scanned(piece).where(cond, copy=False)
        pieces.append(piece.sql("postgres"))
    return pieces


def _tid(page: int) -> exp.Expression:
    return exp.cast(exp.Literal.string(f"({page},0)"), exp.DataType.build("tid", udt=True))


async def parts_for(source: Source, tree: exp.Select, rows: int | None) -> tuple[int, int]:
    """(parts, pages) for a single-table scan of about `rows` rows; parts 1: no split."""
    if source.dialect.name != "postgres" or rows is None or rows < SPLIT_ROWS:
        return 1, 0
    table = (scanned(tree).args.get("from_") or scanned(tree).args.get("from")).this
    name = exp.Table(this=exp.to_identifier(table.name, quoted=True),
                     db=exp.to_identifier(table.db, quoted=True) if table.db else None).sql("postgres")
    relation = exp.cast(exp.Literal.string(name), exp.DataType.build("regclass", udt=True))
    size = exp.select(exp.func("pg_relation_size", relation),
                      exp.cast(exp.func("current_setting", exp.Literal.string("block_size")), "bigint"))
    row = await one_row(source, size.sql("postgres"))
    pages = row[0] // row[1] if row and isinstance(row[0], int) and row[1] else None
    parts = min(MAX_PARTS, math.ceil(rows / PART_ROWS))
    if not isinstance(pages, int) or pages < parts * 8:
        return 1, 0
    return parts, pages


async def open_split(source: Source, pieces: Sequence[str], params: Sequence[Any],
                     opener: Callable[[Source, str, Sequence[Any]], Awaitable[BatchStream]]
                     ) -> MergedStream:
    """Start every piece with `opener` (on one snapshot) and merge their batches."""
    scope = query_scope.current()
    if scope is not None and scope.fragments(source.name) >= 2:
        # The query already shares a snapshot on this source: the pieces join it.
        share = pg_snapshot.share_for(source.name)
        assert share is not None
        share.expected += len(pieces) - 1
        started = await asyncio.gather(*(opener(source, p, params) for p in pieces),
                                       return_exceptions=True)
    else:
        with query_scope.query_scope({source.name: len(pieces)}):
            started = await asyncio.gather(*(opener(source, p, params) for p in pieces),
                                           return_exceptions=True)
    failure = next((s for s in started if isinstance(s, BaseException)), None)
    if failure is not None:
        for stream in started:
            if not isinstance(stream, BaseException):
                await stream.aclose()
        raise failure
    return MergedStream(list(started))


class _End:
    pass


class MergedStream:
    """The batches of several streams of one schema, in arrival order; bounded queue."""

    def __init__(self, streams: list[BatchStream]) -> None:
        self.schema = streams[0].schema
        self._streams = streams
        self._queue: asyncio.Queue[pa.RecordBatch | BaseException | _End] = asyncio.Queue(QUEUE_BATCHES)
        self._live = len(streams)
        self._tasks = [asyncio.create_task(self._pump(s)) for s in streams]

    async def _pump(self, stream: BatchStream) -> None:
        try:
            async for batch in stream:
                await self._queue.put(batch if batch.schema == self.schema else
                                      pa.RecordBatch.from_arrays(batch.columns, schema=self.schema))
            await self._queue.put(_End())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._queue.put(exc)

    def __aiter__(self) -> MergedStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        while self._live:
            item = await self._queue.get()
            if isinstance(item, _End):
                self._live -= 1
                continue
            if isinstance(item, BaseException):
                await self.aclose()
                raise item
            return item
        await self.aclose()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self._live = 0
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        errors = []
        for stream in self._streams:
            try:
                await stream.aclose()
            except Exception as exc:  # every part is closed; the first error is reported
                errors.append(exc)
        self._streams = []
        if errors:
            raise errors[0]
