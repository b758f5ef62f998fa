"""connectors.postgres.records: record_in's and array_in's readings of a PostgreSQL
source's text of a row (`SELECT t FROM t`) and of an array of rows (`array_agg(t)`).
The integration tests (tests/integration/test_whole_row.py) compare whole answers with
a real PostgreSQL; these pin the splits on the texts PostgreSQL writes."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connectors.postgres.records import record_array, rows_array, split_array, split_record
from connectors.postgres.types import ColumnType, column_type
from pgwire.errors import PgError


@pytest.mark.parametrize(("text", "fields"), [
    ("(1,apple,)", ["1", "apple", None]),
    ('(2,"b c","")', ["2", "b c", ""]),
    ('(3,"say ""hi""","a\\\\b")', ["3", 'say "hi"', "a\\b"]),
])
def test_split_record(text: str, fields: list) -> None:
    assert split_record(text, 3) == fields


@pytest.mark.parametrize(("text", "items"), [
    ("{}", []),
    ('{"(1,apple,)",NULL,"(2,\\"b c\\",)"}', ["(1,apple,)", None, '(2,"b c",)']),
    ('{"(3,\\"a\\\\\\\\b\\",)"}', ['(3,"a\\\\b",)']),
    ('{"(4,,)"}', ["(4,,)"]),
])
def test_split_array(text: str, items: list) -> None:
    assert split_array(text) == items


@pytest.mark.parametrize("text", ["[0:1]={\"(1,a)\",\"(2,b)\"}", '{{"(1,a)"},{"(2,b)"}}'])
def test_other_arrays_are_refused(text: str) -> None:
    with pytest.raises(PgError) as caught:
        split_array(text)
    assert caught.value.sqlstate == "0A000"


def test_rows_array_reads_each_row_as_its_fields() -> None:
    fields = [column_type("id", "int4", -1), column_type("s", "text", -1)]
    struct = pa.struct([c.field for c in fields])
    element = ColumnType(pa.field("t", struct), pa.string(),
                         lambda texts: record_array(texts, fields, struct))
    texts = pa.array(['{"(1,apple)",NULL,"(2,)"}', None, "{}"], pa.string())
    got = rows_array(texts, element, pa.list_(struct))
    assert got.to_pylist() == [[{"id": 1, "s": "apple"}, None, {"id": 2, "s": None}], None, []]
