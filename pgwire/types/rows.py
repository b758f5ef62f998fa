"""Result sets on the wire: RowDescription and DataRow messages from Arrow batches.

`encode_rows` is the hot path. It encodes column by column (never row by row): each
column becomes pieces of bytes plus per-row lengths (the type family's writer, found
through `pgwire.types.adapters.REGISTRY`; lists through `pgwire.types.arrays`), a
numpy-built header and length prefix are added, and
one `binary_join_element_wise` call interleaves everything into consecutive DataRow
messages whose value buffer is the reply. Runs of fixed-width pieces (headers, length
prefixes, dates, binary integers…) are glued together in numpy first so Arrow joins
fewer, wider parts; when every part is fixed-width, numpy alone lays the rows out.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.errors import (
    FEATURE_NOT_SUPPORTED,
    INVALID_PARAMETER_VALUE,
    PROTOCOL_VIOLATION,
    PgError,
)
from pgwire.types.adapters import REGISTRY
from pgwire.types.arrays import is_list_type, list_binary, list_text, text_as_lists
from pgwire.types.columns import (
    Encoded,
    Piece,
    binary_from_fixed,
    hcat,
    make_binary,
    null_column,
    primitive_values,
    validity,
)
from pgwire.types.from_arrow import pg_type_for_field
from pgwire.types.pg_type import FIRST_NORMAL_OID, TEXT, PgType
from pgwire.types.records import record_column

TEXT_FORMAT, BINARY_FORMAT = 0, 1

# Rows per internal chunk: keeps temporaries cache-sized and every joined chunk far
# below Arrow's 2 GiB binary-array limit; chunks shrink further for very wide rows.
CHUNK_ROWS = 1 << 16
MAX_CHUNK_BYTES = 1 << 30

_ROW_HEADER = np.dtype([("tag", "u1"), ("length", ">i4"), ("ncols", ">i2")])


def resolve_formats(formats: Sequence[int], ncols: int) -> list[int]:
    """Bind's result-format rule: none → all text, one → all columns, else one per column."""
    if len(formats) == 0:
        resolved = [TEXT_FORMAT] * ncols
    elif len(formats) == 1:
        resolved = [formats[0]] * ncols
    elif len(formats) == ncols:
        resolved = list(formats)
    else:
        raise PgError(
            PROTOCOL_VIOLATION,
            f"bind message has {len(formats)} result formats but query has {ncols} columns",
        )
    for code in resolved:
        if code not in (TEXT_FORMAT, BINARY_FORMAT):
            raise PgError(INVALID_PARAMETER_VALUE, f"unsupported format code: {code}")
    return resolved


def row_description(schema: pa.Schema, formats: Sequence[int]) -> bytes:
    """The complete RowDescription ('T') message for a result with this schema."""
    fmts = resolve_formats(formats, len(schema))
    body = [struct.pack("!h", len(schema))]
    for field, fmt in zip(schema, fmts, strict=True):
        pgtype = pg_type_for_field(field)
        body.append(field.name.encode("utf-8") + b"\x00")
        body.append(
            struct.pack("!ihihih", 0, 0, pgtype.oid, pgtype.size, pgtype.typmod, fmt)
        )
    payload = b"".join(body)
    return b"T" + struct.pack("!i", len(payload) + 4) + payload


def encode_rows(
    batch: pa.RecordBatch, formats: Sequence[int], *, timezone: str = "UTC"
) -> bytes:
    """Every DataRow ('D') message for the batch's rows, concatenated."""
    ncols = batch.num_columns
    fmts = resolve_formats(formats, ncols)
    n = batch.num_rows
    if n == 0:
        return b""
    if ncols == 0:
        return (b"D" + struct.pack("!ih", 6, 0)) * n
    types = [pg_type_for_field(field) for field in batch.schema]
    # Chunks stay as views of Arrow buffers until the one copy into the result bytes.
    out: list[memoryview] = []
    for start in range(0, n, CHUNK_ROWS):
        out.extend(_encode_chunk(batch.slice(start, CHUNK_ROWS), types, fmts, timezone))
    return out[0].tobytes() if len(out) == 1 else b"".join(out)


def _encode_chunk(
    batch: pa.RecordBatch, types: list[PgType], fmts: list[int], timezone: str
) -> list[memoryview]:
    n = batch.num_rows
    encoded = [
        encode_column(col, pgtype, fmt, timezone)
        for col, pgtype, fmt in zip(batch.columns, types, fmts, strict=True)
    ]
    row_len = np.full(n, 4 + 2, dtype=np.int64)  # length word + column count
    for enc in encoded:
        row_len += 4 + np.maximum(enc.lengths, 0)
    if n > 1 and int(row_len.sum()) > MAX_CHUNK_BYTES:
        half = n // 2
        return _encode_chunk(
            batch.slice(0, half), types, fmts, timezone
        ) + _encode_chunk(batch.slice(half), types, fmts, timezone)
    if int(row_len.max()) > 2**31 - 1:
        raise PgError(FEATURE_NOT_SUPPORTED, "row too large for a DataRow message")
    header = np.empty(n, dtype=_ROW_HEADER)
    header["tag"] = ord("D")
    header["length"] = row_len
    header["ncols"] = len(encoded)
    parts: list[Piece] = [header.view(np.uint8).reshape(n, 7)]
    for enc in encoded:
        parts.append(enc.lengths.astype(">i4").view(np.uint8).reshape(n, 4))
        parts.extend(enc.pieces)
    return interleave(merge_fixed(parts), n)


def merge_fixed(parts: list[Piece]) -> list[Piece]:
    """Glue adjacent numpy (fixed-width, NULL-free) parts into single matrices."""
    merged: list[Piece] = []
    run: list[np.ndarray] = []
    for part in parts:
        if isinstance(part, np.ndarray):
            run.append(part)
            continue
        if run:
            merged.append(hcat(run))
            run = []
        merged.append(part)
    if run:
        merged.append(hcat(run))
    return merged


def interleave(parts: list[Piece], n: int) -> list[memoryview]:
    """Row-wise concatenation of all parts as one contiguous buffer."""
    if len(parts) == 1 and isinstance(parts[0], np.ndarray):
        return [memoryview(np.ascontiguousarray(parts[0])).cast("B")]
    arrays = [binary_from_fixed(p) if isinstance(p, np.ndarray) else p for p in parts]
    # NULL values have no bytes: a NULL piece joins as "" (pieces under NULL rows may
    # hold leftovers from the producer, hence replacement rather than their bytes).
    joined = pc.binary_join_element_wise(
        *arrays, b"", null_handling="replace", null_replacement=""
    )
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)
    start, end = int(offsets[joined.offset]), int(offsets[joined.offset + n])
    return [memoryview(joined.buffers()[2])[start:end]]


def join_pieces(enc: Encoded, n: int) -> pa.Array:
    """One binary array holding each row's whole value (NULL where lengths is -1)."""
    valid = enc.lengths >= 0
    arrays = [
        binary_from_fixed(p) if isinstance(p, np.ndarray) else p for p in enc.pieces
    ]
    if not arrays:
        return pa.nulls(n, pa.binary())
    if len(arrays) == 1:
        joined = arrays[0]
    else:
        joined = pc.binary_join_element_wise(
            *arrays, b"", null_handling="replace", null_replacement=""
        )
    if valid.all() and joined.null_count == 0:
        return joined
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)[
        joined.offset : joined.offset + n + 1
    ]
    data = (
        np.frombuffer(joined.buffers()[2], dtype=np.uint8)
        if joined.buffers()[2]
        else np.zeros(0, np.uint8)
    )
    start = int(offsets[0])
    return make_binary(n, offsets - start, data[start : int(offsets[-1])], valid)


# ---------------------------------------------------------------------------------------
# Column dispatch
# ---------------------------------------------------------------------------------------

def encode_column(arr: pa.Array, pgtype: PgType, fmt: int, timezone: str) -> Encoded:
    """Encode one column (any Arrow layout) as `pgtype` in format `fmt`."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    t = arr.type
    if pa.types.is_null(t) or arr.null_count == n:
        return null_column(n)
    if pa.types.is_dictionary(t):
        return _dictionary(arr, pgtype, fmt, timezone)
    if isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.bool8":
        arr = pc.not_equal(arr.storage, 0)  # canonical bool8: one int8 per value, 0 is false
        t = arr.type
    elif isinstance(t, pa.BaseExtensionType) and t.extension_name != "arrow.uuid":
        arr = arr.storage  # arrow.json and unknown extensions: their storage values
        t = arr.type
    if pa.types.is_struct(t):  # a whole row (SELECT t FROM t)
        return record_column(arr, fmt, timezone, pg_type_for_field, encode_column, join_pieces)
    if is_list_type(t):
        if fmt == TEXT_FORMAT:
            return list_text(arr, pgtype, timezone, encode_column, join_pieces)
        return list_binary(arr, pgtype, timezone, encode_column, join_pieces)
    if fmt == TEXT_FORMAT:
        return REGISTRY.encode_text(arr, pgtype, timezone)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        lists = text_as_lists(arr, pgtype, REGISTRY, timezone)  # an array read as its text
        if lists is not None:
            return list_binary(lists, pgtype, timezone, encode_column, join_pieces)
        if pgtype.oid >= FIRST_NORMAL_OID:  # an enum's label: enum_send writes its text
            return REGISTRY.encode_binary(arr, TEXT, timezone)
    return REGISTRY.encode_binary(arr, pgtype, timezone)


def _dictionary(arr: pa.Array, pgtype: PgType, fmt: int, timezone: str) -> Encoded:
    """Encode the (small) dictionary once, then gather by index."""
    values = join_pieces(
        encode_column(arr.dictionary, pgtype, fmt, timezone), len(arr.dictionary)
    )
    indices = arr.indices
    valid = validity(indices)
    idx = primitive_values(indices, indices.type.to_pandas_dtype()).astype(np.int64)
    if valid is not None:
        idx = np.where(valid, idx, 0)
    taken = values.take(pa.array(idx))
    lengths = np.diff(
        np.frombuffer(taken.buffers()[1], dtype=np.int32)[
            taken.offset : taken.offset + len(idx) + 1
        ]
    ).astype(np.int64)
    value_valid = ~np.asarray(
        taken.is_null().to_numpy(zero_copy_only=False), dtype=bool
    )
    ok = value_valid if valid is None else value_valid & valid
    if not ok.all():
        lengths = np.where(ok, lengths, -1)
        taken = pc.if_else(pa.array(ok), taken, pa.scalar(None, pa.binary()))
    return Encoded([taken], lengths)
