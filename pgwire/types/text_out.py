"""Text-format result values, byte-identical to PostgreSQL 15's output functions.

Settings assumed are the server defaults clients see: DateStyle ISO, IntervalStyle
postgres, extra_float_digits 1 (shortest round-trip floats); the session TimeZone is a
parameter. Everything hot is vectorized with Arrow kernels or numpy character matrices;
only intervals are formatted value by value (rare in result sets), plus rows outside the
common ranges (years before 1 AD or after 9999) which take a small per-row fallback.
Floats live in pgwire.types.floats.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.types.datetime_in import civil_from_days as civil_from_days_py
from pgwire.types.columns import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    USECS_PER_DAY,
    Encoded,
    Piece,
    as_binary,
    binary_data,
    binary_from_fixed,
    binary_from_ragged,
    binary_lengths,
    bool_values,
    clock_matrix,
    const_matrix,
    date_matrix,
    digits_matrix,
    fraction_matrix,
    hcat,
    make_binary,
    micros,
    piece_for,
    primitive_values,
    replace_rows,
    unit_of,
    validity,
    with_nulls,
    zero_nulls,
)
from pgwire.types.zones import zone_offsets

# ---------------------------------------------------------------------------------------
# Simple types
# ---------------------------------------------------------------------------------------


def bool_text(arr: pa.Array) -> Encoded:
    valid = validity(arr)
    mat = np.where(bool_values(arr), ord("t"), ord("f")).astype(np.uint8)[:, None]
    return Encoded([piece_for(mat, valid)], with_nulls(np.ones(len(arr)), valid))


def integer_text(arr: pa.Array) -> Encoded:
    return string_text(pc.cast(arr, pa.string()))


def string_text(arr: pa.Array) -> Encoded:
    """Strings go out as they are (Arrow guarantees UTF-8)."""
    data = as_binary(arr)
    return Encoded([data], with_nulls(binary_lengths(data), validity(data)))


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_HEX_PAIRS = np.stack([_HEX[np.arange(256) >> 4], _HEX[np.arange(256) & 15]], axis=1)
_HEX_WORDS = np.ascontiguousarray(_HEX_PAIRS).view(np.uint16).ravel()  # byte → 2 chars


def bytea_text(arr: pa.Array) -> Encoded:
    r"""'\x' and lowercase hex digits (bytea_output = hex)."""
    data = as_binary(arr)
    valid = validity(data)
    offsets, raw = binary_data(data)
    lengths = np.diff(offsets)
    prefix = np.full(len(lengths), 2, dtype=np.int64)
    if valid is not None:
        prefix[~valid] = 0
    new_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    new_offsets[1:] = np.cumsum(2 * lengths + prefix)
    out = np.empty(int(new_offsets[-1]), dtype=np.uint8)
    starts = new_offsets[:-1][prefix > 0]
    is_hex = np.ones(len(out), dtype=bool)
    is_hex[starts] = False
    is_hex[starts + 1] = False
    out[starts] = ord("\\")
    out[starts + 1] = ord("x")
    out[is_hex] = _HEX_PAIRS[raw].ravel()
    result = make_binary(len(lengths), new_offsets, out, valid)
    return Encoded([result], with_nulls(2 * lengths + 2, valid))


def uuid_text(arr: pa.Array) -> Encoded:
    """Lowercase 8-4-4-4-12 hex."""
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    n = len(storage)
    valid = validity(storage)
    raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8)
    raw = raw[storage.offset * 16 : (storage.offset + n) * 16].reshape(n, 16)
    hexmat = _HEX_WORDS[raw].view(np.uint8)  # (n, 32): two ASCII digits per byte
    dash = const_matrix(n, b"-")
    parts = [hexmat[:, 0:8], dash, hexmat[:, 8:12], dash, hexmat[:, 12:16], dash]
    mat = hcat([*parts, hexmat[:, 16:20], dash, hexmat[:, 20:32]])
    return Encoded([piece_for(mat, valid)], with_nulls(np.full(n, 36), valid))


# ---------------------------------------------------------------------------------------
# Numeric
# ---------------------------------------------------------------------------------------


def decimal_text(arr: pa.Array) -> Encoded:
    """numeric keeps its scale ('1.50'); negative scales print as integers like PG."""
    t = arr.type
    if t.scale < 0:
        arr = pc.cast(arr, _decimal_type(t.precision - t.scale, 0))
        t = arr.type
    if t.bit_width == 128 and t.precision <= 18 and t.scale <= 18:
        return _decimal_text_int64(arr)
    if t.scale <= 6:
        # Arrow prints plain decimals unless the adjusted exponent is below -6, which
        # needs more than six fraction digits.
        return string_text(pc.cast(arr, pa.string()))
    return string_text(_decimal_text_via_unscaled(arr))


def _decimal_text_int64(arr: pa.Array) -> Encoded:
    """Unscaled values fit in int64: integer part via Arrow's fast integer cast, the
    fraction as a fixed-width numpy piece ('.dd'), two pieces per value."""
    n = len(arr)
    scale = arr.type.scale
    valid = validity(arr)
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64)[
        2 * arr.offset : 2 * (arr.offset + n)
    ]
    unscaled = words[0::2]  # the low little-endian word holds the whole value
    if scale == 0:
        return integer_text(pa.array(unscaled, mask=None if valid is None else ~valid))
    negative = unscaled < 0
    mag = np.abs(unscaled)
    power = 10**scale
    int_part = mag // power
    frac_part = mag - int_part * power
    signed = np.where(negative, -int_part, int_part)
    ints = pa.array(signed, mask=None if valid is None else ~valid)
    int_text = as_binary(pc.cast(ints, pa.string()))
    minus_zero = negative & (int_part == 0)
    if valid is not None:
        minus_zero &= valid
    if minus_zero.any():  # -0.05: the integer part alone would lose the sign
        int_text = replace_rows(int_text, minus_zero, [b"-0"] * int(minus_zero.sum()))
    frac = digits_matrix(frac_part, scale, b".")
    lengths = binary_lengths(int_text) + scale + 1
    return Encoded([int_text, piece_for(frac, valid)], with_nulls(lengths, valid))


def _decimal_type(precision: int, scale: int) -> pa.DataType:
    return (
        pa.decimal128(precision, scale)
        if precision <= 38
        else pa.decimal256(precision, scale)
    )


def _decimal_text_via_unscaled(arr: pa.Array) -> pa.Array:
    """Print the unscaled integer and insert the point: no scientific notation ever."""
    t = arr.type
    as_int_type = pa.decimal128(38, 0) if t.bit_width == 128 else pa.decimal256(76, 0)
    unscaled = pa.Array.from_buffers(
        as_int_type, len(arr), arr.buffers(), offset=arr.offset
    )
    text = pc.cast(unscaled, pa.string())
    negative = pc.starts_with(text, "-")
    digits = pc.utf8_ltrim(text, "-")
    digits = pc.utf8_lpad(digits, t.scale + 1, "0")
    digits = pc.binary_replace_slice(digits, -t.scale, -t.scale, ".")
    return pc.if_else(negative, pc.binary_join_element_wise("-", digits, ""), digits)


# ---------------------------------------------------------------------------------------
# Dates and times
# ---------------------------------------------------------------------------------------


def date_text(arr: pa.Array) -> Encoded:
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
    y, m, d = civil_from_days_py(days)
    if y <= 0:
        return f"{1 - y:04d}-{m:02d}-{d:02d} BC".encode()
    return f"{y:04d}-{m:02d}-{d:02d}".encode()


def time_text(arr: pa.Array) -> Encoded:
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
    if zone is not None:
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
    y, m, d = civil_from_days_py(days)
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


# ---------------------------------------------------------------------------------------
# Intervals (value by value: rare in results, and the format has many cases)
# ---------------------------------------------------------------------------------------


def interval_text(arr: pa.Array) -> Encoded:
    valid = validity(arr)
    fields = interval_fields(arr)
    texts: list[bytes | None] = []
    ok = valid if valid is not None else np.ones(len(arr), dtype=bool)
    for is_ok, months, days, us in zip(
        ok.tolist(), *(f.tolist() for f in fields), strict=True
    ):
        texts.append(format_interval(months, days, us).encode() if is_ok else None)
    piece = pa.array(texts, pa.binary())
    return Encoded([piece], with_nulls(binary_lengths(piece), valid))


def interval_fields(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(months, days, µs) per row of a month_day_nano interval or duration array."""
    n = len(arr)
    if pa.types.is_duration(arr.type):
        us = micros(arr, arr.type.unit)
        return np.zeros(n, np.int64), np.zeros(n, np.int64), us
    rec = np.frombuffer(
        arr.buffers()[1],
        dtype=np.dtype([("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")]),
    )[arr.offset : arr.offset + n]
    nanos = rec["nanos"].astype(np.int64)
    q, r = np.divmod(nanos, 1000)
    us = q + ((r > 500) | ((r == 500) & (q % 2 == 1)))
    return rec["months"].astype(np.int64), rec["days"].astype(np.int64), us


def format_interval(months: int, days: int, us: int) -> str:
    """interval_out with IntervalStyle = postgres (EncodeInterval, INTSTYLE_POSTGRES)."""
    years = int(months / 12)  # C division truncates toward zero
    mons = months - years * 12
    parts: list[str] = []
    is_before = False
    is_zero = True
    for value, unit in ((years, "year"), (mons, "mon"), (days, "day")):
        if value == 0:
            continue
        plus = "+" if is_before and value > 0 else ""
        parts.append(f"{plus}{value} {unit}{'' if value == 1 else 's'}")
        is_before = value < 0
        is_zero = False
    if is_zero or us != 0:
        neg = us < 0
        a = -us if neg else us
        hours, rem = divmod(a, 3_600_000_000)
        minutes, rem = divmod(rem, 60_000_000)
        secs, frac = divmod(rem, 1_000_000)
        sign = "-" if neg else ("+" if is_before else "")
        clock = f"{sign}{hours:02d}:{minutes:02d}:{secs:02d}"
        if frac:
            clock += f".{frac:06d}".rstrip("0")
        parts.append(clock)
    return " ".join(parts)
