"""PostgreSQL's binary COPY format (`COPY ... FROM STDIN (FORMAT binary)`) from Arrow.

A binary COPY stream is a signature and header, then per row a 16-bit field count and
each field as a 32-bit length (-1 for NULL) and its binary value (the type's send
function's bytes, as in a DataRow), then a 16-bit -1 trailer. The values are encoded a
column at a time by the same writers as result rows (`pgwire.types.rows.encode_column`),
and the rows laid out the same way, so a move into PostgreSQL costs no Python per value.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

from pgwire.types.pg_type import PgType
from pgwire.types.rows import CHUNK_ROWS, encode_column, interleave, merge_fixed

HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)  # no flags, no extension
TRAILER = struct.pack("!h", -1)
BINARY_FORMAT = 1


def copy_tuples(batch: pa.RecordBatch, types: list[PgType], timezone: str = "UTC") -> list[memoryview]:
    """The batch's rows as binary COPY tuples, each column sent as `types` says."""
    out: list[memoryview] = []
    for start in range(0, batch.num_rows, CHUNK_ROWS):
        chunk = batch.slice(start, CHUNK_ROWS)
        n = chunk.num_rows
        count = np.full(n, chunk.num_columns, dtype=">i2").view(np.uint8).reshape(n, 2)
        parts: list = [count]
        for column, pgtype in zip(chunk.columns, types, strict=True):
            encoded = encode_column(column, pgtype, BINARY_FORMAT, timezone)
            parts.append(encoded.lengths.astype(">i4").view(np.uint8).reshape(n, 4))
            parts.extend(encoded.pieces)
        out.extend(interleave(merge_fixed(parts), n))
    return out
