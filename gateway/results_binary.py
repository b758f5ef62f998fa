"""Binary-format result values, laid out like PostgreSQL's *send functions.

Fixed-width types become big-endian numpy matrices in one pass. numeric is vectorized for
decimals whose unscaled value fits in int64 (precision ≤ 18, the common case) and goes
value by value otherwise. The value is first coerced to the Arrow type matching the
column's PostgreSQL type, so a `pg_type` metadata override changes the layout as well as
the OID (an int64 column declared int4 sends four bytes).
"""

from __future__ import annotations

import decimal
import math
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gateway import pgtypes as T
from gateway.errors import FEATURE_NOT_SUPPORTED, NUMERIC_VALUE_OUT_OF_RANGE, PgError
from gateway.results_common import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    PG_EPOCH_DAYS,
    PG_EPOCH_USECS,
    Encoded,
    bool_values,
    make_binary,
    micros,
    piece_for,
    primitive_values,
    unit_of,
    validity,
    with_nulls,
    zero_nulls,
)
from gateway.results_text import interval_fields, string_text
from gateway.results_zones import zone_offsets

_INT_LAYOUT: dict[int, tuple[str, pa.DataType]] = {
    T.INT2.oid: (">i2", pa.int16()),
    T.INT4.oid: (">i4", pa.int32()),
    T.INT8.oid: (">i8", pa.int64()),
    T.OID.oid: (">u4", pa.uint32()),
    T.FLOAT4.oid: (">f4", pa.float32()),
    T.FLOAT8.oid: (">f8", pa.float64()),
}


def unsupported(arr: pa.Array, pgtype: T.PgType) -> PgError:
    return PgError(
        FEATURE_NOT_SUPPORTED,
        f"cannot send Arrow type {arr.type} as PostgreSQL type {pgtype.name} in binary format",
    )


def fixed_binary(arr: pa.Array, pgtype: T.PgType) -> Encoded:
    """int2/int4/int8/oid/float4/float8: big-endian values."""
    layout, arrow_type = _INT_LAYOUT[pgtype.oid]
    if arr.type != arrow_type:
        t = arr.type
        if not (
            pa.types.is_integer(t)
            or pa.types.is_floating(t)
            or pa.types.is_decimal(t)
            or pa.types.is_boolean(t)
        ):
            raise unsupported(arr, pgtype)
        try:
            arr = pc.cast(arr, arrow_type)
        except pa.ArrowInvalid as exc:
            raise PgError(
                NUMERIC_VALUE_OUT_OF_RANGE,
                f"value out of range for type {pgtype.name}: {exc}",
            ) from None
    valid = validity(arr)
    values = primitive_values(arr, arrow_type.to_pandas_dtype())
    size = np.dtype(layout).itemsize
    mat = values.astype(layout).view(np.uint8).reshape(-1, size)
    return Encoded([piece_for(mat, valid)], with_nulls(np.full(len(arr), size), valid))


def bool_binary(arr: pa.Array, pgtype: T.PgType) -> Encoded:
    if not pa.types.is_boolean(arr.type):
        raise unsupported(arr, pgtype)
    valid = validity(arr)
    mat = bool_values(arr).astype(np.uint8)[:, None]
    return Encoded([piece_for(mat, valid)], with_nulls(np.ones(len(arr)), valid))


def _be(values: np.ndarray, layout: str) -> np.ndarray:
    size = np.dtype(layout).itemsize
    return values.astype(layout).view(np.uint8).reshape(-1, size)


def date_binary(arr: pa.Array, pgtype: T.PgType) -> Encoded:
    """int32 days since 2000-01-01; ±infinity stay at the int32 extremes.

    DuckDB marks -infinity with INT32_MIN + 1, PostgreSQL with INT32_MIN: both mean it.
    """
    if not pa.types.is_date(arr.type):
        raise unsupported(arr, pgtype)
    valid = validity(arr)
    if pa.types.is_date64(arr.type):
        days = np.floor_divide(primitive_values(arr, np.int64), 86_400_000)
        pg = days - PG_EPOCH_DAYS
    else:
        days = primitive_values(arr, np.int32).astype(np.int64)
        pg = np.where(days >= INT32_MAX, INT32_MAX,
                      np.where(days <= INT32_MIN + 1, INT32_MIN, days - PG_EPOCH_DAYS))
    return Encoded(
        [piece_for(_be(pg, ">i4"), valid)], with_nulls(np.full(len(arr), 4), valid)
    )


def time_binary(arr: pa.Array, pgtype: T.PgType) -> Encoded:
    """int64 µs since midnight."""
    if not pa.types.is_time(arr.type):
        raise unsupported(arr, pgtype)
    valid = validity(arr)
    us = micros(arr, unit_of(arr.type))
    return Encoded(
        [piece_for(_be(us, ">i8"), valid)], with_nulls(np.full(len(arr), 8), valid)
    )


def timestamp_binary(arr: pa.Array, pgtype: T.PgType, timezone: str) -> Encoded:
    """int64 µs since 2000-01-01 (UTC for timestamptz, wall time for timestamp)."""
    if not pa.types.is_timestamp(arr.type):
        raise unsupported(arr, pgtype)
    valid = validity(arr)
    raw = zero_nulls(primitive_values(arr, np.int64), valid)
    infinite = (raw == INT64_MAX) | (raw <= INT64_MIN + 1)  # DuckDB: -infinity is MIN + 1
    us = zero_nulls(micros(arr, unit_of(arr.type)), valid)
    if pgtype.oid == T.TIMESTAMP.oid and arr.type.tz is not None:
        # Shown as plain timestamp: session wall-clock time.
        us = us + zone_offsets(us, infinite, timezone) * 1_000_000
    pg = np.where(infinite, np.where(raw > 0, INT64_MAX, INT64_MIN), us - PG_EPOCH_USECS)
    return Encoded(
        [piece_for(_be(pg, ">i8"), valid)], with_nulls(np.full(len(arr), 8), valid)
    )


def interval_binary(arr: pa.Array, pgtype: T.PgType) -> Encoded:
    """int64 µs, int32 days, int32 months."""
    if not (pa.types.is_interval(arr.type) or pa.types.is_duration(arr.type)):
        raise unsupported(arr, pgtype)
    valid = validity(arr)
    months, days, us = interval_fields(arr)
    rec = np.empty(
        len(arr), dtype=np.dtype([("us", ">i8"), ("days", ">i4"), ("months", ">i4")])
    )
    rec["us"], rec["days"], rec["months"] = us, days, months
    mat = rec.view(np.uint8).reshape(-1, 16)
    return Encoded([piece_for(mat, valid)], with_nulls(np.full(len(arr), 16), valid))


def uuid_binary(arr: pa.Array, pgtype: T.PgType) -> Encoded:
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    if storage.type != pa.binary(16):
        raise unsupported(arr, pgtype)
    valid = validity(storage)
    raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8)
    mat = raw[storage.offset * 16 : (storage.offset + len(storage)) * 16].reshape(
        -1, 16
    )
    return Encoded(
        [piece_for(mat, valid)], with_nulls(np.full(len(storage), 16), valid)
    )


def bytea_binary(arr: pa.Array, pgtype: T.PgType) -> Encoded:
    t = arr.type
    if not (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        raise unsupported(arr, pgtype)
    return string_text(arr)


# ---------------------------------------------------------------------------------------
# numeric
# ---------------------------------------------------------------------------------------

_NUMERIC_NEG = 0x4000
_POW10 = [10**k for k in range(19)]


def numeric_binary(arr: pa.Array, pgtype: T.PgType) -> Encoded:
    """numeric_send: int16 ndigits, weight, sign, dscale, then base-10000 digits."""
    t = arr.type
    if pa.types.is_integer(t):
        valid = validity(arr)
        values = primitive_values(arr, t.to_pandas_dtype())
        if pa.types.is_unsigned_integer(t):
            magnitude = values.astype(np.uint64)
            negative = np.zeros(len(arr), dtype=bool)
        else:
            signed = values.astype(np.int64)
            magnitude = np.abs(signed).astype(np.uint64)  # |INT64_MIN| wraps right
            negative = signed < 0
        return _numeric_fast(magnitude, negative, 0, 5, valid)  # < 10000**5
    if pa.types.is_floating(t):
        return _numeric_slow(arr, from_float=True)
    if not pa.types.is_decimal(t):
        raise unsupported(arr, pgtype)
    if t.scale < 0:
        arr = pc.cast(
            arr,
            pa.decimal128(t.precision - t.scale, 0)
            if t.precision - t.scale <= 38
            else pa.decimal256(t.precision - t.scale, 0),
        )
        t = arr.type
    if t.bit_width == 128 and t.precision <= 18 and t.scale <= 16:
        n = len(arr)
        words = np.frombuffer(arr.buffers()[1], dtype=np.int64)[
            2 * arr.offset : 2 * (arr.offset + n)
        ]
        unscaled = words[0::2]  # low little-endian word; precision ≤ 18: no high part
        int_groups = max(1, (t.precision - t.scale + 3) // 4)
        return _numeric_fast(
            np.abs(unscaled).astype(np.uint64),
            unscaled < 0,
            t.scale,
            int_groups,
            validity(arr),
        )
    return _numeric_slow(arr, from_float=False)


def _numeric_fast(
    magnitude: np.ndarray,
    negative: np.ndarray,
    scale: int,
    int_groups: int,
    valid: np.ndarray | None,
) -> Encoded:
    """Vectorized numeric_send for |unscaled values| < 2**64 (uint64 `magnitude`).

    Every base-10000 group the type can hold is computed for every row, then a mask
    keeps the 8-byte header and the groups from the first to the last non-zero one and
    one masked copy compacts the rows. Work is laid out one byte position per numpy
    row (contiguous vectors) and transposed once: reductions across the few groups of
    a row are slow in numpy, vector operations across rows are not.
    """
    n = len(magnitude)
    power = _POW10[scale]
    int_part = magnitude // power
    # Pad the fraction to whole base-10000 groups.
    frac_part = (magnitude - int_part * power) * _POW10[(-scale) % 4]
    frac_groups = (scale + 3) // 4
    width = int_groups + frac_groups
    groups = np.empty((width, n), dtype=np.int64)
    for start, count, v in (
        (0, int_groups, int_part),
        (int_groups, frac_groups, frac_part),
    ):
        for k in range(start + count - 1, start - 1, -1):
            q = v // 10000
            groups[k] = v - q * 10000
            v = q
    first = np.full(n, width, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    for k in range(width):
        nonzero = groups[k] != 0
        first = np.where(nonzero & (first == width), k, first)
        last = np.where(nonzero, k, last)
    any_digit = last >= 0
    ndigits = np.where(any_digit, last - first + 1, 0)
    weight = np.where(any_digit, int_groups - 1 - first, 0)
    sign = np.where(negative & any_digit, _NUMERIC_NEG, 0)
    data = np.empty((8 + 2 * width, n), dtype=np.uint8)
    keep = np.ones((8 + 2 * width, n), dtype=bool)
    for i, field in enumerate((ndigits, weight, sign, np.full(n, scale))):
        data[2 * i] = (field >> 8) & 0xFF
        data[2 * i + 1] = field & 0xFF
    for k in range(width):
        data[8 + 2 * k] = groups[k] >> 8
        data[9 + 2 * k] = groups[k] & 0xFF
        keep[8 + 2 * k] = (k >= first) & (k <= last)
        keep[9 + 2 * k] = keep[8 + 2 * k]
    lengths = 8 + 2 * ndigits
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    compact = np.ascontiguousarray(data.T)[np.ascontiguousarray(keep.T)]
    return Encoded(
        [make_binary(n, offsets, compact, valid)], with_nulls(lengths, valid)
    )


def _numeric_slow(arr: pa.Array, *, from_float: bool) -> Encoded:
    """Value by value through Decimal: wide decimals and floats shown as numeric (rare)."""
    out: list[bytes | None] = []
    for value in arr.to_pylist():
        if value is None:
            out.append(None)
        elif from_float:
            nan = math.isnan(value)
            out.append(numeric_send(decimal.Decimal("NaN" if nan else repr(value))))
        else:
            out.append(numeric_send(value))
    piece = pa.array(out, pa.binary())
    valid = validity(arr)
    lengths = np.array([len(b) if b is not None else -1 for b in out], dtype=np.int64)
    return Encoded([piece], with_nulls(lengths, valid))


def numeric_send(value: decimal.Decimal) -> bytes:
    """One numeric in PostgreSQL's binary layout (NaN and ±Infinity included)."""
    if value.is_nan():
        return struct.pack(">hhHH", 0, 0, 0xC000, 0)
    if value.is_infinite():
        return struct.pack(">hhHH", 0, 0, 0xF000 if value < 0 else 0xD000, 0)
    sign, digit_tuple, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    dscale = max(0, -exponent)
    coefficient = int("".join(map(str, digit_tuple)) or "0")
    # Scale to an integer whose last base-10000 group is the last fraction group.
    frac_groups = (dscale + 3) // 4
    scaled = coefficient * 10 ** (4 * frac_groups + exponent)
    groups: list[int] = []
    while scaled:
        scaled, group = divmod(scaled, 10000)
        groups.append(group)
    groups.reverse()
    weight = len(groups) - 1 - frac_groups
    while groups and groups[-1] == 0:  # PostgreSQL strips trailing zero groups
        groups.pop()
    if not groups:
        return struct.pack(">hhHH", 0, 0, 0, dscale)
    head = struct.pack(
        ">hhHH", len(groups), weight, _NUMERIC_NEG if sign else 0, dscale
    )
    return head + struct.pack(f">{len(groups)}H", *groups)


# ---------------------------------------------------------------------------------------
# Text-like types in binary: the text output, jsonb with its version byte
# ---------------------------------------------------------------------------------------


def jsonb_binary(text: Encoded, n: int) -> Encoded:
    version = np.ones((n, 1), dtype=np.uint8)
    valid = text.lengths >= 0
    version_piece = piece_for(version, None if valid.all() else valid)
    return Encoded([version_piece, *text.pieces], np.where(valid, text.lengths + 1, -1))
