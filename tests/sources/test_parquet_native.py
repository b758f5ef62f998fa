"""DuckDB's own Parquet reader behind a Parquet source answers as the pyarrow path did.

A table that is one Parquet file is read through a `read_parquet` view
(connectors.files.parquet_views) when DuckDB types its columns as it types the pyarrow dataset
the catalog describes. These tests write real Parquet files and compare, for the same
SQL, the rows and the Arrow types of the native path with the pyarrow path (the dataset
registered with DuckDB, as every table was read before); they check that a file whose
types DuckDB reads differently keeps the pyarrow path, and that a file rewritten after
the gateway described it gives a clear error with a SQLSTATE, not rows of other types,
both from the source and through a real gateway process.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import asyncpg
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from connectors.duckdb.runner import DuckDBRunner
from connectors.files.source import FilesSource
from pgwire.errors import DATATYPE_MISMATCH, PgError
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.answers import collect

UTC = dt.UTC
# Every type a Parquet file commonly holds, each with a value, an edge and a NULL.
ROWS = {
    "id": pa.array([1, 2, 3], pa.int32()),
    "i2": pa.array([-32768, 7, None], pa.int16()),
    "i8": pa.array([9007199254740993, -1, None], pa.int64()),
    "f8": pa.array([float("nan"), -0.0, None], pa.float64()),
    "f4": pa.array([1.5, float("inf"), None], pa.float32()),
    "num": pa.array([Decimal("1234567.125"), Decimal("-0.001"), None], pa.decimal128(10, 3)),
    "wide": pa.array([Decimal("12345678901234567890.0123456789"), Decimal("0E-10"), None],
                     pa.decimal128(38, 10)),
    "s": pa.array(["h\u00e9llo \u2603", "", None]),
    "sv": pa.array(["a", "trailing ", None], pa.string_view()),
    "b": pa.array([True, False, None]),
    "d": pa.array([dt.date(2024, 2, 29), dt.date(1970, 1, 1), None]),
    "ts": pa.array([dt.datetime(2024, 3, 10, 2, 30, 0, 500000), dt.datetime(1999, 12, 31, 23, 59, 59),
                    None], pa.timestamp("us")),
    "tstz": pa.array([dt.datetime(2024, 3, 10, 7, 0, tzinfo=UTC),
                      dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), None],
                     pa.timestamp("us", tz="UTC")),
    "tsns": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 4), dt.datetime(1970, 1, 1), None],
                     pa.timestamp("ns")),
    "bin": pa.array([b"\x00\xff", b"", None]),
    "u": pa.array([uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").bytes, uuid.UUID(int=0).bytes,
                   None], pa.uuid()),
    "lst": pa.array([[1, None], [], None], pa.list_(pa.int64())),
}
QUERIES = (
    "SELECT * FROM {t} ORDER BY id",
    "SELECT id, s, num FROM {t} WHERE num > 0 AND s IS NOT NULL ORDER BY id",
    "SELECT id FROM {t} WHERE tstz >= TIMESTAMPTZ '2000-01-01 00:00:00+00' ORDER BY id",
    "SELECT count(*), sum(i8), sum(num), min(d), max(ts) FROM {t}",
    "SELECT id FROM {t} WHERE d IS NULL",
    # Row groups hold two rows; their min/max statistics leave NaN out, which must not
    # make DuckDB skip the row group holding it.
    "SELECT id FROM {t} WHERE f8 = CAST('NaN' AS DOUBLE)",
    "SELECT id FROM {t} WHERE f8 <> 1.5 ORDER BY id",
    "SELECT id FROM {t} WHERE f8 > 1e300 OR f4 > 1e30 ORDER BY id",
    "SELECT a.id FROM {t} AS a JOIN {t} AS b ON a.f8 = b.f8 ORDER BY a.id",
    "SELECT id FROM {t} ORDER BY f8 DESC NULLS LAST LIMIT 1",
)


def write(path: Path, table: pa.Table, **options) -> None:
    pq.write_table(table, path, row_group_size=2, **options)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    write(root / "every.parquet", pa.table(ROWS))
    # Millisecond timestamps: pyarrow reads TIMESTAMP_MS, DuckDB's reader TIMESTAMP.
    write(root / "millis.parquet", pa.table({
        "id": pa.array([1, 2], pa.int32()),
        "ms": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 123000), None], pa.timestamp("ms"))}))
    # Floats inside a list: a filter on them could not be kept from the statistics.
    write(root / "nested.parquet", pa.table({
        "id": pa.array([1, 2], pa.int32()), "fs": pa.array([[1.5, None], None])}))
    # A folder of Hive partitions stays with pyarrow (its `year` column is pyarrow's).
    (root / "parted" / "year=2024").mkdir(parents=True)
    write(root / "parted" / "year=2024" / "part-0.parquet",
          pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["x", None]}))
    return root


async def pyarrow_path(source: FilesSource, name: str, sql: str) -> pa.Table:
    """`sql` answered the way every table was read before: DuckDB over the dataset."""
    runner = DuckDBRunner.open()
    try:
        return await collect(await runner.stream(sql, register={name: source.datasets[name]}))
    finally:
        runner.close()


async def test_native_path_is_taken_where_types_agree(files: Path) -> None:
    source = FilesSource("f", files)
    try:
        assert source.native_tables == {"every"}
        assert set(source.datasets) == {"every", "millis", "nested", "parted"}
    finally:
        await source.close()


@pytest.mark.parametrize("sql", QUERIES)
async def test_same_rows_and_types_as_the_pyarrow_path(files: Path, sql: str) -> None:
    source = FilesSource("f", files)
    try:
        text = sql.format(t='"every"')
        native = await collect(await source.run_remote(text))
        before = await pyarrow_path(source, "every", text)
        assert native.schema == before.schema
        assert native.to_pylist() == before.to_pylist() or _same_with_nan(native, before)
        assert native.num_rows > 0
        if "f8 = CAST" in sql:
            assert native.column("id").to_pylist() == [1]  # the NaN row
    finally:
        await source.close()


def _same_with_nan(a: pa.Table, b: pa.Table) -> bool:
    """Row equality where NaN equals NaN (Python's == says it does not)."""
    def key(value: object) -> object:
        return "NaN" if isinstance(value, float) and math.isnan(value) else value
    return [{k: key(v) for k, v in r.items()} for r in a.to_pylist()] == \
        [{k: key(v) for k, v in r.items()} for r in b.to_pylist()]


async def test_tables_on_the_pyarrow_path_answer_as_before(files: Path) -> None:
    source = FilesSource("f", files)
    try:
        for name in ("millis", "nested", "parted"):
            text = f'SELECT * FROM "{name}" ORDER BY id'
            got = await collect(await source.run_remote(text))
            assert got.schema == (await pyarrow_path(source, name, text)).schema
            assert got.to_pylist() == (await pyarrow_path(source, name, text)).to_pylist()
        assert (await collect(await source.run_remote('SELECT ms FROM "millis" WHERE id = 1'))
                ).column("ms").type == pa.timestamp("ms")
    finally:
        await source.close()


async def test_a_file_rewritten_with_other_types_is_an_error(files: Path) -> None:
    source = FilesSource("f", files)
    try:
        query = 'SELECT id, i8 FROM "every" ORDER BY id'
        assert (await collect(await source.run_remote(query))).num_rows == 3
        changed = pa.table({**ROWS, "i8": pa.array(["1", "2", None])})
        write(files / "every.parquet", changed)
        with pytest.raises(PgError) as caught:
            await source.run_remote(query)
        assert caught.value.sqlstate == DATATYPE_MISMATCH
        assert "every.parquet" in caught.value.message and '"i8"' in caught.value.message
        assert "VARCHAR" in caught.value.message and "BIGINT" in caught.value.message
        # A query not naming the table is not held up by it.
        write(files / "millis.parquet", pa.table({"id": pa.array([5], pa.int32())}))
        assert (await collect(await source.run_remote("SELECT 1 AS one"))).num_rows == 1
    finally:
        await source.close()


async def test_a_column_gone_from_the_file_is_an_error(files: Path) -> None:
    source = FilesSource("f", files)
    try:
        write(files / "every.parquet", pa.table({k: v for k, v in ROWS.items() if k != "tstz"}))
        with pytest.raises(PgError) as caught:
            await source.run_remote('SELECT id FROM "every"')
        assert caught.value.sqlstate == DATATYPE_MISMATCH
        assert 'no longer has column "tstz"' in caught.value.message
    finally:
        await source.close()


async def test_a_file_rewritten_with_the_same_types_is_read_anew(files: Path) -> None:
    source = FilesSource("f", files)
    try:
        # Other values and another column order: the view names its columns.
        reordered = pa.table({k: ROWS[k] for k in reversed(list(ROWS))}).slice(0, 1)
        write(files / "every.parquet", reordered)
        got = await collect(await source.run_remote('SELECT id, s FROM "every"'))
        assert got.to_pylist() == [{"id": 1, "s": "h\u00e9llo \u2603"}]
        got = await collect(await source.run_remote('SELECT count(*) AS n FROM "every"'))
        assert got.to_pylist() == [{"n": 1}]
    finally:
        await source.close()


async def test_a_deleted_file_is_an_undefined_table(files: Path) -> None:
    source = FilesSource("f", files)
    try:
        (files / "every.parquet").unlink()
        with pytest.raises(PgError) as caught:
            await source.run_remote('SELECT id FROM "every"')
        # The file was the table: with it gone, so is the table (the folder is listed again
        # on a miss), as a dropped table is in PostgreSQL.
        assert caught.value.sqlstate == "42P01", caught.value.message
        assert "every" in caught.value.message
    finally:
        await source.close()


async def test_scan_checks_the_file_too(files: Path) -> None:
    from connectors.base import ScanRequest, TableRef
    source = FilesSource("f", files)
    try:
        ref = TableRef("f", "every", remote_name="every")
        assert (await collect(await source.scan(ScanRequest(ref, ["id"], [], None)))).num_rows == 3
        write(files / "every.parquet", pa.table({**ROWS, "id": pa.array([1.0, 2.0, 3.0])}))
        with pytest.raises(PgError) as caught:
            await source.scan(ScanRequest(ref, ["id"], [], None))
        assert caught.value.sqlstate == DATATYPE_MISMATCH
    finally:
        await source.close()


def test_csv_tables_stay_on_pyarrow(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("id,s\n1,a\n2,\n")
    source = FilesSource("c", tmp_path, file_format="csv")
    assert source.native_tables == frozenset()
    assert isinstance(source.datasets["t"], ds.Dataset)


@pytest.fixture
def served(files: Path, tmp_path: Path) -> Iterator[GatewayProcess]:
    gateway = start_gateway(f'[catalog]\nsearch_path = ["f"]\n'
                            f'[sources.f]\nkind = "parquet"\npath = "{files}"\n', tmp_path / "gw")
    try:
        yield gateway
    finally:
        gateway.stop()


async def test_the_client_reads_the_error_and_the_session_goes_on(files: Path,
                                                                  served: GatewayProcess) -> None:
    conn = await asyncpg.connect(served.dsn)
    try:
        rows = await conn.fetch("SELECT id, num, tstz, d FROM every ORDER BY id")
        assert [r["num"] for r in rows] == [Decimal("1234567.125"), Decimal("-0.001"), None]
        assert rows[0]["tstz"] == dt.datetime(2024, 3, 10, 7, 0, tzinfo=UTC)
        assert rows[2]["d"] is None
        write(files / "every.parquet", pa.table({**ROWS, "num": pa.array([1.5, 2.5, None])}))
        with pytest.raises(asyncpg.PostgresError) as caught:
            await conn.fetch("SELECT id, num FROM every ORDER BY id")
        assert caught.value.sqlstate == DATATYPE_MISMATCH
        assert '"num"' in str(caught.value) and "DOUBLE" in str(caught.value)
        assert await conn.fetchval("SELECT count(*) FROM parted") == 2
    finally:
        await conn.close()
