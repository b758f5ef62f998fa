"""Dynamic filters with more than a thousand keys, through a real gateway (planner.key_sets).

A database of our own on the session PostgreSQL holds `facts` (120,000 rows); a Parquet
source holds `dims` (30,000 rows) and `events` (60,000 rows). Joined on an integer, a text
or a date key, the filtered `dims` side has 1,200 to 9,000 distinct keys, more than an
IN list carries: PostgreSQL must receive them as one array literal and send only the
joinable rows. The text keys hold every character PostgreSQL's array syntax treats
specially; the fragment's SQL is the same when Spark reads it over JDBC (marked spark).
With `facts` as the build side, the Parquet probe gets a min/max range for integers and
is read whole for text. Every answer is PostgreSQL's own over the same rows
(a `reference` schema holds copies of the Parquet tables), with and without
`SET fedgate.dynamic_filtering`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, new_database

DATABASE = "fedgate_key_sets"
FACTS, DIMS, EVENTS = 120_000, 30_000, 60_000
DAY0 = dt.date(2000, 1, 1)


def text_key(k: int) -> str:
    """Keys spelled with what PostgreSQL array literals quote or escape."""
    special = ['q"{k}', "b\\{k}", "a'{k}", "{{{k},x}}", " {k} ", "NULL{k}", "é€{k}", "k{k}"]
    if k == 0:
        return ""
    if k == 1:
        return "NULL"
    return special[k % len(special)].format(k=k)


def _facts() -> pa.Table:
    ids = range(FACTS)
    keys = [i % 40_000 for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array(keys, pa.int64()),
                     "s": [text_key(k) for k in keys],
                     "d": pa.array([DAY0 + dt.timedelta(days=k % 4000) for k in keys], pa.date32()),
                     "v": pa.array([i % 97 for i in ids], pa.int32())})


def _dims() -> pa.Table:
    keys = range(DIMS)
    return pa.table({"k": pa.array(keys, pa.int64()), "s": [text_key(k) for k in keys],
                     "d": pa.array([DAY0 + dt.timedelta(days=k % 4000) for k in keys], pa.date32()),
                     "flag": [k % 10 < 3 for k in keys]})


def _events() -> pa.Table:
    ids = range(EVENTS)
    keys = [(i * 7) % 50_000 for i in ids]
    return pa.table({"k": pa.array(keys, pa.int64()), "s": [text_key(k) for k in keys],
                     "w": pa.array([i % 13 for i in ids], pa.int32())})


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[GatewayProcess, str]]:
    root = tmp_path_factory.mktemp("key_sets")
    (root / "files").mkdir()
    tables = {"facts": _facts(), "dims": _dims(), "events": _events()}
    pq.write_table(tables["dims"], root / "files" / "dims.parquet")
    pq.write_table(tables["events"], root / "files" / "events.parquet")

    async def setup() -> str:
        dsn = await new_database(postgres_server, DATABASE)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("CREATE SCHEMA reference")
            await conn.execute("CREATE TABLE facts (id bigint PRIMARY KEY, k bigint, s text, d date, v int)")
            await conn.execute("CREATE TABLE reference.dims (k bigint, s text, d date, flag boolean)")
            await conn.execute("CREATE TABLE reference.events (k bigint, s text, w int)")
            await conn.execute("CREATE TABLE more AS SELECT i AS id, i % 40000 AS k, i % 7 AS w "
                               "FROM generate_series(1, 80000) AS i")
            for name, schema in (("facts", "public"), ("dims", "reference"), ("events", "reference")):
                table = tables[name]
                await conn.copy_records_to_table(name, schema_name=schema, columns=table.column_names,
                                                 records=list(zip(*(c.to_pylist() for c in table.columns))))
            await conn.execute("ANALYZE")
        finally:
            await conn.close()
        return dsn

    dsn = asyncio.run(setup())
    gateway = start_gateway(_config(dsn, root / "files"), root / "gateway")
    try:
        yield gateway, dsn
    finally:
        gateway.stop()


def _config(dsn: str, files: Path, engine: str = "") -> str:
    return ('[catalog]\nsearch_path = ["pg", "files"]\n' + engine +
            f'[sources.pg]\nkind = "postgres"\ndsn = "{dsn}"\nschema = "public"\n'
            f'[sources.files]\nkind = "parquet"\npath = "{files}"\n')


def fetched(lines: list[str], source: str) -> int:
    line = next(x for x in lines if x.startswith("Analyze frag_") and f" on {source}:" in x)
    return int(line.split(": ")[1].split(" rows")[0])


async def run_both_ways(gateway: GatewayProcess, dsn: str, sql: str) -> tuple[list[str], list[str]]:
    """EXPLAIN ANALYZE with and without dynamic filtering; both answers must be PostgreSQL's."""
    reference = await asyncpg.connect(dsn)
    try:
        want = tuple(await reference.fetchrow(sql.replace(" dims ", " reference.dims ")
                                              .replace(" events ", " reference.events ")))
    finally:
        await reference.close()
    conn = await asyncpg.connect(gateway.dsn)
    try:
        narrowed = [r[0] for r in await conn.fetch("explain analyze " + sql)]
        assert tuple(await conn.fetchrow(sql)) == want
        await conn.execute("SET fedgate.dynamic_filtering = off")
        plain = [r[0] for r in await conn.fetch("explain analyze " + sql)]
        assert tuple(await conn.fetchrow(sql)) == want
    finally:
        await conn.close()
    assert want[0] > 0
    assert not any(line.startswith("Dynamic filter") for line in plain)
    return narrowed, plain


@pytest.mark.parametrize(("key", "keys", "element"), [("k", 9000, "BIGINT"), ("s", 9000, "TEXT"),
                                                      ("d", 1200, "DATE")])
async def test_postgres_probe_takes_the_keys_as_one_array(world, key: str, keys: int, element: str) -> None:
    gateway, dsn = world
    sql = f"select count(*), sum(f.v) from facts f join dims d on f.{key} = d.{key} where d.flag"
    narrowed, plain = await run_both_ways(gateway, dsn, sql)
    note = f"Dynamic filter: frag_0 narrowed to {keys} keys of frag_1 (f.{key}: one {element}[] array literal)"
    assert note in narrowed, narrowed
    assert fetched(plain, "pg") == FACTS
    assert fetched(narrowed, "pg") < FACTS * 0.35


async def test_parquet_probe_takes_a_range_of_integers(world) -> None:
    """`facts` (36,000 estimated rows after its filter, by its histogram) is read first;
    `events` narrowed by range."""
    gateway, dsn = world
    sql = "select count(*), sum(e.w) from facts f join events e on e.k = f.k where f.k < 12000"
    narrowed, plain = await run_both_ways(gateway, dsn, sql)
    assert any(line.startswith("Dynamic filter: frag_1 narrowed to 12000 keys of frag_0 (e.k: min/max range)")
               for line in narrowed), narrowed
    assert fetched(narrowed, "files") < fetched(plain, "files") * 0.5


async def test_parquet_probe_is_read_whole_for_many_text_keys(world) -> None:
    gateway, dsn = world
    sql = "select count(*), sum(e.w) from facts f join events e on e.s = f.s where f.k < 12000"
    narrowed, plain = await run_both_ways(gateway, dsn, sql)
    assert any(line.startswith("Dynamic filter: frag_1 not narrowed by the 12000 keys of frag_0 (e.s: read whole")
               for line in narrowed), narrowed
    assert fetched(narrowed, "files") == fetched(plain, "files") == EVENTS


async def test_a_join_on_two_keys_narrows_by_both(world) -> None:
    gateway, dsn = world
    sql = "select count(*), sum(f.v) from facts f join dims d on f.s = d.s and f.k = d.k where d.flag"
    narrowed, plain = await run_both_ways(gateway, dsn, sql)
    for key, element in (("s", "TEXT"), ("k", "BIGINT")):
        note = f"Dynamic filter: frag_0 narrowed to 9000 keys of frag_1 (f.{key}: one {element}[] array literal)"
        assert note in narrowed, narrowed
    assert fetched(narrowed, "pg") < FACTS * 0.35


@pytest.mark.spark
async def test_spark_reads_the_narrowed_postgres_fragment_over_jdbc(world, tmp_path: Path) -> None:
    """Spark reads the probe itself (JDBC, partitioned): the array literal travels in its query."""
    gateway, dsn = world
    files = Path(gateway.log_path.parent.parent / "files")
    spark = start_gateway(_config(dsn, files, '[engine]\ndefault = "spark"\nspark_reads_sources = "always"\n'
                                              "spark_partition_rows = 40000\n"), tmp_path)
    sql = "select count(*), sum(f.v) from facts f join dims d on f.k = d.k where d.flag"
    try:
        conn = await asyncpg.connect(spark.dsn, command_timeout=300)
        try:
            got = tuple(await conn.fetchrow(sql))
            narrowed = [r[0] for r in await conn.fetch("explain analyze " + sql)]
        finally:
            await conn.close()
    finally:
        spark.stop()
    reference = await asyncpg.connect(dsn)
    try:
        assert got == tuple(await reference.fetchrow(sql.replace(" dims ", " reference.dims ")))
    finally:
        await reference.close()
    assert any(line.startswith("Read frag_0 on pg: by spark itself, JDBC") for line in narrowed), narrowed
    assert "Dynamic filter: frag_0 narrowed to 9000 keys of frag_1 (f.k: one BIGINT[] array literal)" in narrowed


async def test_keys_also_narrow_what_the_probe_joins_them_to(world) -> None:
    """facts ⋈ more on k at PostgreSQL: the dims keys narrow `more` as well as `facts`,
    inside the pushed join or as a fragment of its own (whichever the plan makes)."""
    gateway, dsn = world
    sql = ("select count(*), sum(m.w) from facts f join more m on m.k = f.k "
           "join dims d on d.k = f.k where d.flag")
    narrowed, plain = await run_both_ways(gateway, dsn, sql)
    notes = [line for line in narrowed if line.startswith("Dynamic filter")]
    # more.k is an integer column (i % 40000): its array is INT[], which PostgreSQL hashes
    # (an integer = ANY(BIGINT[]) is searched linearly for every row).
    assert any("m.k" in line and "one INT[] array literal" in line for line in notes), notes
    assert any("f.k" in line and "BIGINT[] array literal" in line for line in notes), notes

    def pg_rows(lines: list[str]) -> int:
        return sum(int(x.split(": ")[1].split(" rows")[0]) for x in lines
                   if x.startswith("Analyze frag_") and " on pg:" in x)

    assert pg_rows(narrowed) < pg_rows(plain) * 0.35
