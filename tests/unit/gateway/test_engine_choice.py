"""The automatic engine choice by size: on by default when a Spark cluster is configured,
off on a local Spark, an explicit spark_threshold_rows (0 included) winning either way.
(EXPLAIN's wording through a real gateway: tests/integration/test_federated_duckdb.py.)"""

from __future__ import annotations

import pytest

from gateway.config import parse_config
from gateway.config.model import SPARK_CLUSTER_THRESHOLD_ROWS
from gateway.state.engine_choice import engine_by_size


def engine_of(**keys: object):
    return parse_config({"engine": keys}).engine


@pytest.mark.parametrize(("keys", "threshold"), [
    ({}, 0),  # local[*], the default master
    ({"spark_master": "local[2]"}, 0),
    ({"spark_master": "local"}, 0),
    ({"spark_master": "spark://10.0.0.5:7077"}, SPARK_CLUSTER_THRESHOLD_ROWS),
    ({"spark_master": "yarn"}, SPARK_CLUSTER_THRESHOLD_ROWS),
    ({"spark_remote": "sc://10.0.0.5:15002"}, SPARK_CLUSTER_THRESHOLD_ROWS),
    ({"spark_remote": "sc://10.0.0.5:15002", "spark_threshold_rows": 0}, 0),
    ({"spark_master": "spark://10.0.0.5:7077", "spark_threshold_rows": 5000}, 5000),
    ({"spark_master": "local[*]", "spark_threshold_rows": 5000}, 5000),
])
def test_threshold_in_force(keys: dict, threshold: int) -> None:
    assert engine_of(**keys).size_threshold == threshold


def test_a_cluster_sends_work_over_the_default_threshold_to_spark() -> None:
    cluster = engine_of(spark_master="spark://10.0.0.5:7077")
    over = engine_by_size(cluster, SPARK_CLUSTER_THRESHOLD_ROWS + 1)
    assert over == ("spark", f"about {SPARK_CLUSTER_THRESHOLD_ROWS + 1} rows to combine, over "
                             f"spark_threshold_rows {SPARK_CLUSTER_THRESHOLD_ROWS}, the default on a cluster")
    assert engine_by_size(cluster, SPARK_CLUSTER_THRESHOLD_ROWS) == (
        "duckdb", f"about {SPARK_CLUSTER_THRESHOLD_ROWS} rows to combine, within "
                  f"spark_threshold_rows {SPARK_CLUSTER_THRESHOLD_ROWS}, the default on a cluster")
    assert engine_by_size(cluster, None) == (
        "duckdb", f"no row estimate to compare with spark_threshold_rows {SPARK_CLUSTER_THRESHOLD_ROWS}, "
                  "the default on a cluster")


def test_an_explicit_threshold_is_named_without_the_default_note() -> None:
    engine = engine_of(spark_remote="sc://10.0.0.5:15002", spark_threshold_rows=100)
    assert engine_by_size(engine, 101) == ("spark", "about 101 rows to combine, over spark_threshold_rows 100")


def test_no_threshold_means_duckdb_without_a_reason() -> None:
    """Off (local Spark, or 0 written): DuckDB, and EXPLAIN says just "Engine" as before."""
    assert engine_by_size(engine_of(), 10**12) == ("duckdb", "")
    assert engine_by_size(engine_of(spark_master="spark://h:7077", spark_threshold_rows=0), 10**12) == ("duckdb", "")
