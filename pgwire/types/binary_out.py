"""Binary-format result values, laid out like PostgreSQL's *send functions.

Fixed-width types become big-endian numpy matrices in one pass; numeric lives in
pgwire.types.numeric (re-exported here). The value is first coerced to the Arrow type
matching the column's PostgreSQL type, so a `pg_type` metadata override changes the layout
as well as the OID (an int64 column declared int4 sends four bytes).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.types import table as T
from pgwire.errors import FEATURE_NOT_SUPPORTED, NUMERIC_VALUE_OUT_OF_RANGE, PgError
from pgwire.types.columns import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    PG_EPOCH_DAYS,
    PG_EPOCH_USECS,
    Encoded,
    bool_values,
    micros,
    piece_for,
    primitive_values,
    unit_of,
    validity,
    with_nulls,
    zero_nulls,
)
from pgwire.types.numeric import numeric_binary, numeric_send  # noqa: F401 (re-export)
from pgwire.types.text_out import interval_fields, string_text
from pgwire.types.zones import zone_offsets

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
# Text-like types in binary: the text output, jsonb with its version byte
# ---------------------------------------------------------------------------------------


def jsonb_binary(text: Encoded, n: int) -> Encoded:
    version = np.ones((n, 1), dtype=np.uint8)
    valid = text.lengths >= 0
    version_piece = piece_for(version, None if valid.all() else valid)
    return Encoded([version_piece, *text.pieces], np.where(valid, text.lengths + 1, -1))
