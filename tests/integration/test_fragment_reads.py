"""The executor reads a big PostgreSQL scan over several connections, and a fragment the
plan holds twice only once (gateway.executor.fragment_reads, connectors.postgres.parallel).

A database of our own on the session PostgreSQL (log_statement = all) holds `t`; a
Parquet file holds `groups`. The plan of a correlated query has `t` scanned twice under
two aliases, joined to the file. With the split threshold lowered to this table's size,
the statement log must show the scan cut into ctid ranges on one exported snapshot, and
no second scan for the copy; the answer must equal DuckDB's over the same rows.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connectors.postgres import parallel as pg_parallel
from connectors.engines.duckdb import DuckDBEngine
from connectors.files.source import FilesSource
from connectors.postgres.source import PostgresSource
from gateway.executor.execute import Executor, analyze
from planner import CatalogSnapshot, SourceEntry, plan
from planner.inline_sides import NO_INLINING
from planner.plan import PlanSettings
from tests.support.postgres import PostgresServer, new_database
from tests.support.planning import ENGINE_DIALECTS

DATABASE = "fedgate_fragment_reads"
ROWS = 40_000
QUERY = ("select f.name, count(*), sum(a.v) from pg.t a join files.groups f on f.g = a.g "
         "where a.v < (select avg(b.v) from pg.t b where b.g = a.g) group by 1 order by 1")


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("fragment_reads")

    async def setup() -> str:
        dsn = await new_database(postgres_server, DATABASE, "log_statement = 'all'")
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("CREATE TABLE t (id bigint PRIMARY KEY, g int, v int)")
            await conn.execute(f"INSERT INTO t SELECT x, x % 50, x % 997 FROM generate_series(1, {ROWS}) x")
            await conn.execute("ANALYZE t")
        finally:
            await conn.close()
        return dsn

    dsn = asyncio.run(setup())
    (root / "files").mkdir()
    pq.write_table(pa.table({"g": pa.array(range(50), pa.int32()), "name": [f"g{i:02d}" for i in range(50)]}),
                   root / "files" / "groups.parquet")
    yield dsn, root / "files"


async def test_split_scan_and_shared_copy(world, postgres_server: PostgresServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_parallel, "SPLIT_ROWS", ROWS // 4)
    monkeypatch.setattr(pg_parallel, "PART_ROWS", ROWS // 4)
    monkeypatch.setattr(pg_parallel, "MAX_PARTS", 2)
    dsn, files = world
    sources = {"pg": PostgresSource("pg", dsn), "files": FilesSource("files", files)}
    try:
        entries = {name: SourceEntry(name, s.dialect, {t.ref.name: t for t in await s.tables()})
                   for name, s in sources.items()}
        catalog = CatalogSnapshot(1, entries, engine_dialects=ENGINE_DIALECTS)
        # The engine's: the small Parquet side is not inlined into PostgreSQL.
        query_plan = plan(QUERY, catalog, PlanSettings(("pg", "files"), inlining=NO_INLINING))
        pg_sql = [f.sql for f in query_plan.fragments if f.source == "pg"]
        assert len(pg_sql) == 2 and pg_sql[0] != pg_sql[1]  # two aliases of one scan

        executor = Executor(sources, {"duckdb": DuckDBEngine()})
        log_before = len(postgres_server.log())
        stream = await executor.run(query_plan, [])
        got = [row for batch in [b async for b in stream] for row in zip(*batch.to_pydict().values())]
        log = postgres_server.log()[log_before:]
        lines = await analyze(executor, query_plan, [])
    finally:
        for source in sources.values():
            await source.close()

    reference = duckdb.connect()
    reference.execute(f"CREATE TABLE t AS SELECT range AS id, range % 50 AS g, range % 997 AS v "
                      f"FROM range(1, {ROWS + 1})")
    reference.execute(f"CREATE TABLE groups AS SELECT * FROM '{files / 'groups.parquet'}'")
    want = reference.sql(QUERY.replace("pg.", "").replace("files.", "")).fetchall()
    assert [(n, c, float(s)) for n, c, s in got] == [(n, c, float(s)) for n, c, s in want]

    scans = [line for line in log.splitlines() if re.search(r'COPY \(SELECT .* FROM "public"\."t"', line)]
    assert len(scans) == 2, scans  # one split scan for both copies: two ctid ranges, no third
    assert any("ctid >= CAST('(0,0)' AS tid) AND ctid < CAST(" in s for s in scans), scans
    assert any(re.search(r"ctid >= CAST\('\(\d+,0\)' AS tid\)\)? TO STDOUT", s) for s in scans), scans
    assert "pg_export_snapshot()" in log and "SET TRANSACTION SNAPSHOT" in log
    text = "\n".join(lines)
    assert re.search(r"Read frag_\d on pg: 2 connections, ctid ranges of t \(\d+ pages", text), text
    assert re.search(r"Read frag_\d, frag_\d on pg: the same query, read once for all 2", text), text
