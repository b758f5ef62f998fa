"""date, time, timestamp and timestamptz: result output in text and binary, parameter input.

Text output is byte-identical to PostgreSQL 15 with DateStyle ISO; timestamptz is shown
in the session TimeZone. Whole columns are formatted as numpy character matrices
(`pgwire.types.columns`); only rows outside the common ranges (years before 1 AD or after
9999, ±infinity) take a small per-row fallback. Binary output follows date_send /
time_send / timestamp_send. Text input is parsed in `pgwire.types.datetime_text`; binary
input follows the *recv functions.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from pgwire.types.civil import civil_from_days
from pgwire.types.columns import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    PG_EPOCH_DAYS,
    PG_EPOCH_USECS,
    USECS_PER_DAY,
    Encoded,
    Piece,
    binary_from_fixed,
    binary_from_ragged,
    clock_matrix,
    const_matrix,
    date_matrix,
    fraction_matrix,
    hcat,
    micros,
    piece_for,
    primitive_values,
    replace_rows,
    unit_of,
    validity,
    with_nulls,
    zero_nulls,
)
from pgwire.types.datetime_text import (
    date_value,
    infinity,
    parse_time,
    parse_timestamp,
    time_value,
    timestamp_value,
)
from pgwire.types.pg_type import DATE, TIME, TIMESTAMP, TIMESTAMPTZ, PgType
from pgwire.types.registry import BadBinary, Registry, expect_size, unsupported_binary
from pgwire.types.zones import zone_offsets

# --- text output ---------------------------------------------------------------------


def date_text(arr: pa.Array, _pgtype: PgType, _timezone: str) -> Encoded:
    valid = validity(arr)
    if pa.types.is_date64(arr.type):
        days = np.floor_divide(primitive_values(arr, np.int64), 86_400_000)
        days = zero_nulls(days, valid)
        infinite = np.zeros(len(arr), dtype=bool)
    else:
        days = zero_nulls(primitive_values(arr, np.int32).astype(np.int64), valid)
        # DuckDB hands its ±infinity dates to Arrow as the int32 extremes.
        infinite = (days == INT32_MAX) | (days <= INT32_MIN + 1)  # DuckDB: -inf is MIN + 1
    mat, odd = date_matrix(days)
    odd |= infinite
    if valid is not None:
        odd &= valid
    lengths = np.full(len(arr), 10, dtype=np.int64)
    if not odd.any():
        return Encoded([piece_for(mat, valid)], with_nulls(lengths, valid))
    slow = [_date_slow(int(d)) for d in days[odd]]  # rare: BC, 5-digit years, infinity
    piece = replace_rows(binary_from_fixed(mat, valid), odd, slow)
    lengths[odd] = [len(s) for s in slow]
    return Encoded([piece], with_nulls(lengths, valid))


def _date_slow(days: int) -> bytes:
    if days == INT32_MAX:
        return b"infinity"
    if days <= INT32_MIN + 1:
        return b"-infinity"
    y, m, d = civil_from_days(days)
    if y <= 0:
        return f"{1 - y:04d}-{m:02d}-{d:02d} BC".encode()
    return f"{y:04d}-{m:02d}-{d:02d}".encode()


def time_text(arr: pa.Array, _pgtype: PgType, _timezone: str) -> Encoded:
    """'HH:MM:SS' plus a trimmed fraction."""
    valid = validity(arr)
    us = zero_nulls(micros(arr, unit_of(arr.type)), valid)
    clock = clock_matrix(us)
    frac, frac_len = fraction_matrix(us)
    pieces: list = [piece_for(clock, valid)]
    if frac_len.any():
        pieces.append(binary_from_ragged(frac, frac_len, valid))
    return Encoded(pieces, with_nulls(8 + frac_len, valid))


def timestamp_text(arr: pa.Array, *, with_zone: bool, timezone: str) -> Encoded:
    """timestamp: 'YYYY-MM-DD HH:MM:SS[.ffffff]'; timestamptz adds the session zone's
    offset ('+00', '-05', '+05:30', '-04:56:02') after converting to its local time.

    A zone-aware Arrow column shown as plain timestamp is first converted to session
    local time, as PostgreSQL's timestamptz → timestamp cast does.
    """
    valid = validity(arr)
    raw = zero_nulls(primitive_values(arr, np.int64), valid)
    infinite = (raw == INT64_MAX) | (raw <= INT64_MIN + 1)  # DuckDB: -inf is MIN + 1
    us = zero_nulls(micros(arr, unit_of(arr.type)), valid)
    convert = with_zone or arr.type.tz is not None
    offsets = (
        zone_offsets(us, infinite, timezone) if convert else np.zeros(len(us), np.int64)
    )
    local = us + offsets * 1_000_000
    n = len(arr)
    days = np.floor_divide(local, USECS_PER_DAY)
    tod = local - days * USECS_PER_DAY
    date, odd = date_matrix(days)
    base = hcat([date, const_matrix(n, b" "), clock_matrix(tod)])
    frac, frac_len = fraction_matrix(tod)
    odd |= infinite
    if valid is not None:
        odd &= valid
    zone, zone_len = offset_matrix(offsets) if with_zone else (None, 0)
    if odd.any():
        # Rare rows (BC, years past 9999, ±infinity) are printed whole, first piece.
        slow = [
            _timestamp_slow(int(raw_v), int(loc), int(off) if with_zone else None, inf)
            for raw_v, loc, off, inf in zip(
                raw[odd].tolist(),
                local[odd].tolist(),
                offsets[odd].tolist(),
                infinite[odd].tolist(),
                strict=True,
            )
        ]
        first: Piece = replace_rows(binary_from_fixed(base, valid), odd, slow)
        lengths = np.full(n, 19, dtype=np.int64)
        lengths[odd] = [len(s) for s in slow]
        frac_len = np.where(odd, 0, frac_len)
        zone_len = np.where(odd, 0, zone_len)
    else:
        first = piece_for(base, valid)
        lengths = np.full(n, 19, dtype=np.int64)
    pieces = [first]
    if frac_len.any():
        pieces.append(binary_from_ragged(frac, frac_len, valid))
        lengths += frac_len
    if zone is not None and zone_len.any():  # none when every row is printed whole (±infinity)
        uniform = bool((zone_len == zone_len[0]).all())
        if uniform and valid is None:
            pieces.append(np.ascontiguousarray(zone[:, : int(zone_len[0])]))
        else:
            pieces.append(binary_from_ragged(zone, zone_len, valid))
        lengths += zone_len
    return Encoded(pieces, with_nulls(lengths, valid))


def _timestamp_slow(raw: int, local: int, offset: int | None, infinite: bool) -> bytes:
    if infinite:
        return b"infinity" if raw == INT64_MAX else b"-infinity"
    days, tod = divmod(local, USECS_PER_DAY)
    y, m, d = civil_from_days(days)
    secs, frac = divmod(tod, 1_000_000)
    text = f"{y if y > 0 else 1 - y:04d}-{m:02d}-{d:02d} "
    text += f"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    if frac:
        text += f".{frac:06d}".rstrip("0")
    if offset is not None:
        text += _offset_text(offset)
    if y <= 0:
        text += " BC"
    return text.encode()


def _offset_text(offset: int) -> str:
    sign = "-" if offset < 0 else "+"
    a = abs(offset)
    text = f"{sign}{a // 3600:02d}"
    if a % 3600:
        text += f":{a // 60 % 60:02d}"
        if a % 60:
            text += f":{a % 60:02d}"
    return text


def offset_matrix(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """'+HH', '+HH:MM' or '+HH:MM:SS' (zero-padded to 9 columns) for UTC offsets in
    seconds. A zone has few distinct offsets, so each is formatted once and gathered."""
    present = np.unique(offsets[:: max(1, len(offsets) // 4096)])
    index = np.searchsorted(present, offsets)
    missing = (index >= len(present)) | (
        present[np.minimum(index, len(present) - 1)] != offsets
    )
    if missing.any():  # the sample missed some: use every distinct value
        present = np.unique(offsets)
        index = np.searchsorted(present, offsets)
    texts = [_offset_text(int(o)).encode() for o in present.tolist()]
    table = np.zeros((len(texts), 9), dtype=np.uint8)
    for row, text in enumerate(texts):
        table[row, : len(text)] = np.frombuffer(text, dtype=np.uint8)
    widths = np.array([len(t) for t in texts], dtype=np.int64)
    mat = np.take(np.ascontiguousarray(table).view("V9").ravel(), index)
    return mat.view(np.uint8).reshape(len(offsets), 9), widths[index]


# --- binary output -------------------------------------------------------------------


def _be(values: np.ndarray, layout: str) -> np.ndarray:
    size = np.dtype(layout).itemsize
    return values.astype(layout).view(np.uint8).reshape(-1, size)


def date_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    """int32 days since 2000-01-01; ±infinity stay at the int32 extremes.

    DuckDB marks -infinity with INT32_MIN + 1, PostgreSQL with INT32_MIN: both mean it.
    """
    if not pa.types.is_date(arr.type):
        raise unsupported_binary(arr, pgtype)
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


def time_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    """int64 µs since midnight."""
    if not pa.types.is_time(arr.type):
        raise unsupported_binary(arr, pgtype)
    valid = validity(arr)
    us = micros(arr, unit_of(arr.type))
    return Encoded(
        [piece_for(_be(us, ">i8"), valid)], with_nulls(np.full(len(arr), 8), valid)
    )


def timestamp_binary(arr: pa.Array, pgtype: PgType, timezone: str) -> Encoded:
    """int64 µs since 2000-01-01 (UTC for timestamptz, wall time for timestamp)."""
    if not pa.types.is_timestamp(arr.type):
        raise unsupported_binary(arr, pgtype)
    valid = validity(arr)
    raw = zero_nulls(primitive_values(arr, np.int64), valid)
    infinite = (raw == INT64_MAX) | (raw <= INT64_MIN + 1)  # DuckDB: -infinity is MIN + 1
    us = zero_nulls(micros(arr, unit_of(arr.type)), valid)
    if pgtype.oid == TIMESTAMP.oid and arr.type.tz is not None:
        # Shown as plain timestamp: session wall-clock time.
        us = us + zone_offsets(us, infinite, timezone) * 1_000_000
    pg = np.where(infinite, np.where(raw > 0, INT64_MAX, INT64_MIN), us - PG_EPOCH_USECS)
    return Encoded(
        [piece_for(_be(pg, ">i8"), valid)], with_nulls(np.full(len(arr), 8), valid)
    )


# --- binary input --------------------------------------------------------------------


def recv_date(data: bytes) -> object:
    expect_size(data, 4)
    days = struct.unpack(">i", data)[0]
    if days in (INT32_MAX, INT32_MIN):
        return infinity(DATE.oid, days == INT32_MIN)
    return date_value(days + 10957)  # 10957 days from 1970-01-01 to 2000-01-01


def recv_time(data: bytes) -> object:
    expect_size(data, 8)
    us = struct.unpack(">q", data)[0]
    if not 0 <= us <= USECS_PER_DAY:
        raise BadBinary("time out of range")
    return time_value(us)


_PG_EPOCH_US = 946_684_800_000_000  # 2000-01-01 in µs since 1970-01-01


def recv_timestamp(aware: bool) -> Callable[[bytes], object]:
    oid = TIMESTAMPTZ.oid if aware else TIMESTAMP.oid

    def recv(data: bytes) -> object:
        expect_size(data, 8)
        us = struct.unpack(">q", data)[0]
        if us in (INT64_MAX, INT64_MIN):
            return infinity(oid, us == INT64_MIN)
        return timestamp_value(us + _PG_EPOCH_US, aware=aware)

    return recv


def _timestamp_text(arr: pa.Array, _pgtype: PgType, timezone: str) -> Encoded:
    return timestamp_text(arr, with_zone=False, timezone=timezone)


def _timestamptz_text(arr: pa.Array, _pgtype: PgType, timezone: str) -> Encoded:
    return timestamp_text(arr, with_zone=True, timezone=timezone)


def register(registry: Registry) -> None:
    registry.add_text_out((pa.date32(), pa.date64()), date_text)
    registry.add_text_out((pa.time32("s"), pa.time64("us")), time_text)
    registry.add_text_out((pa.timestamp("us"),), _timestamp_text)
    registry.add_text_out((pa.timestamp("us"),), _timestamptz_text, oid=TIMESTAMPTZ.oid)
    registry.add_binary_out((DATE.oid,), date_binary)
    registry.add_binary_out((TIME.oid,), time_binary)
    registry.add_binary_out((TIMESTAMP.oid, TIMESTAMPTZ.oid), timestamp_binary)
    # date_in accepts a timestamp and keeps its date
    registry.add_text_in((DATE.oid, TIMESTAMP.oid, TIMESTAMPTZ.oid), parse_timestamp)
    registry.add_text_in((TIME.oid,), parse_time)
    registry.add_binary_in((DATE.oid,), recv_date)
    registry.add_binary_in((TIME.oid,), recv_time)
    registry.add_binary_in((TIMESTAMP.oid,), recv_timestamp(aware=False))
    registry.add_binary_in((TIMESTAMPTZ.oid,), recv_timestamp(aware=True))
