"""The 22 TPC-H queries through the gateway on a real Spark cluster, both splits, both
ways of reaching it: a standalone master (`spark_master = "spark://..."`, the gateway's
own driver, executors in the worker) and a Spark Connect server (`spark_remote =
"sc://..."`, whose applications run on the same master).

The cluster (tests/support/spark_cluster.py) is started once for this module and stopped
at its end; the TPC-H data, sources and reference answers are the session's shared ones.
On a cluster Spark reads every fragment it can itself (PostgreSQL through JDBC from the
executors, Parquet through spark.read), so these answers also prove the executors' reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from tests.federated import tpch_data
from tests.federated.compare import mismatch, order_columns
from tests.federated.conftest import NUMBERS, TpchWorld, gateway_answer, query_text, search_path
from tests.support.gateway_proc import GatewayProcess
from tests.support.spark_cluster import SparkCluster

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

MODES = ("standalone", "connect")
# On a cluster the executors read both (PostgreSQL by JDBC, Parquet by spark.read), so
# their first reads are warm too.
WARM = ("select count(*) from b_pg.region r join b_files.nation n "
        "on n.n_regionkey = r.r_regionkey")
CASES = [(mode, split, n) for mode in MODES for split in tpch_data.SPLITS for n in NUMBERS]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    spark = SparkCluster(tmp_path_factory.mktemp("spark_cluster")).start()
    try:
        yield spark
    finally:
        spark.stop()


@pytest.fixture(scope="module")
def cluster_gateways(cluster: SparkCluster, tpch_world: TpchWorld) -> Iterator[dict[str, GatewayProcess]]:
    """One gateway per mode, both splits mounted (a_pg, ..., b_files), Spark by default."""
    sources = "".join(f"[sources.{split}_{name}]\n{body}" for split in tpch_data.SPLITS
                      for name, body in tpch_world.sources(split).items())
    gateways = {}
    try:
        for mode in MODES:
            engine = cluster.gateway_engine_config(mode, spark_read_threshold_rows=10000,
                                                   spark_partition_rows=25000)
            gateways[mode] = tpch_world.start(f"spark_{mode}", engine + sources)
        # Both cold starts (a driver JVM and its executor, a Connect session) overlap here
        # instead of following one another in each mode's first query.
        with ThreadPoolExecutor(len(MODES)) as pool:
            for count in pool.map(_warm, gateways.values()):
                assert count == (25,)
        yield gateways
    finally:
        for gateway in gateways.values():
            gateway.stop()


def _warm(gateway: GatewayProcess) -> tuple | None:
    """A join across two sources, so it runs on Spark (the default engine here)."""
    with psycopg.connect(gateway.dsn, autocommit=True, connect_timeout=10) as conn:
        return conn.execute(WARM).fetchone()


@pytest.mark.parametrize(("mode", "split", "number"), CASES,
                         ids=[f"{m}-{s}-q{n:02d}" for m, s, n in CASES])
async def test_tpch_query_on_a_spark_cluster_matches_local_duckdb(
        cluster_gateways, tpch_reference, mode: str, split: str, number: int) -> None:
    sql = query_text(number)
    names, got, explain = await gateway_answer(cluster_gateways[mode].dsn, sql,
                                               setup=(search_path(split),))
    if split == "b":
        assert any(line.startswith("Engine spark") for line in explain), explain
    want = tpch_reference.answer(number)
    problem = mismatch(got, want, order_columns(sql, names))
    assert problem is None, f"q{number:02d} on split {split} (Spark {mode}): {problem}"


async def test_executors_read_postgres_through_jdbc(cluster_gateways) -> None:
    """On a cluster a big PostgreSQL fragment is read by the executors (JDBC), not the gateway."""
    import asyncpg

    for mode in MODES:
        conn = await asyncpg.connect(cluster_gateways[mode].dsn, command_timeout=300)
        try:
            await conn.execute(search_path("a"))
            lines = [r[0] for r in await conn.fetch("EXPLAIN ANALYZE " + query_text(3))]
        finally:
            await conn.close()
        reads = [line for line in lines if line.startswith("Read ") and " on a_pg: " in line]
        assert any("by spark itself, JDBC" in line for line in reads), (mode, lines)
