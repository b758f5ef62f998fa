"""The 22 TPC-H queries through the gateway with the Spark engine (local mode), both splits.

One gateway mounts both splits and runs Spark by default, so the whole run starts one
Spark session; each connection picks its split with SET search_path. Answers are compared
with DuckDB's over the same data held locally, as for the DuckDB engine. On split b every
query runs through Spark (checked from EXPLAIN). The JDBC reads a cluster makes are
tested in tests/integration/test_spark_jdbc.py (a local Spark hands PostgreSQL over).
"""

from __future__ import annotations

import asyncpg
import pytest

from tests.federated import tpch_data
from tests.federated.compare import mismatch, order_columns
from tests.federated.conftest import NUMBERS, gateway_answer, query_text, search_path

pytestmark = pytest.mark.spark

CASES = [(split, n) for split in tpch_data.SPLITS for n in NUMBERS]


@pytest.mark.parametrize(("split", "number"), CASES, ids=[f"{s}-q{n:02d}" for s, n in CASES])
async def test_tpch_query_on_spark_matches_local_duckdb(spark_gateway, tpch_reference, split: str,
                                                        number: int) -> None:
    sql = query_text(number)
    names, got, explain = await gateway_answer(spark_gateway.dsn, sql, setup=(search_path(split),))
    if split == "b":
        assert any(line.startswith("Engine spark") for line in explain), explain
    want = tpch_reference.answer(number)
    assert want, f"q{number:02d} has no rows at this scale: the comparison would prove little"
    problem = mismatch(got, want, order_columns(sql, names))
    assert problem is None, f"q{number:02d} on split {split} (Spark): {problem}"



async def _analyze(dsn: str, split: str, sql: str) -> list[str]:
    conn = await asyncpg.connect(dsn, command_timeout=300)
    try:
        await conn.execute(search_path(split))
        return [r[0] for r in await conn.fetch("EXPLAIN ANALYZE " + sql)]
    finally:
        await conn.close()


async def test_local_spark_takes_postgres_as_arrow_and_reads_big_files_itself(spark_gateway) -> None:
    """Q9 with `spark_reads_sources = "auto"` on a local Spark: on split a, lineitem comes
    from PostgreSQL through the gateway's own reads (handed over, never JDBC); on split b
    orders is a Parquet file Spark reads with spark.read."""
    reads_a = [line for line in await _analyze(spark_gateway.dsn, "a", query_text(9))
               if line.startswith("Read ")]
    pg_reads = [line for line in reads_a if " on a_pg: " in line]
    assert pg_reads and all("handed over to spark as Arrow (Spark runs locally" in line
                            for line in pg_reads), reads_a
    assert not any("by spark itself, JDBC" in line for line in reads_a), reads_a
    reads_b = [line for line in await _analyze(spark_gateway.dsn, "b", query_text(9))
               if line.startswith("Read ")]
    assert any("on b_files: by spark itself, spark.read" in line for line in reads_b), reads_b
