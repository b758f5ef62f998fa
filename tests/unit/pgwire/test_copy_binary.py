"""Binary COPY tuples from Arrow: the layout PostgreSQL's COPY FROM (FORMAT binary) reads."""

from __future__ import annotations

import struct

import pyarrow as pa

from pgwire.types.copy_binary import HEADER, TRAILER, copy_tuples
from pgwire.types.from_arrow import pg_type_for_field


def test_rows_are_a_field_count_then_length_prefixed_values() -> None:
    batch = pa.record_batch({"id": pa.array([1, None], pa.int32()), "s": ["ab", None]})
    types = [pg_type_for_field(f) for f in batch.schema]
    data = b"".join(bytes(part) for part in copy_tuples(batch, types))
    assert data == (struct.pack("!hii", 2, 4, 1) + struct.pack("!i", 2) + b"ab"
                    + struct.pack("!hii", 2, -1, -1))
    assert HEADER.startswith(b"PGCOPY\n\xff\r\n\x00") and len(HEADER) == 19
    assert TRAILER == b"\xff\xff"


def test_many_rows_come_in_chunks_that_join_in_order() -> None:
    batch = pa.record_batch({"id": pa.array(range(200_000), pa.int64())})
    types = [pg_type_for_field(f) for f in batch.schema]
    data = b"".join(bytes(part) for part in copy_tuples(batch, types))
    assert len(data) == 200_000 * (2 + 4 + 8)
    assert struct.unpack("!hiq", data[-14:]) == (1, 8, 199_999)
