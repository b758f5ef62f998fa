"""Which conjuncts become pyarrow dataset filters (connectors.files.filters): only those
whose literal is, without a doubt, a value of the column's type. The others stay with
DuckDB, which casts as PostgreSQL does or reports its error; pyarrow would raise on the
mismatch (it did, as XX000 from EXPLAIN)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
import sqlglot

from connectors.files.filters import to_arrow_filter

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("d", pa.date32())])
TABLE = pa.table({"id": [1, 2], "name": ["a", "b"], "d": [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]})


def converted(condition: str):
    return to_arrow_filter([sqlglot.parse_one(condition, read="postgres")], SCHEMA)


@pytest.mark.parametrize("condition, rows", [
    ("id = 1", [1]), ("id IN (1, 2)", [1, 2]), ("name = 'b'", [2]), ("name IN ('a')", [1]),
    ("d = '2024-01-02'", [2]), ("d >= '2024-01-01' AND NOT id = 1", [2]), ("id = -1", []),
])
def test_matching_literals_filter_as_postgresql_would(condition: str, rows: list[int]) -> None:
    expression = converted(condition)
    assert expression is not None
    assert ds.dataset(TABLE).to_table(filter=expression)["id"].to_pylist() == rows


@pytest.mark.parametrize("condition", [
    "id = 'x'", "id = '1'", "name = 1", "name IN (1, 2)", "d = 'today'", "d = '2024-02-30'",
    "id = 1.5", "d = 20240101",
])
def test_other_literals_stay_with_the_engine(condition: str) -> None:
    assert converted(condition) is None
