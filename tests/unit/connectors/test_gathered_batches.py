"""File sources hand their rows over in batches of about BATCH_ROWS rows, not one batch per
row group (each batch costs the wire encoder a fixed price): connectors.duckdb.runner's
gathered_batch, used by DuckDB streams started with gather=True and by ScannerStream."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from connectors.duckdb import runner
from connectors.duckdb.runner import BATCH_ROWS, gathered_batch
from connectors.files.source import FilesSource, ScannerStream

SCHEMA = pa.schema([("id", pa.int64())])


def _reader(batches: int, rows: int, pause_s: float = 0.0) -> pa.RecordBatchReader:
    def produce():
        for number in range(batches):
            if pause_s:
                time.sleep(pause_s)
            yield pa.record_batch([pa.array(range(number * rows, (number + 1) * rows),
                                            pa.int64())], schema=SCHEMA)
    return pa.RecordBatchReader.from_batches(SCHEMA, produce())


def test_small_batches_come_out_gathered_in_order_until_the_end(monkeypatch) -> None:
    monkeypatch.setattr(runner, "GATHER_WITHIN_S", 60.0)  # a loaded machine: no time cut
    reader = _reader(100, 1_000)
    first = gathered_batch(reader)
    assert first.num_rows == 66_000  # 66 batches: the first past BATCH_ROWS (65,536)
    rest = gathered_batch(reader)
    assert first.num_rows + rest.num_rows == 100_000
    assert gathered_batch(reader) is None and gathered_batch(reader) is None
    ids = first.column(0).to_pylist() + rest.column(0).to_pylist()
    assert ids == list(range(100_000))


def test_a_large_batch_and_a_lone_small_one_pass_as_they_are() -> None:
    reader = _reader(2, BATCH_ROWS)
    assert gathered_batch(reader).num_rows == BATCH_ROWS
    assert gathered_batch(_reader(1, 10)).num_rows == 10


def test_slow_batches_are_not_held_back(monkeypatch) -> None:
    monkeypatch.setattr(runner, "GATHER_WITHIN_S", 0.02)
    reader = _reader(20, 10, pause_s=0.01)
    began = time.monotonic()
    batch = gathered_batch(reader)
    assert batch.num_rows < 200 and time.monotonic() - began < 0.5


def _many_row_groups(path: Path, rows: int = 50_000) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(range(rows), pa.int64())}), path,
                   row_group_size=500)


def test_a_folder_table_streams_in_gathered_batches(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(runner, "GATHER_WITHIN_S", 60.0)
    _many_row_groups(tmp_path / "events" / "year=2024" / "part-0.parquet")
    _many_row_groups(tmp_path / "events" / "year=2025" / "part-0.parquet")
    source = FilesSource("files", tmp_path)

    async def read() -> list[int]:
        stream = await source.run_remote('SELECT id FROM "events"')
        return [batch.num_rows async for batch in stream]
    try:
        sizes = asyncio.run(read())
    finally:
        asyncio.run(source.close())
    assert sum(sizes) == 100_000
    assert len(sizes) <= 4, sizes  # was one batch per row group: 200


def test_a_scanner_stream_with_a_limit_stops_at_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(runner, "GATHER_WITHIN_S", 60.0)
    path = tmp_path / "t.parquet"
    _many_row_groups(path)
    dataset = ds.dataset(path)

    async def read(limit: int | None) -> list[int]:
        stream = ScannerStream(dataset.scanner(batch_size=BATCH_ROWS), limit)
        return [batch.num_rows async for batch in stream]
    assert asyncio.run(read(1_200)) == [1_200]  # three row groups read, sliced to the limit
    assert asyncio.run(read(None)) == [50_000]  # 100 row groups, one batch
