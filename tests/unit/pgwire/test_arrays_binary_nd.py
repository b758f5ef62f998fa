"""array_send of multidimensional arrays (pgwire.types.arrays): PostgreSQL's layout (the
number of dimensions, a has-NULL flag, the element type, each dimension's length and lower
bound 1, then the elements in row-major order); an empty array has no dimensions, and
sub-arrays of different lengths are an error, as in PostgreSQL."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from pgwire.errors import PgError
from pgwire.types.pg_type import pg_type_by_name
from pgwire.types.rows import encode_column, join_pieces


def binary(values: list, arrow_type: pa.DataType, pgtype: str) -> list:
    arr = pa.array(values, arrow_type)
    return join_pieces(encode_column(arr, pg_type_by_name(pgtype), 1, "UTC"), len(arr)).to_pylist()


def int4_item(value: int | None) -> bytes:
    return struct.pack("!i", -1) if value is None else struct.pack("!ii", 4, value)


def test_two_dimensions_with_a_null() -> None:
    got = binary([[[1, 2], [3, None]], None, [], [[5]]], pa.list_(pa.list_(pa.int32())), "_int4")
    assert got[0] == (struct.pack("!iiIiiii", 2, 1, 23, 2, 1, 2, 1)
                      + b"".join(int4_item(v) for v in (1, 2, 3, None)))
    assert got[1] is None
    assert got[2] == struct.pack("!iiI", 0, 0, 23)
    assert got[3] == struct.pack("!iiIiiii", 2, 0, 23, 1, 1, 1, 1) + int4_item(5)


def test_ragged_sub_arrays_are_an_error() -> None:
    with pytest.raises(PgError) as caught:
        binary([[[1, 2], [3]]], pa.list_(pa.list_(pa.int32())), "_int4")
    assert caught.value.sqlstate == "2202E"
