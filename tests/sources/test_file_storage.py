"""A file source's relation sizes are its files' bytes on disk, read when asked."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from connectors.base import Storage, StorageReporter
from connectors.files.source import FilesSource


async def test_a_file_and_a_folder_are_their_bytes(tmp_path: Path) -> None:
    table = pa.table({"id": list(range(100))})
    pq.write_table(table, tmp_path / "one.parquet")
    (tmp_path / "parted" / "year=2024").mkdir(parents=True)
    (tmp_path / "parted" / "year=2025").mkdir(parents=True)
    pq.write_table(table, tmp_path / "parted" / "year=2024" / "a.parquet")
    pq.write_table(table.slice(0, 10), tmp_path / "parted" / "year=2025" / "b.parquet")
    source = FilesSource("f", tmp_path)
    try:
        assert isinstance(source, StorageReporter)
        one = (tmp_path / "one.parquet").stat().st_size
        parted = sum(p.stat().st_size for p in (tmp_path / "parted").rglob("*.parquet"))
        assert await source.storage() == {"one": Storage(one, 0, 0, 0, one, 0, one),
                                          "parted": Storage(parted, 0, 0, 0, parted, 0, parted)}
        pq.write_table(pa.table({"id": list(range(10_000))}), tmp_path / "one.parquet")
        grown = (tmp_path / "one.parquet").stat().st_size
        assert grown > one and (await source.storage())["one"].main == grown  # live
    finally:
        await source.close()
