"""How the executor starts the fragments it reads itself: once per distinct query, and a
big PostgreSQL table scan over several connections.

- Copies: fragments with the same source, SQL and parameters are started once and every
  copy reads a view of that one stream (gateway.executor.shared_reads), when their estimated
  size is under `SHARE_BYTES` (a view may have to hold the whole fragment).
- Splits: a PostgreSQL fragment that scans one table estimated at
  `connectors.postgres.parallel.SPLIT_ROWS` rows or more is read as page ranges on several
  connections, on one snapshot (connectors.postgres.parallel).

Estimates come from the sources' catalogs (connectors.table_stats). Every decision is a
line for EXPLAIN ANALYZE.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from connectors.postgres import parallel as pg_parallel
from connectors.base import BatchStream, Source
from connectors.table_stats import SourceCatalog
from gateway.executor.feeds import open_remote
from gateway.executor.shared_reads import SharedRead
from gateway.state.memory import StatementMemory
from pgwire.errors import source_failure
from planner.query_plan import RemoteFragment

SHARE_BYTES = 1 << 30
BYTES_PER_VALUE = 12  # a rough Arrow width per column value, for the sharing cap


class FragmentReads:
    def __init__(self, sources: dict[str, Source] | Any) -> None:
        self.sources = sources
        self.catalog = SourceCatalog()

    async def open_all(self, fragments: Sequence[tuple[RemoteFragment, str, Sequence[Any]]],
                       notes: list[str], memory: StatementMemory | None = None
                       ) -> dict[str, BatchStream | BaseException]:
        """Start every (fragment, sql, params) at once; a failure is returned in place of
        its stream, for the caller to close the others and raise it."""
        groups: dict[tuple, list[RemoteFragment]] = {}
        work: dict[tuple, tuple[RemoteFragment, str, Sequence[Any]]] = {}
        per_source = Counter(f.source for f, _, _ in fragments)
        for fragment, sql, params in fragments:
            text = sql if per_source[fragment.source] < 2 else \
                _canonical(sql, self.sources[fragment.source].dialect.sqlglot)
            key = (fragment.source, text, tuple(repr(p) for p in params))
            groups.setdefault(key, []).append(fragment)
            work.setdefault(key, (fragment, sql, params))
        shared = {key: len(members) > 1 and await self._shareable(*work[key])
                  for key, members in groups.items()}
        # A copy not shared is started on its own, like any other fragment.
        starts = [(key, members[0]) for key, members in groups.items()] + [
            (key, member) for key, members in groups.items() if not shared[key] for member in members[1:]]
        results = await _all_or_none([self.open_one(f, work[key][1], work[key][2], notes)
                                      for key, f in starts])
        opened: dict[str, BatchStream | BaseException] = {}
        for (key, fragment), result in zip(starts, results):
            members = groups[key]
            if not shared[key] or isinstance(result, BaseException):
                opened[fragment.name] = result
                if shared[key]:  # the copies fail with it
                    opened.update({m.name: result for m in members[1:]})
                continue
            names = ", ".join(m.name for m in members)
            shared_read = SharedRead(result, len(members), memory, f"{names} on {fragment.source}")
            for member, view in zip(members, shared_read.views()):
                opened[member.name] = view
            notes.append(f"Read {', '.join(m.name for m in members)} on {fragment.source}: "
                         f"the same query, read once for all {len(members)}")
        return opened

    async def _shareable(self, fragment: RemoteFragment, sql: str, params: Sequence[Any]) -> bool:
        source = self.sources[fragment.source]
        try:
            tree = sqlglot.parse_one(sql, read=source.dialect.sqlglot)
        except SqlglotError:
            return False
        rows = await self.catalog.largest(source, tree)
        width = len(getattr(tree, "expressions", ())) or 1
        return rows is not None and rows * width * BYTES_PER_VALUE <= SHARE_BYTES

    async def open_one(self, fragment: RemoteFragment, sql: str, params: Sequence[Any],
                       notes: list[str]) -> BatchStream:
        """One fragment's stream: split into page ranges when that pays, else one query."""
        source = self.sources[fragment.source]
        tree = pg_parallel.single_table_scan(sql) if source.dialect.name == "postgres" else None
        if tree is not None:
            try:  # the statistics are the first thing read from the source
                rows = await self.catalog.largest(source, tree)
                parts, pages = await pg_parallel.parts_for(source, tree, rows)
            except Exception as exc:
                failure = source_failure(fragment.source, exc)
                if failure is exc:
                    raise
                raise failure from exc
            if parts > 1:
                stream = await pg_parallel.open_split(
                    source, pg_parallel.split_sql(tree, pages, parts), params, open_remote)
                table = tree.find(exp.Table)
                notes.append(f"Read {fragment.name} on {fragment.source}: {parts} connections, "
                             f"ctid ranges of {table.name if table else '?'} ({pages} pages, "
                             f"about {rows} rows)")
                return stream
        return await open_remote(source, sql, params)


def _canonical(sql: str, dialect: str) -> str:
    """`sql` with a single table's alias dropped: `SELECT "a"."g" FROM t AS a` and
    `SELECT "b"."g" FROM t AS b` return the same rows under the same column names (a
    fragment over one alias names its columns without it), so they are one read."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return sql
    tables = list(tree.find_all(exp.Table))
    if not isinstance(tree, exp.Select) or len(tables) != 1 or not tables[0].alias:
        return sql
    alias = tables[0].alias
    if any(e.alias and "." in e.alias for e in tree.expressions):
        return sql  # columns named after the alias ("a.g"): the alias is part of the answer
    for column in tree.find_all(exp.Column):
        if column.table == alias:
            column.set("table", None)
    tables[0].set("alias", None)
    return tree.sql(dialect)


async def _all_or_none(openings: list[Any]) -> list[BatchStream | BaseException]:
    """Run `openings` together: each one's stream, or its error in its place. Cancelled
    (the client's cancel), the streams some of them opened meanwhile are closed before
    the cancel goes on: else each would keep its source connection, and the pool would
    run dry under a few cancels, leaving later statements waiting for ever."""
    tasks = [asyncio.ensure_future(opening) for opening in openings]
    try:
        return await asyncio.gather(*tasks, return_exceptions=True)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        for task in tasks:
            if not task.cancelled() and task.exception() is None:
                await task.result().aclose()
        raise
