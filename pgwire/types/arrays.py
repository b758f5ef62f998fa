"""Arrow lists as PostgreSQL arrays, in text ('{1,2,NULL}') and binary (array_send).

Elements are encoded by the scalar encoders over the whole child array at once, then
quoted and joined per row with Arrow's list kernels, so arrays stay vectorized too.
Binary output covers one-dimensional arrays; nested lists (multidimensional arrays) are
sent in text format only.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.types import table as T
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.columns import (
    Encoded,
    binary_from_fixed,
    binary_from_ragged,
    binary_lengths,
    validity,
    with_nulls,
)

EncodeColumn = Callable[[pa.Array, T.PgType, int, str], Encoded]
JoinPieces = Callable[[Encoded, int], pa.Array]

# array_out quotes an element that is empty, is NULL-like, or holds any of these
# characters (array_isspace: space, \t, \n, \r, \v, \f).
_NEEDS_QUOTES = r'^$|[{}",\\ \t\n\r\x0b\x0c]|^[Nn][Uu][Ll][Ll]$'


def is_list_type(t: pa.DataType) -> bool:
    return (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def _flatten(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Row offsets rebased to 0 and exactly the child values the rows use."""
    if not pa.types.is_list(arr.type):
        arr = pc.cast(arr, pa.list_(arr.type.value_type))
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[
        arr.offset : arr.offset + len(arr) + 1
    ]
    start, end = int(offsets[0]), int(offsets[-1])
    return offsets - start, arr.values.slice(start, end - start)


def _element_type(pgtype: T.PgType, child: pa.DataType) -> T.PgType:
    elem = T.ELEMENT_OF.get(pgtype.oid)
    return elem if elem is not None else T.pg_type_for_arrow(child)


def list_text(
    arr: pa.Array,
    pgtype: T.PgType,
    timezone: str,
    encode: EncodeColumn,
    join: JoinPieces,
) -> Encoded:
    """array_out: '{a,"b c",NULL}', nested lists as '{{1,2},{3,4}}'."""
    n = len(arr)
    valid = validity(arr)
    offsets, values = _flatten(arr)
    nested = is_list_type(values.type)
    elem_type = pgtype if nested else _element_type(pgtype, values.type)
    elements = join(encode(values, elem_type, 0, timezone), len(values))
    if not nested and len(elements):
        text = elements.cast(pa.string())
        needs = pc.fill_null(pc.match_substring_regex(text, _NEEDS_QUOTES), False)
        if pc.any(needs).as_py():  # most arrays (numbers, dates…) never need quotes
            escaped = pc.replace_substring_regex(text, r'(["\\])', r"\\\1")
            quoted = pc.binary_join_element_wise('"', escaped, '"', "")
            elements = pc.if_else(needs, quoted, text).cast(pa.binary())
    elements = pc.fill_null(elements, pa.scalar(b"NULL", pa.binary()))
    mask = pa.array(~valid) if valid is not None else None
    lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), elements, mask=mask)
    body = pc.binary_join(lists, pa.scalar(b",", pa.binary()))
    brace_open = binary_from_fixed(np.full((n, 1), ord("{"), np.uint8), valid)
    brace_close = binary_from_fixed(np.full((n, 1), ord("}"), np.uint8), valid)
    return Encoded(
        [brace_open, body, brace_close], with_nulls(binary_lengths(body) + 2, valid)
    )


def list_binary(
    arr: pa.Array,
    pgtype: T.PgType,
    timezone: str,
    encode: EncodeColumn,
    join: JoinPieces,
) -> Encoded:
    """array_send for one-dimensional arrays: header, then (int32 length, bytes) per item."""
    n = len(arr)
    valid = validity(arr)
    offsets, values = _flatten(arr)
    if is_list_type(values.type):
        raise PgError(
            FEATURE_NOT_SUPPORTED,
            "binary output of multidimensional arrays is not supported; request text format",
        )
    elem_type = _element_type(pgtype, values.type)
    enc = encode(values, elem_type, 1, timezone)
    m = len(values)
    prefix = enc.lengths.astype(">i4").view(np.uint8).reshape(m, 4)
    items = join(Encoded([prefix, *enc.pieces], np.maximum(enc.lengths, 0) + 4), m)
    mask = pa.array(~valid) if valid is not None else None
    lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, mask=mask)
    body = pc.binary_join(lists, pa.scalar(b"", pa.binary()))
    counts = np.diff(offsets).astype(np.int64)
    null_items = np.concatenate([[0], np.cumsum(enc.lengths < 0)])
    has_null = (null_items[offsets[1:]] - null_items[offsets[:-1]]) > 0
    header = np.empty(
        n,
        dtype=np.dtype(
            [
                ("ndim", ">i4"),
                ("flags", ">i4"),
                ("elem", ">i4"),
                ("dim", ">i4"),
                ("lb", ">i4"),
            ]
        ),
    )
    header["ndim"] = np.where(counts > 0, 1, 0)
    header["flags"] = has_null
    header["elem"] = elem_type.oid
    header["dim"] = counts
    header["lb"] = 1
    header_len = np.where(counts > 0, 20, 12)
    head = binary_from_ragged(header.view(np.uint8).reshape(n, 20), header_len, valid)
    return Encoded([head, body], with_nulls(header_len + binary_lengths(body), valid))
