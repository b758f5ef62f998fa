"""The rows of the small tables a plan inlines (planner.inline_sides), as its parameters.

A repeated federated point query sends the same few rows of a small table at every run.
Reading them means a statement on their source (for a Parquet file: DuckDB on a worker
thread), which cost more gateway CPU than the rest of such a statement. A source that can
say cheaply which version of a table it would read (connectors.base.VersionedTables: a
file source's stat of each file) lets the rows read at one version be sent again while
that version stands; any change of the table, or a source that cannot tell, reads them
anew, so a changed file is still seen at the next statement. The version is asked before
the read: rows read while the table changed are kept under the older version, which the
next statement no longer finds.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import pyarrow as pa

from connectors.base import Source, VersionedTables
from gateway.executor.feeds import open_remote
from gateway.executor.metered import Metered
from gateway.state.metrics import Metrics
from pgwire.errors import PROGRAM_LIMIT_EXCEEDED, PgError
from planner.inline_sides import INLINE_MAX_ROWS, InlinedSide, side_params
from planner.query_plan import QueryPlan

# The sides kept at most (each up to INLINE_MAX_ROWS rows); past it, all are dropped.
KEPT_SIDES = 64


class InlinedRows:
    """Reads the sides plans inline, keeping each one's parameters by its version."""

    def __init__(self, sources: Mapping[str, Source], metrics: Metrics) -> None:
        self.sources = sources
        self.metrics = metrics
        # (source, the side's SQL) -> (version, one list per column). The lists are sent
        # as they are and never changed.
        self._kept: dict[tuple[str, str], tuple[Hashable, list[list]]] = {}
        # Whether each source versions its tables (a protocol check costs tens of µs).
        self._versioned: dict[str, bool] = {}

    async def params(self, plan: QueryPlan) -> list[list]:
        """The rows of each table `plan` inlines, one parameter per column, in order."""
        params: list[list] = []
        for side in plan.inlined:
            params.extend(await self._side(plan, side))
        return params

    async def _side(self, plan: QueryPlan, side: InlinedSide) -> list[list]:
        source = self.sources[side.source]
        versioned = self._versioned.get(side.source)
        if versioned is None:
            versioned = self._versioned[side.source] = isinstance(source, VersionedTables)
        version = source.table_version(side.table) \
            if side.table and versioned else None  # type: ignore[attr-defined]
        key = (side.source, side.sql)
        if version is not None:
            kept = self._kept.get(key)
            if kept is not None and kept[0] == version:
                return kept[1]
        params = side_params(await self._read(plan, side))
        if version is not None:
            if len(self._kept) >= KEPT_SIDES:
                self._kept.clear()
            self._kept[key] = (version, params)
        else:
            self._kept.pop(key, None)
        return params

    async def _read(self, plan: QueryPlan, side: InlinedSide) -> pa.Table:
        """The side's rows, read whole; a table grown past what a statement may inline
        since the catalog was read is refused."""
        stream = Metered(await open_remote(self.sources[side.source], side.sql, ()),
                         self.metrics, side.source)
        batches, count = [], 0
        try:
            async for batch in stream:
                count += batch.num_rows
                if count > INLINE_MAX_ROWS:
                    raise PgError(PROGRAM_LIMIT_EXCEEDED, f"{side.source}.{side.alias} holds more "
                                  f"than {INLINE_MAX_ROWS} rows, the most a statement sends into "
                                  f"{plan.fragments[0].source} with it",
                                  hint="SET fedgate.engine = duckdb runs it in the engine.")
                batches.append(batch)
        finally:
            await stream.aclose()
        return pa.Table.from_batches(batches, stream.schema)
