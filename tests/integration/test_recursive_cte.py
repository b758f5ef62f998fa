"""WITH RECURSIVE through the gateway, against PostgreSQL's own answers.

A recursive CTE cannot be inlined like a plain one, so the planner keeps its scope whole
(an opaque scope the engine runs, or a statement shipped whole to the one source its
tables live in); the CTE's name inside it is the CTE's rows, never a catalog table.
Checked here, each query run directly on PostgreSQL and through the gateway, with the
simple protocol (psycopg, text rows) and the extended one (asyncpg: Parse/Describe, then
binary rows by the described types), comparing column types and rows:
- no table at all (all residual: the engine runs it), with and without a column list,
  UNION ALL and UNION (which stops a cycle);
- a walk over a PostgreSQL table (shipped whole to PostgreSQL), over a Parquet table
  (shipped whole to DuckDB), and over one source joined with the other (the engine runs
  the recursion over both sources' fragments);
- a walk over the embedded demo's DuckDB tables (the session `gateway` fixture), whose
  nation table is copied into PostgreSQL for the comparison.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.answers import Answer, assert_described_alike, described, simple
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, fresh_database

# An org chart: 40 people, each reporting to (id - 1) // 3, the root to nobody.
PEOPLE = [(i, None if i == 0 else (i - 1) // 3, f"p{i}") for i in range(40)]
TEAMS = [(0, "core"), (1, "edge"), (2, "ops")]

TABLE_LESS = {
    "count_up": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) "
                "SELECT * FROM r",
    "no_column_list": "WITH RECURSIVE r AS (SELECT 1 AS n, 'a'::text AS s UNION ALL "
                      "SELECT n + 1, s || 'b' FROM r WHERE n < 4) SELECT n, s FROM r ORDER BY n DESC",
    "union_stops_a_cycle": "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n % 3 + 1 FROM r) "
                           "SELECT n FROM r ORDER BY n",
    "union_all_with_a_bound": "WITH RECURSIVE r(n, depth) AS (SELECT 1, 0 UNION ALL "
                              "SELECT n % 3 + 1, depth + 1 FROM r WHERE depth < 6) "
                              "SELECT n, depth FROM r ORDER BY depth",
    "fibonacci_int8": "WITH RECURSIVE f(i, a, b) AS (SELECT 1, 0::int8, 1::int8 UNION ALL "
                      "SELECT i + 1, b, a + b FROM f WHERE i < 80) SELECT i, a FROM f ORDER BY i",
    "two_ctes": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 6), "
                "s AS (SELECT n * 2 AS m FROM r) SELECT r.n, s.m FROM r JOIN s ON s.m = r.n ORDER BY 1",
    "count_rows": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100) "
                  "SELECT count(*), max(n), min(n) FROM r",
}

WALK = ("WITH RECURSIVE chain{cols} AS (SELECT id, 0{alias} FROM {people} WHERE boss IS NULL "
        "{union} SELECT p.id, c.depth + 1 FROM {people} p JOIN chain c ON p.boss = c.id) ")
WALKS = {
    "walk": WALK + "SELECT id, depth FROM chain ORDER BY id",
    "walk_counted": WALK + "SELECT depth, count(*) FROM chain GROUP BY depth ORDER BY depth",
    "walk_joined": WALK + "SELECT c.id, c.depth, t.name FROM chain c JOIN {teams} t ON t.id = c.id % 3 "
                          "WHERE c.depth > 1 ORDER BY c.id",
}
# (column list or none, UNION or UNION ALL)
FORMS = {"cols_all": ("(id, depth)", "", "UNION ALL"), "alias_union": ("", " AS depth", "UNION")}
# Where the tables are read from, through the gateway: both on PostgreSQL (shipped whole
# there), both Parquet (shipped whole to DuckDB), and one from each (the engine recurses).
PLACES = {"pg": ("pg.people", "pg.teams"), "files": ("files.people", "files.teams"),
          "mixed": ("pg.people", "files.teams")}


@dataclass
class World:
    truth: str
    gateway: GatewayProcess


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("recursive_cte")
    truth = fresh_database(postgres_server, "rec")
    with psycopg.connect(truth, autocommit=True) as conn:
        conn.execute("CREATE TABLE people (id int4 PRIMARY KEY, boss int4, name text)")
        conn.execute("CREATE TABLE teams (id int4 PRIMARY KEY, name text)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO people VALUES (%s, %s, %s)", PEOPLE)
            cur.executemany("INSERT INTO teams VALUES (%s, %s)", TEAMS)
    files = root / "files"
    files.mkdir()
    pq.write_table(pa.table({"id": pa.array([p[0] for p in PEOPLE], pa.int32()),
                             "boss": pa.array([p[1] for p in PEOPLE], pa.int32()),
                             "name": [p[2] for p in PEOPLE]}), files / "people.parquet")
    pq.write_table(pa.table({"id": pa.array([t[0] for t in TEAMS], pa.int32()),
                             "name": [t[1] for t in TEAMS]}), files / "teams.parquet")
    gateway = start_gateway(
        # Across sources the recursion is the engine's: the small Parquet tables are not
        # sent into PostgreSQL (planner.inline_sides).
        '[engine]\ninline_rows = 0\n[catalog]\nsearch_path = ["pg", "files"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{truth}"\n'
        f'[sources.files]\nkind = "parquet"\npath = "{files}"\n', root / "gw")
    try:
        yield World(truth, gateway)
    finally:
        gateway.stop()


async def _assert_same(gateway_dsn: str, truth_dsn: str, gateway_sql: str, truth_sql: str) -> None:
    await assert_described_alike(truth_dsn, gateway_dsn, truth_sql, gateway_sql=gateway_sql)
    want, got = simple(truth_dsn, truth_sql), simple(gateway_dsn, gateway_sql)
    assert (got.types, got.rows) == (want.types, want.rows), "simple protocol"


@pytest.mark.parametrize("name", sorted(TABLE_LESS))
async def test_table_less_recursion_matches_postgres(world: World, name: str) -> None:
    await _assert_same(world.gateway.dsn, world.truth, TABLE_LESS[name], TABLE_LESS[name])


def _walk(name: str, form: str, people: str, teams: str) -> str:
    cols, alias, union = FORMS[form]
    return WALKS[name].format(cols=cols, alias=alias, union=union, people=people, teams=teams)


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("name", sorted(WALKS))
async def test_walk_over_tables_matches_postgres(world: World, name: str, form: str, place: str) -> None:
    people, teams = PLACES[place]
    await _assert_same(world.gateway.dsn, world.truth, _walk(name, form, people, teams),
                       _walk(name, form, "people", "teams"))


async def test_where_the_recursion_runs(world: World) -> None:
    """A walk over one source's tables ships whole to it; across sources the engine runs
    the recursion over each table's fragment; without tables it goes to the PostgreSQL
    source first on the search path (planner.plan._home_postgres), as a statement over
    that source's tables would."""
    async def explain(sql: str) -> list[str]:
        conn = await asyncpg.connect(world.gateway.dsn)
        try:
            return [r[0] for r in await conn.fetch("explain " + sql)]
        finally:
            await conn.close()

    # one PostgreSQL source's tables, qualified with its name: relayed whole
    shipped = await explain(_walk("walk_joined", "cols_all", *PLACES["pg"]))
    assert shipped[0].startswith('Relay: the whole statement goes to source "pg"'), shipped
    assert "WITH RECURSIVE" in shipped[1], shipped
    assert not any(line.startswith("Engine") for line in shipped), shipped
    mixed = await explain(_walk("walk_joined", "cols_all", *PLACES["mixed"]))
    engine = next(line for line in mixed if line.startswith("Engine"))
    assert engine.startswith("Engine: WITH RECURSIVE")
    assert sum(line.strip().startswith("Remote") for line in mixed) == 3, mixed
    table_less = await explain(TABLE_LESS["count_up"])
    assert [line.split(":")[0] for line in table_less if line.startswith(("Remote", "Engine"))] == \
        ["Remote frag_0 on pg"], table_less


async def test_a_recursive_cte_named_like_a_table_reads_the_cte(world: World) -> None:
    """Inside the WITH, `people` is the CTE, not the catalog table of that name."""
    sql = ("WITH RECURSIVE people(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM people WHERE n < 3) "
           "SELECT n FROM people ORDER BY n")
    await _assert_same(world.gateway.dsn, world.truth, sql, sql)


DEMO_WALKS = {
    "nation_hops": "WITH RECURSIVE hops(k, name, step) AS (SELECT n_nationkey, n_name, 0 FROM nation "
                   "WHERE n_nationkey = 0 UNION ALL SELECT n.n_nationkey, n.n_name, h.step + 1 "
                   "FROM nation n JOIN hops h ON n.n_nationkey = h.k + 7) SELECT * FROM hops ORDER BY step",
    "region_cycle": "WITH RECURSIVE r AS (SELECT n_regionkey AS k FROM nation WHERE n_nationkey = 3 "
                    "UNION SELECT (r.k + 1) % 5 FROM r) SELECT k FROM r ORDER BY k",
    "with_engine_join": "WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL SELECT n + 6 FROM r WHERE n < 20) "
                        "SELECT r.n, n.n_name FROM r JOIN nation n ON n.n_nationkey = r.n ORDER BY r.n",
}


@pytest.fixture(scope="module")
def demo_truth(gateway: GatewayProcess, postgres_server: PostgresServer) -> str:
    """A PostgreSQL database holding a copy of the demo's nation table."""
    truth = fresh_database(postgres_server, "rec_demo")
    with psycopg.connect(gateway.dsn, autocommit=True) as demo, \
            psycopg.connect(truth, autocommit=True) as conn:
        conn.execute("CREATE TABLE nation (n_nationkey int8, n_name text, n_regionkey int8, "
                     "n_comment text)")
        with conn.cursor().copy("COPY nation FROM STDIN") as copy:
            for row in demo.execute("select * from nation").fetchall():
                copy.write_row(row)
    return truth


@pytest.mark.parametrize("name", sorted(DEMO_WALKS))
async def test_demo_recursion_matches_postgres(gateway: GatewayProcess, demo_truth: str, name: str) -> None:
    await _assert_same(gateway.dsn, demo_truth, DEMO_WALKS[name], DEMO_WALKS[name])


async def test_items_may_read_later_items(world: World) -> None:
    """PostgreSQL resolves WITH RECURSIVE items in any order; the engines in order."""
    sql = ("WITH RECURSIVE a AS (SELECT n * 10 AS m FROM b), b(n) AS (SELECT 1 UNION ALL "
           "SELECT n + 1 FROM b WHERE n < 4) SELECT m FROM a ORDER BY m")
    await _assert_same(world.gateway.dsn, world.truth, sql, sql)


async def test_catalog_functions_beside_a_recursive_cte(world: World) -> None:
    """A CTE is no table: the statement is still table-less and the catalog answers."""
    sql = ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
           "SELECT n, pg_backend_pid() > 0 AS live, 'int4'::regtype::oid AS int4 FROM r ORDER BY n")
    await _assert_same(world.gateway.dsn, world.truth, sql, sql)


async def test_mutual_recursion_is_refused_as_postgresql_refuses_it(world: World) -> None:
    sql = ("WITH RECURSIVE a(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM b WHERE n < 3), "
           "b(n) AS (SELECT n FROM a) SELECT * FROM a")
    errors = []
    for dsn in (world.truth, world.gateway.dsn):
        conn = await asyncpg.connect(dsn)
        try:
            with pytest.raises(asyncpg.PostgresError) as caught:
                await conn.fetch(sql)
            errors.append((caught.value.sqlstate, str(caught.value)))
            assert await conn.fetchval("select 1") == 1  # the session stays usable
        finally:
            await conn.close()
    assert errors[1] == errors[0] == ("0A000", "mutual recursion between WITH items is not implemented")


@pytest.mark.spark
async def test_spark_engine_runs_the_recursion(world: World) -> None:
    """The same walk across both sources with the Spark engine: Spark re-reads its
    inputs, so the scans are not held in MATERIALIZED CTEs there."""
    sql = _walk("walk_joined", "cols_all", *PLACES["mixed"])
    want = await described(world.truth, _walk("walk_joined", "cols_all", "people", "teams"))
    conn = await asyncpg.connect(world.gateway.dsn, command_timeout=300)
    try:
        await conn.execute("SET fedgate.engine = 'spark'")
        statement = await conn.prepare(sql)
        got = Answer([a.type.name for a in statement.get_attributes()],
                     [tuple(r.values()) for r in await statement.fetch()])
    finally:
        await conn.close()
    assert (got.types, got.rows) == (want.types, want.rows)
