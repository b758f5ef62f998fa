"""Arrow fragments handed to a local Spark through per-query Parquet files.

A LocalRelation (what `createDataFrame(pyarrow.Table)` builds) holds every row inside the
plan, which made Spark's per-query overhead grow with the fragment; a local Spark now
reads big handed-over fragments from a scratch Parquet file instead. These tests, on a
real local Spark in this process, prove that the file path gives exactly the rows and
types `createDataFrame` gives (the engine of a cluster still uses the latter), that the
file is scanned in parallel, that small tables stay LocalRelations, and that no scratch
file outlives its query, whether it succeeds or fails.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from connectors.engines.spark import SparkEngine
from connectors.engines.spark_handover import FILE_ROWS, Handover
from connectors.engines.spark_jdbc import ReadSettings
from pgwire.errors import PgError

pytestmark = pytest.mark.spark

ROWS = FILE_ROWS + 5_000


def _table(rows: int = ROWS) -> pa.Table:
    """Every type the file path takes, with NULLs, extremes and sub-microsecond times."""
    ids = list(range(rows))
    base = dt.datetime(2024, 3, 1, 12, 30, 15, 123456)

    def nth(values: list, i: int):
        return None if i % 7 == 3 else values[i % len(values)]

    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "flag": pa.array([nth([True, False], i) for i in ids], pa.bool_()),
        "tiny": pa.array([nth([-128, 0, 127], i) for i in ids], pa.int8()),
        "small": pa.array([nth([-32768, 5, 32767], i) for i in ids], pa.int16()),
        "mid": pa.array([nth([-2**31, 7, 2**31 - 1], i) for i in ids], pa.int32()),
        "real": pa.array([nth([1.5, -0.25, 3.4e38], i) for i in ids], pa.float32()),
        "dbl": pa.array([nth([0.1, -1e308, float("inf"), float("nan")], i) for i in ids], pa.float64()),
        "money": pa.array([nth([Decimal("12345678901234.56"), Decimal("-0.01")], i) for i in ids],
                          pa.decimal128(16, 2)),
        "txt": pa.array([nth(["naïve", "", "it's \\ %", "x" * 300], i) for i in ids], pa.string()),
        "raw": pa.array([nth([b"\x00\xff", b""], i) for i in ids], pa.binary()),
        "day": pa.array([nth([dt.date(1, 1, 1), dt.date(2024, 2, 29), dt.date(9999, 12, 31)], i)
                         for i in ids], pa.date32()),
        "naive": pa.array([nth([base + dt.timedelta(seconds=i)], i) for i in ids], pa.timestamp("ns")),
        "aware": pa.array([nth([base + dt.timedelta(hours=i % 48)], i) for i in ids],
                          pa.timestamp("us", tz="America/New_York")),
    })


@pytest.fixture(scope="module")
async def engines() -> AsyncIterator[tuple[SparkEngine, SparkEngine]]:
    """A local engine (file handover) and one that believes it runs on a cluster
    (createDataFrame for everything); both share this process's one Spark session."""
    local = SparkEngine("local[2]")
    cluster = SparkEngine("local[2]", reads=ReadSettings(cluster=True))
    try:
        yield local, cluster
    finally:
        await local.close()
        await cluster.close()


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The OS temp dir, as the engine sees it, is this test's own directory."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


async def _answer(engine: SparkEngine, sql: str, table: pa.Table) -> pa.Table:
    stream = await engine.execute(sql, {"frag_0": table})
    return pa.Table.from_batches([b async for b in stream], schema=stream.schema)


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas and values, NaN equal to NaN (Arrow's equals says it is not)."""
    return a.schema == b.schema and repr(a.to_pylist()) == repr(b.to_pylist())


async def test_file_handover_gives_the_rows_and_types_of_create_dataframe(engines, scratch) -> None:
    local, cluster = engines
    table = _table()
    sql = "SELECT * FROM frag_0 ORDER BY id"
    via_file = await _answer(local, sql, table)
    via_relation = await _answer(cluster, sql, table)
    assert via_file.schema == via_relation.schema
    assert via_file.num_rows == ROWS
    assert _same(via_file, via_relation)
    # The instants survive: naive values are UTC, nanoseconds are cut to microseconds.
    first = via_file.slice(1, 1).to_pylist()[0]
    assert first["naive"] == dt.datetime(2024, 3, 1, 12, 30, 16, 123456, tzinfo=dt.UTC)
    assert first["aware"] == dt.datetime(2024, 3, 1, 13, 30, 15, 123456, tzinfo=dt.UTC)
    assert list(scratch.iterdir()) == []  # the query's scratch file went with it


async def test_aggregates_and_joins_agree_across_both_paths(engines, scratch) -> None:
    local, cluster = engines
    table = _table()
    sql = ("SELECT tiny, count(*) AS n, sum(money) AS total, max(naive) AS latest, "
           "count(DISTINCT txt) AS texts, sum(CASE WHEN flag THEN 1 ELSE 0 END) AS yes "
           "FROM frag_0 GROUP BY tiny ORDER BY tiny NULLS FIRST")
    assert _same(await _answer(local, sql, table), await _answer(cluster, sql, table))


async def test_big_tables_become_split_file_scans_and_small_ones_stay_local(engines, scratch) -> None:
    local, _ = engines
    session = (await local._sessions.get()).newSession()
    handover = Handover(local=True, parts=2)
    try:
        big = handover.dataframe(session, _table(50_000).select(["id", "money", "txt"]))
        small = handover.dataframe(session, _table(100))
        assert big.inputFiles() and Path(big.inputFiles()[0].removeprefix("file:")).parents[2] == scratch
        assert big.rdd.getNumPartitions() >= 2  # scanned on both cores
        assert small.inputFiles() == []  # a LocalRelation
        assert big.count() == 50_000
    finally:
        handover.close()
    assert list(scratch.iterdir()) == []


async def test_a_failing_query_leaves_no_scratch_file(engines, scratch) -> None:
    local, _ = engines
    with pytest.raises(PgError) as failure:
        await _answer(local, "SELECT id / (mid - mid) FROM frag_0", _table())
    assert failure.value.sqlstate == "22012"
    assert list(scratch.iterdir()) == []


async def test_describe_matches_the_executed_schema_without_running(engines) -> None:
    local, _ = engines
    table = _table(10)
    sql = ("SELECT id, money * 2 AS m, naive, aware, day, sum(real) OVER () AS s FROM frag_0 "
           "WHERE txt <> :p1")
    described = await local.describe(sql, {"frag_0": table.schema}, ["x"])
    stream = await local.execute(sql, {"frag_0": table}, ["x"])
    assert described == stream.schema


def test_local_engines_shuffle_into_one_partition_per_core() -> None:
    assert SparkEngine("local[3]").conf["spark.sql.shuffle.partitions"] == "3"
    assert SparkEngine("spark://127.0.0.1:7077").conf["spark.sql.shuffle.partitions"] == "8"
    assert SparkEngine("local[3]", conf={"spark.sql.shuffle.partitions": 5}) \
        .conf["spark.sql.shuffle.partitions"] == "5"
