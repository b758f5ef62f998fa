"""Object-storage locations, their errors, EXPLAIN's partition lines, and what Spark is
told of object-storage and Delta sources (no store is contacted: making a source reads
nothing)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import sqlglot
from deltalake import DeltaTable, write_deltalake
from pyiceberg.expressions import AlwaysTrue, And, EqualTo, GreaterThan, In, IsNull, Not

from connectors.delta.source import VERSIONED, DeltaSource
from connectors.engines.spark_jdbc import ReadSettings, plan_read
from connectors.files.object_source import ObjectStoreSource
from connectors.files.object_store import S3Location, store_error
from connectors.files.pruning import file_lines, partition_lines
from connectors.iceberg.expressions import to_iceberg


def test_a_location_is_a_bucket_and_a_prefix() -> None:
    location = S3Location.parse("s3://lake/events/2024/", endpoint="http://127.0.0.1:9000")
    assert (location.bucket, location.prefix, location.root) == ("lake", "events/2024",
                                                                 "lake/events/2024")
    assert location.url == "s3://lake/events/2024/"
    assert S3Location.parse("s3://lake").root == "lake"
    for bad in ("s3:///prefix/", "gs://lake/", "s3://lake/p?versionId=1"):
        with pytest.raises(ValueError):
            S3Location.parse(bad)


def test_credentials_stay_out_of_the_repr_and_the_errors() -> None:
    location = S3Location.parse("s3://lake/", access_key_id="AKIDSECRETISH",
                                secret_access_key="very-secret")
    assert "very-secret" not in repr(location) and "AKIDSECRETISH" not in repr(location)
    error = store_error("lake", location, OSError(
        "When listing objects under key '' in bucket 'lake': AWS Error ACCESS_DENIED during "
        "ListObjectsV2 operation: Access Denied"))
    assert error.sqlstate == "08001"
    assert error.message.startswith('source "lake" is unavailable: s3://lake/: access denied')
    assert "very-secret" not in f"{error.message} {error.hint} {error.detail}"
    lost = store_error("lake", location, FileNotFoundError("NoSuchBucket: bucket lake"), lost=True)
    assert lost.sqlstate == "08006" and "the bucket does not exist" in lost.message


def _partitioned(root: Path) -> ds.Dataset:
    for year in (2023, 2024):
        for month in (1, 2):
            folder = root / "t" / f"year={year}" / f"month={month}"
            folder.mkdir(parents=True)
            pq.write_table(pa.table({"v": [year * 10 + month]}), folder / "p.parquet")
    return ds.dataset(str(root / "t"), format="parquet", partitioning="hive")


def test_partition_lines_name_the_folders_read_and_pruned(tmp_path: Path) -> None:
    dataset = _partitioned(tmp_path)
    roots = {"t": str(tmp_path / "t")}
    lines = partition_lines("f", 'SELECT v FROM "t" AS t WHERE year = 2024 AND v > 0',
                            {"t": dataset}, roots)
    assert lines == ["Partitions of f.t: 2 of 4 folders read (year=2024/month=1, "
                     "year=2024/month=2), 2 pruned (year=2023/month=1, year=2023/month=2) "
                     "by (year == 2024)"]
    # A join, or a conjunct pyarrow does not evaluate exactly, claims no pruning.
    assert partition_lines("f", "SELECT * FROM t JOIN t AS u ON t.v = u.v", {"t": dataset},
                           roots) == []
    assert partition_lines("f", "SELECT v FROM t WHERE year + 1 = 2025", {"t": dataset},
                           roots)[0].startswith("Partitions of f.t: all 4 folders read")


def test_file_lines_count_files_skipped_by_statistics(tmp_path: Path) -> None:
    write_deltalake(str(tmp_path / "d"), pa.table({"id": pa.array(range(10), pa.int64())}))
    write_deltalake(str(tmp_path / "d"), pa.table({"id": pa.array(range(100, 110), pa.int64())}),
                    mode="append")
    dataset = DeltaTable(str(tmp_path / "d")).to_pyarrow_dataset()
    assert file_lines("dl", "SELECT id FROM d WHERE id >= 100", {"d": dataset}, {"d": 1}) == [
        "Files of dl.d (version 1): 1 of 2 read, 1 skipped by partition values and statistics "
        "for (id >= 100)"]


def test_versioned_names() -> None:
    assert VERSIONED.match("sales@v12").group("table", "version") == ("sales", "12")
    assert VERSIONED.match("a@b@v0").group("table") == "a@b"
    for name in ("sales@v", "sales@v01", "sales@12", "sales@v-1", "@v1"):
        assert VERSIONED.match(name) is None, name


@pytest.mark.parametrize("make", [
    lambda: ObjectStoreSource("lake", S3Location.parse("s3://lake/")),
    lambda: DeltaSource("lake", S3Location.parse("s3://lake/delta/")),
])
async def test_spark_is_told_why_the_gateway_hands_the_rows_over(make) -> None:
    source = make()
    try:
        why = await plan_read("frag_0", source, "SELECT 1", (), None,
                              ReadSettings(mode="always"), None, 1)  # type: ignore[arg-type]
        assert isinstance(why, str) and "the gateway hands Spark" in why
    finally:
        await source.close()


def test_only_exact_conjuncts_become_iceberg_filters() -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("f", pa.float64())])

    def conjuncts(where: str) -> list:
        tree = sqlglot.parse_one(f"SELECT * FROM t WHERE {where}", read="duckdb")
        return list(tree.args["where"].this.flatten()) if " AND " in where else \
            [tree.args["where"].this]

    assert to_iceberg(conjuncts("id = 3 AND s > 'b'"), schema) == And(EqualTo("id", 3),
                                                                     GreaterThan("s", "b"))
    # Floats (NaN's order), computed values and casts stay with DuckDB: no filter from them.
    assert to_iceberg(conjuncts("f > 1"), schema) == AlwaysTrue()
    assert to_iceberg(conjuncts("id + 1 = 3 AND CAST(s AS INT) = 1"), schema) == AlwaysTrue()
    assert to_iceberg(conjuncts("NOT id IN (1, -2) AND s IS NULL"), schema) == And(
        Not(In("id", {1, -2})), IsNull("s"))
    # A quote in a value is the value.
    assert to_iceberg(conjuncts("s = 'a'' OR ''1''=''1'"), schema) == EqualTo("s", "a' OR '1'='1")
