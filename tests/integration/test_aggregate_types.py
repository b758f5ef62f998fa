"""Aggregate result types and values through the gateway's engines, against real PostgreSQL.

The same rows live in a PostgreSQL database (tables t and d) and in Parquet files (t.parquet,
d.parquet). Each query runs directly on PostgreSQL over t and d, and through the gateway
joining one table from each source (pg.t with files.d, and files.t with pg.d), so the
planner runs the aggregates in its residual engine (planner/pg_aggregates.py). Column by
column, the types a client sees must be PostgreSQL's: the RowDescription of a Describe
(asyncpg prepares, then reads binary rows by those types) and of a simple Query (psycopg,
text rows). Values must be equal; an average is compared at the smaller of the two display
scales (PostgreSQL chooses the scale per value, the engines per column) and a float4 sum
to float4 precision (PostgreSQL accumulates it in float4). The Spark engine runs a subset.

A query whose tables all live in one source that runs SQL in DuckDB is shipped whole to
it, with no engine: the same queries over files.t with files.d (Parquet) and over duck.t
with duck.d (a DuckDB file holding the same rows) must give PostgreSQL's types and values
too, and so must the embedded demo's DuckDB tables (the session `gateway` fixture), whose
tables are copied into PostgreSQL for the comparison.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import asyncpg
import duckdb
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.answers import Answer, described, simple
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, fresh_database

COLUMNS = (("k", "int4", pa.int32()), ("i2", "int2", pa.int16()), ("i4", "int4", pa.int32()),
           ("i8", "int8", pa.int64()), ("f4", "float4", pa.float32()), ("f8", "float8", pa.float64()),
           ("n", "numeric(12,2)", pa.decimal128(12, 2)), ("g", "int4", pa.int32()))
DUCKDB_TYPES = {"int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "float4": "REAL",
                "float8": "DOUBLE", "numeric(12,2)": "DECIMAL(12, 2)"}


def _rows() -> list[tuple]:
    """Negative values, NULLs in every column but k and g, and an int8 sum beyond int8."""
    rows = []
    for k in range(1, 61):
        rows.append((k % 3, k % 7 - 3 if k % 11 else None, k * 1000 - 7 if k % 13 else None,
                     k * 10**12 if k % 5 else (9 * 10**18 if k == 5 else None),
                     float(Decimal(k) / 3) if k % 6 else None, k * 1.25 if k % 4 else None,
                     Decimal(k * 37 % 1000) / 100 - Decimal("2.5") if k % 9 else None, k % 2))
    return rows


DIM = [(0, "zero"), (1, "one"), (2, "two")]

JOIN = "from {t} t join {d} d on t.k = d.k"
QUERIES = {
    "sums": "select count(*) c, count(t.i4) ci, sum(t.i2) s2, sum(t.i4) s4, sum(t.i8) s8, "
            "sum(t.f4) sf4, sum(t.f8) sf8, sum(t.n) sn " + JOIN,
    "averages": "select avg(t.i2) a2, avg(t.i4) a4, avg(t.i8) a8, avg(t.f4) af4, avg(t.f8) af8, "
                "avg(t.n) an " + JOIN,
    "grouped": "select d.name, sum(t.i4) s4, avg(t.n) an, avg(t.i2) a2, sum(t.i8) s8 " + JOIN +
               " group by d.name order by d.name",
    "min_max": "select min(t.i2) a, max(t.i4) b, min(t.i8) c, max(t.f4) e, min(t.n) f, max(t.n) g " + JOIN,
    "filter": "select d.name, sum(t.i4) filter (where t.g = 1) sf, avg(t.n) filter (where t.g = 0) af, "
              "count(*) filter (where t.g = 0) cf " + JOIN + " group by d.name order by 1",
    "window": "select t.i4, sum(t.i4) over (partition by t.k order by t.i4) w, "
              "avg(t.n) over (partition by t.k) wa, sum(t.f4) over (partition by t.g) wf " + JOIN +
              " where t.i4 is not null order by t.i4",
    "expressions": "select sum(t.i4) / 2 h, round(avg(t.n), 2) r, sum(t.i4) + 1 p, avg(t.i4) * 2 m, "
                   "sum(t.i2) * sum(t.i4) q " + JOIN,
    "no_rows": "select sum(t.i4) s, avg(t.n) a, avg(t.i8) b, count(*) c " + JOIN + " where t.k > 100",
    "derived": "select x.name, x.total from (select d.name, sum(t.i4) total, avg(t.n) mean " + JOIN +
               " group by d.name) x where x.mean > 0 order by 1",
    # The argument's scale is the product's (n * n: 4), not n's, which sqlglot annotates
    # (a generated finding: the average's digits were cut to n's scale).
    "products": "select avg(t.n * t.n) sq, avg(t.n * 1.5) m, avg(0.25 * t.n) q, "
                "avg(t.n * t.i4) ni, sum(t.n * t.n) ss, avg(t.n - t.n * 2) d " + JOIN,
}
SPARK_QUERIES = ("sums", "averages", "filter", "window")
# Gateway forms: a table from each source, both ways round, so the engine aggregates.
SPLITS = {"pg_t": ("pg.t", "files.d"), "files_t": ("files.t", "pg.d")}
# Both tables in one DuckDB-run source: the query is shipped whole, no engine.
WHOLE = {"files": ("files.t", "files.d"), "duck": ("duck.t", "duck.d")}


# Sums beyond what an average's fixed-scale dividend holds (10^25 for int8 at scale 13,
# 10^22 for numeric(20,4) at scale 16): a group of 1.2 million values near the maximum
# (the fewest that get there: the scale keeps six digits of headroom), beside a small
# negative group and a column whose average is ordinary, so one column mixes both kinds.
WIDE_COUNT = 1_200_000
WIDE_ROWS = ("SELECT CAST(CASE WHEN i % 1000 = 999 THEN 1 ELSE 0 END AS int4) AS k, "
             "CAST(CASE WHEN i % 1000 = 999 THEN -(9000000000000000000 - i % 7919) "
             "ELSE 9000000000000000000 - i % 9973 END AS int8) AS b, CAST(CASE WHEN i % 1000 = 999 "
             "THEN -(9999999999999999.9999 - (i % 7919) * 0.0003) "
             "ELSE 9999999999999999.9999 - (i % 9973) * 0.0001 END AS numeric(20,4)) AS n, "
             "CAST(i % 1000 AS int4) AS s FROM {series}")
WIDE_QUERIES = {
    "wide_averages": "select d.name, avg(w.b) ab, avg(w.n) an, avg(w.s) a_s, count(*) c, sum(w.b) sb "
                     "from {w} w join {d} d on w.k = d.k group by d.name order by d.name",
    "wide_filtered": "select avg(w.b) filter (where w.s < 500) ab, avg(w.n) filter (where w.k = 0) an, "
                     "avg(distinct w.s) ad from {w} w join {d} d on w.k = d.k",
}
WIDE_PLACES = {"pg_t": ("pg.w", "files.d"), "files_t": ("files.w", "pg.d"),
               "files": ("files.w", "files.d"), "duck": ("duck.w", "duck.d")}
WIDE_CASES = [("wide_averages", place) for place in sorted(WIDE_PLACES)] + \
    [("wide_filtered", "files_t"), ("wide_filtered", "duck")]


@dataclass
class World:
    truth: str  # the PostgreSQL database's DSN
    gateway: GatewayProcess


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("aggregate_types")
    truth = fresh_database(postgres_server, "agg")
    rows = _rows()
    with psycopg.connect(truth, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (" + ", ".join(f"{n} {t}" for n, t, _ in COLUMNS) + ")")
        conn.execute("CREATE TABLE d (k int4, name text)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO t VALUES (" + ", ".join(["%s"] * len(COLUMNS)) + ")", rows)
            cur.executemany("INSERT INTO d VALUES (%s, %s)", DIM)
    files = root / "files"
    files.mkdir()
    pq.write_table(pa.table({name: pa.array(values, arrow) for (name, _, arrow), values
                             in zip(COLUMNS, zip(*rows))}), files / "t.parquet")
    pq.write_table(pa.table({"k": pa.array([k for k, _ in DIM], pa.int32()),
                             "name": [n for _, n in DIM]}), files / "d.parquet")
    duck = root / "duck.duckdb"
    with duckdb.connect(str(duck)) as con:
        con.execute("CREATE TABLE t (" + ", ".join(f"{n} {DUCKDB_TYPES[t]}" for n, t, _ in COLUMNS) + ")")
        con.executemany("INSERT INTO t VALUES (" + ", ".join(["?"] * len(COLUMNS)) + ")", rows)
        con.execute("CREATE TABLE d (k INTEGER, name VARCHAR)")
        con.executemany("INSERT INTO d VALUES (?, ?)", DIM)
    with psycopg.connect(truth, autocommit=True) as conn:
        conn.execute("CREATE TABLE w (k int4, b int8, n numeric(20,4), s int4)")
        conn.execute("INSERT INTO w " + WIDE_ROWS.format(series="generate_series(0, %d) t(i)" % (WIDE_COUNT - 1)))
    with duckdb.connect(str(duck)) as con:
        wide = WIDE_ROWS.format(series=f"range({WIDE_COUNT}) t(i)")
        con.execute(f"CREATE TABLE w AS {wide}")
        con.execute(f"COPY ({wide}) TO '{files / 'w.parquet'}' (FORMAT parquet)")
    gateway = start_gateway(
        '[engine]\ninline_rows = 0  # tests of the engine: no side is inlined\n[catalog]\nsearch_path = ["pg", "files"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{truth}"\n'
        f'[sources.files]\nkind = "parquet"\npath = "{files}"\n'
        f'[sources.duck]\nkind = "duckdb"\npath = "{duck}"\n', root / "gw")
    try:
        yield World(truth, gateway)
    finally:
        gateway.stop()


def _same(got: object, want: object, pg_type: str) -> bool:
    if got is None or want is None:
        return got is None and want is None
    if pg_type == "float4":
        return got == pytest.approx(want, rel=1e-6)
    if isinstance(want, float):
        return got == pytest.approx(want, rel=1e-12)
    if isinstance(want, Decimal) and isinstance(got, Decimal):
        places = min(-got.as_tuple().exponent, -want.as_tuple().exponent)
        unit = Decimal(1).scaleb(-places)
        return got.quantize(unit, ROUND_HALF_UP) == want.quantize(unit, ROUND_HALF_UP)
    return got == want


def _assert_matches(got: Answer, want: Answer, label: str) -> None:
    assert got.types == want.types, f"{label}: types {got.types} != PostgreSQL's {want.types}"
    assert len(got.rows) == len(want.rows), label
    for got_row, want_row in zip(got.rows, want.rows):
        for column, (g, w, t) in enumerate(zip(got_row, want_row, want.types)):
            assert _same(g, w, t), f"{label}: column {column} ({t}): {g!r} != PostgreSQL's {w!r}"


def _sql(name: str, split: str | None) -> str:
    t, d = {**SPLITS, **WHOLE}[split] if split else ("t", "d")
    return QUERIES[name].format(t=t, d=d)


@pytest.mark.parametrize("split", sorted(SPLITS))
@pytest.mark.parametrize("name", sorted(QUERIES))
async def test_duckdb_engine_types_and_values_match_postgres(world: World, name: str, split: str) -> None:
    want = await described(world.truth, _sql(name, None))
    got = await described(world.gateway.dsn, _sql(name, split))
    _assert_matches(got, want, f"{name} on {split}, described")


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_simple_query_row_descriptions_match_postgres(world: World, name: str) -> None:
    want = simple(world.truth, _sql(name, None))
    got = simple(world.gateway.dsn, _sql(name, "pg_t"))
    _assert_matches(got, want, f"{name}, simple query")


async def test_the_engine_runs_the_aggregates(world: World) -> None:
    """The cases above are engine work, not a query relayed whole to PostgreSQL."""
    conn = await asyncpg.connect(world.gateway.dsn)
    try:
        lines = [r[0] for r in await conn.fetch("explain " + _sql("averages", "pg_t"))]
    finally:
        await conn.close()
    engine = next(line for line in lines if line.startswith("Engine"))
    # the exact average, written out for DuckDB (as an output: at PostgreSQL's per-value scale)
    assert "NULLIF(CAST(COUNT(" in engine


async def test_describe_alone_gives_the_types_rows_will_have(world: World) -> None:
    """A Describe without Execute (what JDBC and asyncpg read before any row)."""
    conn = await asyncpg.connect(world.gateway.dsn)
    try:
        statement = await conn.prepare(_sql("grouped", "files_t"))
        described = [a.type.name for a in statement.get_attributes()]
    finally:
        await conn.close()
    assert described == ["text", "int8", "numeric", "numeric", "numeric"]


@pytest.mark.spark
@pytest.mark.parametrize("name", SPARK_QUERIES)
async def test_spark_engine_types_and_values_match_postgres(world: World, name: str) -> None:
    want = await described(world.truth, _sql(name, None))
    got = await described(world.gateway.dsn, _sql(name, "pg_t"), "SET fedgate.engine = 'spark'")
    _assert_matches(got, want, f"{name} on spark")


@pytest.mark.parametrize("whole", sorted(WHOLE))
@pytest.mark.parametrize("name", sorted(QUERIES))
async def test_queries_shipped_whole_match_postgres(world: World, name: str, whole: str) -> None:
    want = await described(world.truth, _sql(name, None))
    got = await described(world.gateway.dsn, _sql(name, whole))
    _assert_matches(got, want, f"{name} on {whole}, described")


@pytest.mark.parametrize("whole", sorted(WHOLE))
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_simple_query_shipped_whole_matches_postgres(world: World, name: str, whole: str) -> None:
    want = simple(world.truth, _sql(name, None))
    got = simple(world.gateway.dsn, _sql(name, whole))
    _assert_matches(got, want, f"{name} on {whole}, simple query")


async def _explain(dsn: str, sql: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        return [r[0] for r in await conn.fetch("explain " + sql)]
    finally:
        await conn.close()


def _assert_shipped_whole(lines: list[str], source: str) -> str:
    """The one remote SQL of a plan without engine, sent to `source`."""
    remotes = [line for line in lines if line.startswith("Remote ")]
    assert len(remotes) == 1 and remotes[0].startswith(f"Remote frag_0 on {source}:"), lines
    assert not any(line.startswith("Engine") for line in lines), lines
    return remotes[0]


@pytest.mark.parametrize("whole", sorted(WHOLE))
@pytest.mark.parametrize("name", sorted(QUERIES))
async def test_the_whole_query_runs_on_the_source(world: World, name: str, whole: str) -> None:
    """The cases above take the no-engine path, where the source computes the aggregates."""
    sql = _sql(name, whole)
    remote = _assert_shipped_whole(await _explain(world.gateway.dsn, sql), whole)
    typed = "CAST(SUM(" in remote or "// NULLIF(COUNT(" in remote or "NULLIF(CAST(COUNT(" in remote
    assert typed == ("sum(" in sql or "avg(" in sql), remote


# The embedded demo's TPC-H tables (BIGINT keys, INTEGER sizes and quantities,
# DECIMAL(15,2) money) under queries that ship whole to the demo source.
DEMO_TABLES = ("nation", "supplier", "part", "partsupp")
DEMO_QUERIES = {
    "by_nation": "select n.n_name, count(*) c, sum(s.s_acctbal) sa, avg(s.s_acctbal) aa, "
                 "sum(s.s_nationkey) sk, avg(s.s_suppkey) ak from supplier s join nation n "
                 "on s.s_nationkey = n.n_nationkey group by n.n_name order by n.n_name",
    "by_brand": "select p_brand, sum(p_size) s, avg(p_size) a, avg(p_retailprice) r, sum(p_partkey) k "
                "from part group by p_brand order by p_brand",
    "join": "select sum(ps.ps_availqty) q, avg(ps.ps_availqty) aq, avg(ps.ps_supplycost) c, "
            "sum(ps.ps_supplycost * ps.ps_availqty) v, min(p.p_size) m, avg(ps.ps_partkey) k "
            "from partsupp ps join part p on p.p_partkey = ps.ps_partkey where p.p_size < 10",
    "derived": "select count(*) n, sum(x.s) ss, avg(x.a) aa from (select p_brand, sum(p_size) s, "
               "avg(p_size) a from part group by p_brand) x",
    "window": "select s_suppkey, sum(s_nationkey) over (order by s_suppkey rows between 2 preceding "
              "and current row) w, avg(s_acctbal) over (partition by s_nationkey) wa, "
              "sum(s_nationkey::int) over (partition by s_nationkey) wi from supplier "
              "order by s_suppkey limit 30",
}


def _pg_type(duckdb_type: str) -> str:
    return {"VARCHAR": "text", "DECIMAL(15,2)": "numeric(15,2)"}.get(duckdb_type, duckdb_type)


@pytest.fixture(scope="module")
def demo_truth(gateway: GatewayProcess, postgres_server: PostgresServer) -> str:
    """A PostgreSQL database holding copies of the demo's tables, read through the gateway."""
    from gateway.server.demo import TPCH_SCHEMA

    truth = fresh_database(postgres_server, "agg_demo")
    with psycopg.connect(gateway.dsn, autocommit=True) as demo, \
            psycopg.connect(truth, autocommit=True) as conn:
        for table in DEMO_TABLES:
            columns = TPCH_SCHEMA[table]
            conn.execute(f"CREATE TABLE {table} (" +
                         ", ".join(f"{n} {_pg_type(t)}" for n, t in columns) + ")")
            rows = demo.execute(f"select * from {table}").fetchall()
            with conn.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
    return truth


@pytest.mark.parametrize("name", sorted(DEMO_QUERIES))
async def test_demo_types_and_values_match_postgres(gateway: GatewayProcess, demo_truth: str,
                                                    name: str) -> None:
    sql = DEMO_QUERIES[name]
    _assert_shipped_whole(await _explain(gateway.dsn, sql), "demo")
    want = await described(demo_truth, sql)
    got = await described(gateway.dsn, sql)
    _assert_matches(got, want, f"demo {name}, described")
    _assert_matches(simple(gateway.dsn, sql), simple(demo_truth, sql), f"demo {name}, simple query")


@pytest.mark.parametrize(("name", "place"), WIDE_CASES)
async def test_averages_of_sums_beyond_the_dividend_match_postgres(world: World, name: str, place: str) -> None:
    """An exact average whose sum no DECIMAL(38, scale) holds: PostgreSQL answers, so must
    the engine (pg_t, files_t) and a DuckDB-run source (files, duck), digit for digit at
    PostgreSQL's display scale."""
    w, d = WIDE_PLACES[place]
    truth_sql = WIDE_QUERIES[name].format(w="w", d="d")
    sql = WIDE_QUERIES[name].format(w=w, d=d)
    _assert_matches(await described(world.gateway.dsn, sql), await described(world.truth, truth_sql),
                    f"{name} on {place}, described")
    if place in ("pg_t", "files"):
        _assert_matches(simple(world.gateway.dsn, sql), simple(world.truth, truth_sql),
                        f"{name} on {place}, simple query")
