"""ServerContext's reads of the sources' tables: a miss is never answered from a read that
began before it, concurrent misses share reads, and a stale flag makes planners wait."""

from __future__ import annotations

import asyncio

import pyarrow as pa

from connectors.base import TableInfo, TableRef
from connectors.dialects.sqlite import DIALECT as SQLITE
from gateway.config import parse_config
from gateway.state.context import ServerContext
from planner import CatalogSnapshot, SourceEntry
from tests.support.planning import ENGINE_DIALECTS


class SlowSource:
    """A source whose tables are whatever `names` holds when a read ends."""

    dialect = SQLITE

    def __init__(self) -> None:
        self.name = "lite"
        self.names: set[str] = set()
        self.reads = 0
        self.rows: int | None = None  # every table's row estimate

    async def tables(self) -> list[TableInfo]:
        self.reads += 1
        await asyncio.sleep(0.05)
        return [TableInfo(TableRef("lite", n), pa.schema([("a", pa.int64())]), row_estimate=self.rows)
                for n in sorted(self.names)]


def _context(source: SlowSource) -> ServerContext:
    catalog = CatalogSnapshot(1, {"lite": SourceEntry("lite", SQLITE, {})},
                              engine_dialects=ENGINE_DIALECTS)
    config = parse_config({"sources": {"lite": {"kind": "sqlite", "path": "unused.db"}}})
    return ServerContext(config, {"lite": source}, catalog, executor=None)  # type: ignore[arg-type]


async def test_a_miss_right_after_a_read_reads_again() -> None:
    source = SlowSource()
    ctx = _context(source)
    await ctx.refresh_catalog(min_interval_s=0.0)
    source.names.add("made_later")
    assert await ctx.recheck_missing()  # within a second of the last read: read anyway
    assert "made_later" in ctx.catalog.sources["lite"].tables


async def test_concurrent_misses_share_reads() -> None:
    source = SlowSource()
    ctx = _context(source)
    source.names.add("t")
    found = await asyncio.gather(*(ctx.recheck_missing() for _ in range(20)))
    assert source.reads <= 2  # the first read, and one that started after the others' misses
    assert any(found) and "t" in ctx.catalog.sources["lite"].tables


async def test_a_stale_catalog_is_read_before_planning_even_while_a_read_runs() -> None:
    source = SlowSource()
    ctx = _context(source)
    running = asyncio.create_task(ctx.refresh_catalog(min_interval_s=0.0))
    await asyncio.sleep(0.01)  # that read has begun, before the DDL below
    source.names.add("after_ddl")
    ctx.note_catalog_change()
    await ctx.refresh_if_stale()
    await running
    assert "after_ddl" in ctx.catalog.sources["lite"].tables
    assert not ctx.catalog_stale


async def test_new_estimates_alone_are_a_new_version_of_the_same_shapes() -> None:
    """ANALYZE ran: cached plans are retired (a new version), statements prepared on the
    sources are not (their tables kept their shapes: no new schema epoch)."""
    source = SlowSource()
    ctx = _context(source)
    source.names.add("t")
    assert await ctx.refresh_catalog(min_interval_s=0.0)
    version, epoch = ctx.catalog.version, ctx.schema_epoch
    assert not await ctx.refresh_catalog(min_interval_s=0.0)  # nothing changed
    source.rows = 1000
    assert await ctx.refresh_catalog(min_interval_s=0.0)
    assert ctx.catalog.version == version + 1 and ctx.schema_epoch == epoch
    assert ctx.catalog.sources["lite"].tables["t"].row_estimate == 1000
