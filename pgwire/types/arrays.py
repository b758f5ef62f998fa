"""Arrow lists as PostgreSQL arrays, in text ('{1,2,NULL}') and binary (array_send).

Elements are encoded by the scalar encoders over the whole child array at once, then
quoted and joined per row with Arrow's list kernels, so arrays stay vectorized too.
Binary output is vectorized for one-dimensional arrays; nested lists (multidimensional
arrays) are put together row by row. Array parameters (array_in's text, array_recv's layout) are
read element by element through the registry's element codecs.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.errors import (ARRAY_SUBSCRIPT_ERROR, FEATURE_NOT_SUPPORTED,
                           INVALID_TEXT_REPRESENTATION, PgError)
from pgwire.types.columns import (
    Encoded,
    binary_from_fixed,
    binary_from_ragged,
    binary_lengths,
    validity,
    with_nulls,
)
from pgwire.types.from_arrow import pg_type_for_arrow
from pgwire.types.pg_type import ELEMENT_OF, PgType
from pgwire.types.registry import BadBinary, Registry
from pgwire.types.text import string_text

EncodeColumn = Callable[[pa.Array, PgType, int, str], Encoded]
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


def _element_type(pgtype: PgType, child: pa.DataType) -> PgType:
    elem = ELEMENT_OF.get(pgtype.oid)
    if elem is not None:
        return elem
    if pgtype.elem:  # an array of a table's rows: its elements are that row type
        return PgType(pgtype.elem, pgtype.name.removeprefix("_"), -1)
    return pg_type_for_arrow(child)


def list_text(
    arr: pa.Array,
    pgtype: PgType,
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


def _length_prefixed(enc: Encoded, m: int, join: JoinPieces) -> pa.Array:
    """array_send's items: each element's int32 length (-1 for NULL), then its bytes."""
    prefix = enc.lengths.astype(">i4").view(np.uint8).reshape(m, 4)
    return join(Encoded([prefix, *enc.pieces], np.maximum(enc.lengths, 0) + 4), m)


def list_binary(
    arr: pa.Array,
    pgtype: PgType,
    timezone: str,
    encode: EncodeColumn,
    join: JoinPieces,
) -> Encoded:
    """array_send for one-dimensional arrays: header, then (int32 length, bytes) per item."""
    n = len(arr)
    valid = validity(arr)
    offsets, values = _flatten(arr)
    if is_list_type(values.type):
        return _nested_binary(arr, pgtype, timezone, encode, join)
    elem_type = _element_type(pgtype, values.type)
    enc = encode(values, elem_type, 1, timezone)
    items = _length_prefixed(enc, len(values), join)
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


def _nested_binary(
    arr: pa.Array,
    pgtype: PgType,
    timezone: str,
    encode: EncodeColumn,
    join: JoinPieces,
) -> Encoded:
    """array_send of multidimensional arrays (lists of lists): the header with each
    dimension's length (lower bounds 1), then the elements in row-major order. Put together
    row by row in Python: such arrays are rare and small."""
    n = len(arr)
    valid = validity(arr)
    levels = []
    values: pa.Array = arr
    while is_list_type(values.type):
        offsets, values = _flatten(values)
        levels.append(offsets)
    elem_type = _element_type(pgtype, values.type)
    enc = encode(values, elem_type, 1, timezone)
    items = _length_prefixed(enc, len(values), join).to_pylist()
    nulls = enc.lengths < 0
    out: list[bytes | None] = []
    for row in range(n):
        if valid is not None and not valid[row]:
            out.append(None)
            continue
        lo, hi = int(levels[0][row]), int(levels[0][row + 1])
        dims = [hi - lo]
        for level in levels[1:]:
            sizes = {int(level[i + 1] - level[i]) for i in range(lo, hi)}
            if len(sizes) > 1:
                raise PgError(ARRAY_SUBSCRIPT_ERROR, "multidimensional arrays must have array "
                              "expressions with matching dimensions")
            dims.append(sizes.pop() if sizes else 0)
            lo, hi = int(level[lo]), int(level[hi])
        if hi == lo:  # an empty array has no dimensions
            out.append(struct.pack("!iiI", 0, 0, elem_type.oid))
            continue
        head = struct.pack("!iiI", len(dims), int(nulls[lo:hi].any()), elem_type.oid)
        bounds = b"".join(struct.pack("!ii", d, 1) for d in dims)
        out.append(head + bounds + b"".join(items[lo:hi]))
    return string_text(pa.array(out, pa.binary()))


def _numeric_texts(items: object) -> object:
    """Numeric elements (at any depth of a multidimensional array) as their texts."""
    if items is None:
        return None
    if isinstance(items, list):
        return [_numeric_texts(item) for item in items]
    return str(items)


def text_as_lists(arr: pa.Array, pgtype: PgType, registry: Registry, timezone: str) -> pa.Array | None:
    """A column of array_out texts declared an array type (a PostgreSQL source's rows are
    read as text) as the lists they spell, for array_send; None if `pgtype` is no array."""
    elem = ELEMENT_OF.get(pgtype.oid)
    if elem is None:
        return None
    values = [None if text is None else parse_array(registry, elem.oid, text, timezone)
              for text in arr.to_pylist()]
    if elem.name == "numeric":  # each element at its own scale: as text, not one decimal type
        values = [_numeric_texts(items) for items in values]
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise PgError(FEATURE_NOT_SUPPORTED, f"binary output of type {pgtype.name} for these values "
                      "is not supported; request text format") from exc


# --- parameters ----------------------------------------------------------------------


def parse_array(registry: Registry, elem_oid: int, text: str, timezone: str) -> list[object]:
    """array_in for the common forms: '{1,2}', '{{1,2},{3,4}}', quoted items, NULL."""
    s = text.strip()
    if s.startswith("["):  # explicit bounds '[0:1]={...}': the bounds are dropped
        eq = s.find("=")
        if eq < 0:
            raise _array_syntax(text)
        s = s[eq + 1 :].strip()
    if not s.startswith("{"):
        raise _array_syntax(text)
    value, pos = _parse_array_level(registry, elem_oid, s, 1, text, timezone)
    if s[pos:].strip():
        raise _array_syntax(text)
    return value


def _array_syntax(text: str) -> PgError:
    return PgError(INVALID_TEXT_REPRESENTATION, f'malformed array literal: "{text}"')


def _parse_array_level(
    registry: Registry,
    elem_oid: int, s: str, pos: int, text: str, timezone: str
) -> tuple[list[object], int]:
    items: list[object] = []
    n = len(s)
    while True:
        while pos < n and s[pos].isspace():
            pos += 1
        if pos >= n:
            raise _array_syntax(text)
        if s[pos] == "}" and not items:
            return items, pos + 1
        if s[pos] == "{":
            sub, pos = _parse_array_level(registry, elem_oid, s, pos + 1, text, timezone)
            items.append(sub)
        else:
            raw, quoted, pos = _array_item(s, pos, text)
            if not quoted and raw.upper() == "NULL":
                items.append(None)
            else:
                items.append(registry.decode_text(elem_oid, raw, timezone))
        while pos < n and s[pos].isspace():
            pos += 1
        if pos < n and s[pos] == ",":
            pos += 1
        elif pos < n and s[pos] == "}":
            return items, pos + 1
        else:
            raise _array_syntax(text)


def _array_item(s: str, pos: int, text: str) -> tuple[str, bool, int]:
    out: list[str] = []
    n = len(s)
    if s[pos] == '"':
        pos += 1
        while pos < n and s[pos] != '"':
            if s[pos] == "\\":
                pos += 1
            if pos >= n:
                raise _array_syntax(text)
            out.append(s[pos])
            pos += 1
        if pos >= n:
            raise _array_syntax(text)
        return "".join(out), True, pos + 1
    while pos < n and s[pos] not in ",}{":
        if s[pos] == "\\":
            pos += 1
            if pos >= n:
                raise _array_syntax(text)
        out.append(s[pos])
        pos += 1
    item = "".join(out).strip()
    if not item:
        raise _array_syntax(text)
    return item, False, pos


def recv_array(registry: Registry, elem_oid: int, data: bytes) -> list[object]:
    if len(data) < 12:
        raise BadBinary("array header too short")
    ndim, flags, elem_type = struct.unpack(">iii", data[:12])
    if ndim < 0 or ndim > 6 or flags not in (0, 1):
        raise BadBinary("invalid array header")
    if elem_type != elem_oid:
        raise BadBinary(f"wrong element type {elem_type} (expected {elem_oid})")
    pos = 12
    dims: list[int] = []
    for _ in range(ndim):
        if len(data) < pos + 8:
            raise BadBinary("array header too short")
        size, _lbound = struct.unpack(">ii", data[pos : pos + 8])
        if size < 0:
            raise BadBinary("negative array dimension")
        dims.append(size)
        pos += 8
    total = 1
    for size in dims:
        total *= size
    if ndim == 0:
        total = 0
    flat: list[object] = []
    for _ in range(total):
        if len(data) < pos + 4:
            raise BadBinary("array data too short")
        (length,) = struct.unpack(">i", data[pos : pos + 4])
        pos += 4
        if length == -1:
            flat.append(None)
            continue
        if length < 0 or len(data) < pos + length:
            raise BadBinary("array element length out of range")
        flat.append(registry.decode_binary(elem_oid, data[pos : pos + length]))
        pos += length
    if pos != len(data):
        raise BadBinary("trailing bytes after array data")
    for size in reversed(dims[1:]):
        flat = [flat[i : i + size] for i in range(0, len(flat), size)]
    return flat


def register(registry: Registry) -> None:
    """Array input for every array type of a registered element type.

    Result columns are lists whatever their declared type, so array output is chosen by
    the Arrow layout in `pgwire.types.rows.encode_column`, not here.
    """
    for array_oid, elem in ELEMENT_OF.items():

        def text_in(_oid: int, text: str, timezone: str, elem_oid: int = elem.oid) -> object:
            return parse_array(registry, elem_oid, text, timezone)

        def binary_in(data: bytes, elem_oid: int = elem.oid) -> object:
            return recv_array(registry, elem_oid, data)

        registry.add_text_in((array_oid,), text_in)
        registry.add_binary_in((array_oid,), binary_in)
