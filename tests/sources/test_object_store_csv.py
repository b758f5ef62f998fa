"""CSV in object storage: an ObjectStoreSource over a bucket of the S3 test server reads
CSV as a local folder's CSV is read (PostgreSQL's COPY conventions for NULL and empty)."""

from __future__ import annotations

from pathlib import Path

from connectors.base import count_rows
from connectors.files.object_source import ObjectStoreSource
from connectors.files.object_store import S3Location
from tests.support.s3_server import ACCESS_KEY_ID, SECRET_ACCESS_KEY, start_s3_server_process


async def test_csv_objects_are_tables(tmp_path: Path) -> None:
    s3 = start_s3_server_process(tmp_path / "store")
    bucket = s3.bucket("csvs")
    (bucket / "data").mkdir()
    (bucket / "data" / "people.csv").write_text('id,name,note\n1,ann,""\n2,bob,\n')
    (bucket / "data" / "visits").mkdir()
    for day in ("2024-01-01", "2024-01-02"):
        (bucket / "data" / "visits" / f"day={day}").mkdir()
        (bucket / "data" / "visits" / f"day={day}" / "v.csv").write_text("who\n1\n2\n")
    location = S3Location.parse("s3://csvs/data/", endpoint=s3.endpoint, region="us-east-1",
                                access_key_id=ACCESS_KEY_ID, secret_access_key=SECRET_ACCESS_KEY)
    source = ObjectStoreSource("c", location, file_format="csv")
    try:
        tables = {t.ref.name: t for t in await source.tables()}
        assert set(tables) == {"people", "visits"}
        assert tables["visits"].schema.names == ["who", "day"]
        stream = await source.run_remote(
            "SELECT id, name, note, note IS NULL AS missing FROM people ORDER BY id")
        batches = [batch async for batch in stream]
        rows = [row for batch in batches for row in batch.to_pylist()]
        # A quoted empty field is the empty string, an unquoted one NULL (as COPY writes).
        assert rows == [{"id": 1, "name": "ann", "note": "", "missing": False},
                        {"id": 2, "name": "bob", "note": None, "missing": True}]
        assert await count_rows(await source.run_remote("SELECT * FROM visits")) == 4
        lines = source.explain_fragment("SELECT who FROM visits WHERE day = '2024-01-02'")
        assert len(lines) == 1 and "1 of 2 folders read" in lines[0], lines
    finally:
        await source.close()
        s3.stop()
