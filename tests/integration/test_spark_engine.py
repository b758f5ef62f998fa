"""The Spark residual engine through the real gateway (a local Spark session).

Marked `spark`: the JVM start takes seconds, so these run once per test session. The
same cross-source queries as the DuckDB engine's tests must give the same answers.
"""

from __future__ import annotations

import asyncpg
import pytest
import sqlglot

from tests.integration.test_federated_duckdb import QUERIES, _approx, two_sources  # noqa: F401

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
async def spark_conn(two_sources):  # noqa: F811 - the fixture imported above
    gateway, _ = two_sources
    conn = await asyncpg.connect(gateway.dsn, command_timeout=300)
    await conn.execute("SET fedgate.engine = 'spark'")
    yield conn
    await conn.close()


@pytest.mark.parametrize("sql", QUERIES)
async def test_spark_answers_match_one_database(two_sources, spark_conn, sql: str) -> None:  # noqa: F811
    _, reference = two_sources
    got = [tuple(r.values()) for r in await spark_conn.fetch(sql)]
    want = reference.sql(sqlglot.transpile(sql, read="postgres", write="duckdb")[0]).fetchall()
    assert [_approx(row) for row in got] == [_approx(row) for row in want]


async def test_explain_names_the_spark_engine(spark_conn) -> None:
    lines = [r[0] for r in await spark_conn.fetch(
        "explain select c.tier, count(*) from orders o join customers c on o.cust = c.id group by 1")]
    assert any(line.startswith("Engine spark (SET fedgate.engine)") for line in lines)


async def test_division_by_zero_in_spark_is_22012(spark_conn) -> None:
    with pytest.raises(asyncpg.DivisionByZeroError):
        await spark_conn.fetch("select o.id / (c.id - c.id) from orders o join customers c "
                               "on o.cust = c.id limit 1")
    assert await spark_conn.fetchval("select count(*) from customers") == 97


async def test_group_by_distinct_in_spark(two_sources, spark_conn) -> None:  # noqa: F811
    """Spark has no GROUP BY DISTINCT: it gets the grouping sets PostgreSQL keeps."""
    _, reference = two_sources
    group = "from orders o join customers c on o.cust = c.id group by {} order by 1 nulls first, 2"
    got = [tuple(r.values()) for r in await spark_conn.fetch(
        "select c.tier, count(*) " + group.format("distinct rollup (c.tier), rollup (c.tier)"))]
    want = reference.sql("select c.tier, count(*) " + group.format("grouping sets ((c.tier), ())")).fetchall()
    assert got == want and len(want) > 1
