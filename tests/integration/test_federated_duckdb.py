"""Cross-source queries through the real gateway: two DuckDB files mounted as two sources.

Answers are compared with the same query run by DuckDB over one database holding both
tables (the PostgreSQL query transpiled by sqlglot), so joins, aggregates and filters that
span sources are checked end to end: planning, fragments, the streaming feeds and the
engine.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import duckdb
import pytest
import sqlglot

from gateway.config.model import SPARK_CLUSTER_THRESHOLD_ROWS
from tests.support.slow import COUNT_TO
from tests.support.system import free_port
from tests.support.gateway_proc import GatewayProcess, start_gateway

ORDERS = "CREATE TABLE orders AS SELECT range AS id, range % 97 AS cust, (range * 7) % 1000 / 10.0 AS total, " \
         "DATE '2024-01-01' + CAST(range % 365 AS INTEGER) AS day FROM range(200000)"
CUSTOMERS = "CREATE TABLE customers AS SELECT range AS id, 'c' || range AS name, " \
            "CASE WHEN range % 3 = 0 THEN 'gold' ELSE 'basic' END AS tier FROM range(97)"


@pytest.fixture(scope="module")
def two_sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[GatewayProcess, duckdb.DuckDBPyConnection]:
    root = tmp_path_factory.mktemp("federated")
    for name, ddl in (("sales", ORDERS), ("crm", CUSTOMERS)):
        con = duckdb.connect(str(root / f"{name}.duckdb"))
        con.execute(ddl)
        con.close()
    reference = duckdb.connect()
    reference.execute(ORDERS)
    reference.execute(CUSTOMERS)
    gateway = start_gateway(
        '[catalog]\nsearch_path = ["sales", "crm"]\n'
        f'[sources.sales]\nkind = "duckdb"\npath = "{root / "sales.duckdb"}"\n'
        f'[sources.crm]\nkind = "duckdb"\npath = "{root / "crm.duckdb"}"\n', root / "gw")
    yield gateway, reference
    gateway.stop()


QUERIES = [
    "select c.tier, count(*), sum(o.total) from orders o join customers c on o.cust = c.id "
    "where o.day >= date '2024-06-01' group by c.tier order by c.tier",
    "select c.name, o.total from orders o join customers c on o.cust = c.id "
    "where c.tier = 'gold' and o.total > 99 order by o.total desc, o.id limit 5",
    "select c.id, count(o.id) from customers c left join orders o on o.cust = c.id and o.total > 99.5 "
    "group by c.id order by 2 desc, 1 limit 3",
    "select count(*) from orders o where o.cust in (select id from customers where tier = 'gold')",
    "select tier, n from (select c.tier, count(*) n from orders o, customers c where o.cust = c.id "
    "group by 1) x where n > 1000 order by tier",
]


@pytest.mark.parametrize("sql", QUERIES)
async def test_cross_source_answers_match_one_database(two_sources, sql: str) -> None:
    gateway, reference = two_sources
    conn = await asyncpg.connect(gateway.dsn)
    try:
        got = [tuple(r.values()) for r in await conn.fetch(sql)]
    finally:
        await conn.close()
    want = reference.sql(sqlglot.transpile(sql, read="postgres", write="duckdb")[0]).fetchall()
    assert [_approx(row) for row in got] == [_approx(row) for row in want]


def _approx(row: tuple) -> tuple:
    """Floating sums depend on the order rows arrive in: compare them to 1e-9."""
    return tuple(pytest.approx(float(v), rel=1e-9) if isinstance(v, float) or hasattr(v, "as_tuple")
                 else v for v in row)


async def test_explain_shows_a_fragment_per_source(two_sources) -> None:
    gateway, _ = two_sources
    conn = await asyncpg.connect(gateway.dsn)
    try:
        lines = [r[0] for r in await conn.fetch(
            "explain select c.name from orders o join customers c on o.cust = c.id where o.total > 99")]
    finally:
        await conn.close()
    text = "\n".join(lines)
    assert "Remote frag_0 on sales" in text and "Remote frag_1 on crm" in text
    assert "o.total > 99" in text.split("Remote frag_0 on sales")[1].split("\n")[0]


async def test_cancel_stops_a_cross_source_query(two_sources) -> None:
    gateway, _ = two_sources
    conn = await asyncpg.connect(gateway.dsn)
    try:
        # Slow by construction (tests/support/slow.py): a count a row per step, seeded by a
        # join across the two sources, so the engine runs it whatever the machine's speed.
        slow = (f"WITH RECURSIVE r(n) AS (SELECT count(*) FROM orders a JOIN customers c "
                f"ON a.cust = c.id UNION ALL SELECT n + 1 FROM r WHERE n < {COUNT_TO}) "
                f"SELECT count(*) FROM r")
        with pytest.raises(asyncio.TimeoutError):
            await conn.fetch(slow, timeout=1.0)
        assert await conn.fetchval("select count(*) from customers") == 97
    finally:
        await conn.close()


async def test_large_federated_work_goes_to_spark_by_estimate(two_sources, tmp_path: Path) -> None:
    """Above [engine] spark_threshold_rows EXPLAIN picks Spark and says why (no JVM needed)."""
    gateway, _ = two_sources
    config = gateway.log_path.parent / "fedgate.toml"
    auto = start_gateway(config.read_text() + "[engine]\nspark_threshold_rows = 1000\n", tmp_path)
    try:
        conn = await asyncpg.connect(auto.dsn)
        try:
            federated = "\n".join(r[0] for r in await conn.fetch(
                "explain select c.tier, count(*) from orders o join customers c on o.cust = c.id group by 1"))
            await conn.execute("SET fedgate.engine = 'duckdb'")
            chosen = "\n".join(r[0] for r in await conn.fetch(
                "explain select c.tier, count(*) from orders o join customers c on o.cust = c.id group by 1"))
        finally:
            await conn.close()
    finally:
        auto.stop()
    assert "Engine spark (about " in federated and "over spark_threshold_rows 1000)" in federated
    assert "Engine duckdb (SET fedgate.engine)" in chosen


async def test_on_a_cluster_the_size_choice_is_on_by_default(two_sources, tmp_path: Path) -> None:
    """A cluster configured and no spark_threshold_rows: the measured default decides, and
    EXPLAIN says so; 0 written turns it off. Nothing reaches the (absent) master: EXPLAIN
    plans without starting Spark."""
    gateway, _ = two_sources
    base = (gateway.log_path.parent / "fedgate.toml").read_text()
    sql = "explain select c.tier, count(*) from orders o join customers c on o.cust = c.id group by 1"
    said = {}
    for name, engine in (("default", ""), ("off", "spark_threshold_rows = 0\n")):
        cluster = start_gateway(base + f'[engine]\nspark_master = "spark://127.0.0.1:{free_port()}"\n'
                                + engine, tmp_path / name)
        try:
            conn = await asyncpg.connect(cluster.dsn)
            try:
                said[name] = [r[0] for r in await conn.fetch(sql)]
            finally:
                await conn.close()
        finally:
            cluster.stop()
    engine_line = next(line for line in said["default"] if line.startswith("Engine"))
    assert engine_line.startswith(f"Engine duckdb (about 200097 rows to combine, within spark_threshold_rows "
                                  f"{SPARK_CLUSTER_THRESHOLD_ROWS}, the default on a cluster): "), engine_line
    assert any(line.startswith("Engine: ") for line in said["off"]), said["off"]


async def test_dynamic_filter_narrows_the_bigger_side(two_sources) -> None:
    """The 97-row customers fragment is read first and orders fetch only joinable rows."""
    gateway, reference = two_sources
    sql = "select count(*), sum(o.total) from orders o join customers c on o.cust = c.id where c.tier = 'gold'"
    conn = await asyncpg.connect(gateway.dsn)
    try:
        narrowed = [r[0] for r in await conn.fetch("explain analyze " + sql)]
        answer = tuple(await conn.fetchrow(sql))
        await conn.execute("SET fedgate.dynamic_filtering = off")
        plain = [r[0] for r in await conn.fetch("explain analyze " + sql)]
        assert _approx(tuple(await conn.fetchrow(sql))) == _approx(answer)
    finally:
        await conn.close()
    want = reference.sql(sqlglot.transpile(sql, read="postgres", write="duckdb")[0]).fetchall()[0]
    assert _approx(answer) == _approx(want)

    def fetched(lines: list[str], source: str) -> int:
        line = next(x for x in lines if x.startswith("Analyze frag_") and f" on {source}:" in x)
        return int(line.split(": ")[1].split(" rows")[0])

    assert any(line.startswith("Dynamic filter: frag_0 narrowed to 33 keys of frag_1") for line in narrowed)
    assert not any(line.startswith("Dynamic filter") for line in plain)
    assert fetched(narrowed, "sales") < fetched(plain, "sales") / 2
