"""Dynamic filters inside queries with subqueries, through a real gateway (planner.scope_filters).

A database of our own on the session PostgreSQL holds `big` (20,000 rows, a few with a
NULL key); a Parquet source holds `small` (5,001 rows: 100 flagged keys and a flagged
NULL) and `tiny` (10 rows). Every query has a subquery in an expression, so the engine
runs it whole over separate fragments, and:

- the keys the SQL allows narrow the PostgreSQL fragment (EXPLAIN ANALYZE says so, and
  PostgreSQL sends fewer rows): a chain tiny -> small -> big, a correlated NOT EXISTS
  and scalar subquery (the outer keys narrow the subquery), a positive IN (the
  subquery's keys narrow the outer rows);
- the keys it does not allow narrow nothing: NOT IN (the NULL in the subquery makes its
  answer empty) and the outer side of a NOT EXISTS.

Every answer is PostgreSQL's own over the same rows (a `reference` schema holds copies
of the Parquet tables), with dynamic filtering on and off. A narrowed scan's fenced form,
split into page ranges, returns its rows once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import asyncpg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connectors.postgres import parallel as pg_parallel
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, new_database

DATABASE = "fedgate_scope_filters"
BIG = 20_000


def _small() -> pa.Table:
    keys = list(range(5000)) + [None]
    return pa.table({"k": pa.array(keys, pa.int64()),
                     "flag": [k is None or k % 50 == 0 for k in keys],
                     "n": pa.array([(k or 0) % 10 for k in keys], pa.int32())})


def _tiny() -> pa.Table:
    return pa.table({"n": pa.array(range(10), pa.int32()), "name": [f"n{i}" for i in range(10)]})


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[GatewayProcess, str]]:
    root = tmp_path_factory.mktemp("scope_filters")
    (root / "files").mkdir()
    tables = {"small": _small(), "tiny": _tiny()}
    for name, table in tables.items():
        pq.write_table(table, root / "files" / f"{name}.parquet")

    async def setup() -> str:
        dsn = await new_database(postgres_server, DATABASE)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(
                "CREATE TABLE big AS SELECT i::bigint AS id, CASE WHEN i % 997 = 0 THEN NULL "
                f"ELSE (i % 5000)::bigint END AS k, (i % 7)::int AS g FROM generate_series(1, {BIG}) AS i")
            await conn.execute("ALTER TABLE big ADD PRIMARY KEY (id)")
            await conn.execute("CREATE SCHEMA reference")
            await conn.execute("CREATE TABLE reference.small (k bigint, flag boolean, n int)")
            await conn.execute("CREATE TABLE reference.tiny (n int, name text)")
            for name, table in tables.items():
                await conn.copy_records_to_table(name, schema_name="reference", columns=table.column_names,
                                                 records=list(zip(*(c.to_pylist() for c in table.columns))))
            await conn.execute("ANALYZE")
        finally:
            await conn.close()
        return dsn

    dsn = asyncio.run(setup())
    gateway = start_gateway('[catalog]\nsearch_path = ["pg", "files"]\n'
                            f'[sources.pg]\nkind = "postgres"\ndsn = "{dsn}"\nschema = "public"\n'
                            f'[sources.files]\nkind = "parquet"\npath = "{root / "files"}"\n',
                            root / "gateway")
    try:
        yield gateway, dsn
    finally:
        gateway.stop()


# (name, SQL, whether the PostgreSQL fragment that holds `big` is narrowed)
CASES = [
    ("chain tiny -> small -> big",
     ("SELECT b.g, count(*) AS c FROM big b, small s, tiny t WHERE b.k = s.k AND s.n = t.n "
      "AND t.name = 'n3' AND b.g >= (SELECT min(g) FROM tiny, big WHERE tiny.n = big.g) "
      "GROUP BY b.g ORDER BY b.g"), True),
    ("NOT EXISTS: the outer keys narrow the subquery",
     ("SELECT count(*) AS c FROM small s WHERE s.flag "
      "AND NOT EXISTS (SELECT 1 FROM big b WHERE b.k = s.k AND b.g < 3)"), True),
    ("correlated scalar subquery: the outer keys narrow both scans",
     ("SELECT count(*) AS c, sum(b.g) AS g FROM small s, big b WHERE s.k = b.k AND s.flag "
      "AND b.g < (SELECT avg(b2.g) FROM big b2 WHERE b2.k = s.k)"), True),
    ("IN: the subquery's keys narrow the outer rows",
     "SELECT count(*) AS c, sum(b.g) AS g FROM big b WHERE b.k IN (SELECT s.k FROM small s WHERE s.flag)",
     True),
    ("NOT EXISTS: the subquery's keys never narrow the outer rows",
     ("SELECT count(*) AS c, sum(b.g) AS g FROM big b "
      "WHERE NOT EXISTS (SELECT 1 FROM small s WHERE s.k = b.k AND s.flag)"),
     False),
    ("NOT IN: a NULL in the subquery empties the answer, nothing is narrowed",
     "SELECT count(*) AS c, sum(b.g) AS g FROM big b WHERE b.k NOT IN (SELECT s.k FROM small s WHERE s.flag)",
     False),
]


def _numbers(rows: list[tuple]) -> list[tuple]:
    """Rows with every number as a float (avg is numeric on PostgreSQL, double here)."""
    return [tuple(None if v is None else float(v) for v in row) for row in rows]


def _pg_rows(lines: list[str]) -> list[int]:
    """Rows each PostgreSQL fragment sent, from EXPLAIN ANALYZE."""
    return [int(x.split(": ")[1].split(" rows")[0]) for x in lines
            if x.startswith("Analyze frag_") and " on pg:" in x]


@pytest.mark.parametrize(("name", "sql", "narrowed"), CASES, ids=[c[0] for c in CASES])
async def test_subquery_scopes_narrow_only_what_their_sql_allows(world, name: str, sql: str,
                                                                 narrowed: bool) -> None:
    gateway, dsn = world
    direct = await asyncpg.connect(dsn)
    conn = await asyncpg.connect(gateway.dsn)
    try:
        await direct.execute("SET search_path = public, reference")
        want = [tuple(r.values()) for r in await direct.fetch(sql)]
        for setting in ("on", "off"):
            await conn.execute(f"SET fedgate.dynamic_filtering = {setting}")
            got = [tuple(r.values()) for r in await conn.fetch(sql)]
            assert _numbers(got) == _numbers(want), (name, setting)
        await conn.execute("SET fedgate.dynamic_filtering = on")
        lines = [r[0] for r in await conn.fetch("EXPLAIN ANALYZE " + sql)]
    finally:
        await conn.close()
        await direct.close()
    notes = [x for x in lines if x.startswith("Dynamic filter:")]
    big_fragments = [x.split()[1] for x in lines if x.lstrip().startswith("Remote frag_") and " on pg:" in x
                     and '"big"' in x]
    narrowed_big = [f for f in big_fragments if any(x.startswith(f"Dynamic filter: {f} narrowed") for x in notes)]
    if name.startswith("chain"):  # small is narrowed by tiny first, then narrows big
        assert len([x for x in notes if " narrowed to " in x]) == 2, "\n".join(lines)
    if narrowed:
        assert narrowed_big, "\n".join(lines)
        assert min(_pg_rows(lines)) < BIG // 10, "\n".join(lines)
    else:
        assert not narrowed_big, "\n".join(lines)
        assert max(_pg_rows(lines)) == BIG, "\n".join(lines)


async def test_a_fenced_scan_split_in_page_ranges_returns_its_rows_once(world) -> None:
    """The form a narrowed scan takes on PostgreSQL (planner.physical.fenced), cut into
    page ranges inside the fence (connectors.postgres.parallel), returns the same rows."""
    _, dsn = world
    sql = ("SELECT b.id, b.g FROM (SELECT b.id, b.g, b.k FROM public.big AS b "
           "WHERE b.k = ANY(CAST('{3,50,700,4999}' AS BIGINT[])) OFFSET 0) AS b WHERE b.g < 5")
    tree = pg_parallel.single_table_scan(sql)
    assert tree is not None
    conn = await asyncpg.connect(dsn)
    try:
        pages = await conn.fetchval("SELECT pg_relation_size('big') / current_setting('block_size')::int")
        whole = sorted(tuple(r.values()) for r in await conn.fetch(sql))
        parts = []
        for piece in pg_parallel.split_sql(tree, pages, 3):
            plan_text = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + piece))
            assert "Tid Range Scan" in plan_text, plan_text
            parts.extend(tuple(r.values()) for r in await conn.fetch(piece))
    finally:
        await conn.close()
    assert whole and sorted(parts) == whole
