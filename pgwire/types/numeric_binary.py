"""numeric in binary result format, laid out like PostgreSQL's numeric_send.

Part of the numeric family (`pgwire.types.numeric`), kept apart for its size.

The layout is int16 ndigits, int16 weight, uint16 sign, uint16 dscale, then ndigits
base-10000 digits with leading and trailing zero groups stripped. Three kinds of column
arrive here:

- integers and decimals whose unscaled value fits in int64 (precision ≤ 18, the common
  case): vectorized from the integer values;
- PostgreSQL's own numeric text (a string column with `pg_type` numeric metadata, which
  is how sources hand over an unconstrained `numeric` exactly): vectorized from the
  characters, each row keeping its own display scale, NaN and ±Infinity included;
- everything else (wide decimals, floats, text values longer than `_TEXT_GROUPS` groups
  on either side of the point): value by value through `decimal.Decimal`.
"""

from __future__ import annotations

import decimal
import math
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError
from pgwire.types.columns import (
    Encoded,
    binary_lengths,
    make_binary,
    primitive_values,
    validity,
    with_nulls,
)
from pgwire.types.pg_type import PgType
from pgwire.types.registry import unsupported_binary

_NUMERIC_NEG = 0x4000
_NUMERIC_NAN = 0xC000
_NUMERIC_PINF = 0xD000
_NUMERIC_NINF = 0xF000
_POW10 = [10**k for k in range(19)]
# numeric_send reads the display scale of ±Infinity through the short-header mask, where
# their sign bits leave 0x1000: PostgreSQL 15 sends dscale 32 for both (and 0 for NaN).
_INFINITY_DSCALE = 32
# Text values with at most this many base-10000 groups before and after the point take
# the vectorized path (80 digits each side); longer ones (1e100, 1e-100) go one by one.
_TEXT_GROUPS = 20


def numeric_binary(arr: pa.Array, pgtype: PgType) -> Encoded:
    """numeric_send for one column of any numeric-like Arrow type."""
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
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return numeric_text_binary(arr)
    if not pa.types.is_decimal(t):
        raise unsupported_binary(arr, pgtype)
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
    """Vectorized numeric_send for |unscaled values| < 2**64 (uint64 `magnitude`)."""
    n = len(magnitude)
    power = _POW10[scale]
    int_part = magnitude // power
    # Pad the fraction to whole base-10000 groups.
    frac_part = (magnitude - int_part * power) * _POW10[(-scale) % 4]
    frac_groups = (scale + 3) // 4
    groups = np.empty((int_groups + frac_groups, n), dtype=np.int64)
    for start, count, v in (
        (0, int_groups, int_part),
        (int_groups, frac_groups, frac_part),
    ):
        for k in range(start + count - 1, start - 1, -1):
            q = v // 10000
            groups[k] = v - q * 10000
            v = q
    return _pack(groups, int_groups, negative, np.full(n, scale), None, valid)


def _pack(
    groups: np.ndarray,
    int_groups: int,
    negative: np.ndarray,
    dscale: np.ndarray,
    special: np.ndarray | None,
    valid: np.ndarray | None,
) -> Encoded:
    """Lay out rows of base-10000 `groups` (shape (width, n), the first `int_groups`
    before the point) as numeric_send does.

    A mask keeps the 8-byte header and the groups from the first to the last non-zero
    one, and one masked copy compacts the rows. Work is laid out one byte position per
    numpy row (contiguous vectors) and transposed once: reductions across the few groups
    of a row are slow in numpy, vector operations across rows are not. `special` holds
    the sign word of NaN/±Infinity rows (0 elsewhere); their groups must be zero.
    """
    width, n = groups.shape
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
    if special is not None:
        sign = np.where(special != 0, special, sign)
        dscale = np.where(special == _NUMERIC_NAN, 0,
                          np.where(special != 0, _INFINITY_DSCALE, dscale))
    data = np.empty((8 + 2 * width, n), dtype=np.uint8)
    keep = np.ones((8 + 2 * width, n), dtype=bool)
    for i, field in enumerate((ndigits, weight, sign, dscale)):
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


def numeric_text_binary(arr: pa.Array) -> Encoded:
    """numeric_send of PostgreSQL's numeric text ('-12.50', 'NaN', '-Infinity').

    The display scale is the number of digits after the point, as numeric_out writes
    it, so each row keeps its own. Anything that is not such text is an error (22P02),
    never a guess.
    """
    if not pa.types.is_string(arr.type):
        arr = arr.cast(pa.string())
    n = len(arr)
    valid = validity(arr)
    present = np.ones(n, dtype=bool) if valid is None else valid
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset : arr.offset + n + 1]
    start = offsets[:-1].astype(np.int64)
    length = np.diff(offsets).astype(np.int64)
    data = np.frombuffer(arr.buffers()[2] or b"\0", dtype=np.uint8)
    if len(data) == 0:
        data = np.zeros(1, dtype=np.uint8)

    def char(index: np.ndarray, ok: np.ndarray) -> np.ndarray:
        return np.where(ok, data[np.where(ok, index, 0)], 0)

    head = char(start, length > 0)
    negative = head == ord("-")
    second = char(start + 1, length > 1)
    # numeric_out spells the special values NaN, Infinity and -Infinity.
    is_special = present & ((head == ord("N")) | (head == ord("I"))
                            | (negative & (second == ord("I"))))
    special = np.zeros(n, dtype=np.int64)
    if is_special.any():
        special = _special_words(arr, is_special)
    regular = present & ~is_special
    dot = pc.fill_null(pc.find_substring(arr, "."), -1).to_numpy().astype(np.int64)
    body = start + negative
    int_len = np.where(dot >= 0, dot, length) - negative
    frac_len = np.where(dot >= 0, length - dot - 1, 0)
    int_len = np.where(regular, int_len, 0)
    frac_len = np.where(regular, frac_len, 0)
    if (regular & (int_len <= 0)).any():
        bad = arr[int(np.argmax(regular & (int_len <= 0)))].as_py()
        raise PgError(INVALID_TEXT_REPRESENTATION,
                      f'invalid input syntax for type numeric: "{bad}"')
    int_need = (int_len + 3) // 4
    frac_need = (frac_len + 3) // 4
    wide = regular & ((int_need > _TEXT_GROUPS) | (frac_need > _TEXT_GROUPS))
    narrow = regular & ~wide
    int_groups = max(1, int(int_need[narrow].max(initial=0)))
    frac_groups = int(frac_need[narrow].max(initial=0))
    groups = np.zeros((int_groups + frac_groups, n), dtype=np.int64)
    bad_digit = np.zeros(n, dtype=bool)
    for g in range(int_groups):
        for j in range(4):
            back = (int_groups - 1 - g) * 4 + (3 - j)  # digits from the end of the int part
            ok = narrow & (back < int_len)
            digit = char(body + int_len - 1 - back, ok).astype(np.int64) - ord("0")
            bad_digit |= ok & ((digit < 0) | (digit > 9))
            groups[g] += np.where(ok, digit, 0) * _POW10[3 - j]
    for g in range(frac_groups):
        for j in range(4):
            p = g * 4 + j
            ok = narrow & (p < frac_len)
            digit = char(body + int_len + 1 + p, ok).astype(np.int64) - ord("0")
            bad_digit |= ok & ((digit < 0) | (digit > 9))
            groups[int_groups + g] += np.where(ok, digit, 0) * _POW10[3 - j]
    if bad_digit.any():
        bad = arr[int(np.argmax(bad_digit))].as_py()
        raise PgError(INVALID_TEXT_REPRESENTATION,
                      f'invalid input syntax for type numeric: "{bad}"')
    dscale = np.where(narrow, frac_len, 0)
    encoded = _pack(groups, int_groups, negative, dscale, special, valid)
    if not wide.any():
        return encoded
    # Rare very long values: numeric_send through Decimal, merged in by position.
    fast = encoded.pieces[0]
    rows = np.flatnonzero(wide)
    slow = pa.array([numeric_send(decimal.Decimal(arr[int(i)].as_py())) for i in rows],
                    pa.binary())
    merged = pc.replace_with_mask(fast, pa.array(wide), slow)
    return Encoded([merged], with_nulls(binary_lengths(merged), valid))


def _special_words(arr: pa.Array, mask: np.ndarray) -> np.ndarray:
    words = np.zeros(len(arr), dtype=np.int64)
    for i in np.flatnonzero(mask):
        text = arr[int(i)].as_py()
        word = {"NaN": _NUMERIC_NAN, "Infinity": _NUMERIC_PINF,
                "-Infinity": _NUMERIC_NINF}.get(text)
        if word is None:
            raise PgError(INVALID_TEXT_REPRESENTATION,
                          f'invalid input syntax for type numeric: "{text}"')
        words[i] = word
    return words


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
        return struct.pack(">hhHH", 0, 0, _NUMERIC_NAN, 0)
    if value.is_infinite():
        return struct.pack(">hhHH", 0, 0, _NUMERIC_NINF if value < 0 else _NUMERIC_PINF,
                           _INFINITY_DSCALE)
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
