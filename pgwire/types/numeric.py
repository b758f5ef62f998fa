"""numeric: text output of decimal columns, binary output, and parameter input.

Text keeps the column's scale ('1.50') and never uses scientific notation; negative
scales print as integers, like PostgreSQL. Binary output (numeric_send) lives in
`pgwire.types.numeric_binary`. Parameters: numeric_in's syntax and numeric_recv's layout,
read into `decimal.Decimal`.
"""

from __future__ import annotations

import decimal
import re
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.types.columns import (
    Encoded,
    as_binary,
    binary_lengths,
    digits_matrix,
    piece_for,
    replace_rows,
    validity,
    with_nulls,
)
from pgwire.types.integers import integer_text
from pgwire.types.numeric_binary import numeric_binary, numeric_send, numeric_text_binary
from pgwire.types.pg_type import NUMERIC, PgType
from pgwire.types.pg_type import input_syntax_error as syntax_error
from pgwire.types.registry import BadBinary, Registry
from pgwire.types.text import string_text

__all__ = ["decimal_text", "numeric_binary", "numeric_send", "numeric_text_binary", "register"]

DECIMAL_TYPES = (
    pa.decimal32(9, 0), pa.decimal64(18, 0), pa.decimal128(38, 0), pa.decimal256(76, 0),
)  # fmt: skip
# numeric_in's syntax: digits with an optional point and exponent (as float input).
_NUMERIC_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$", re.ASCII)

# --- text output ---------------------------------------------------------------------


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


# --- parameters ----------------------------------------------------------------------


_NUMERIC_SPECIAL = {
    "nan": "NaN",
    "infinity": "Infinity",
    "+infinity": "Infinity",
    "-infinity": "-Infinity",
    "inf": "Infinity",
    "+inf": "Infinity",
    "-inf": "-Infinity",
}


def _parse_numeric(oid: int, text: str, _tz: str) -> decimal.Decimal:
    stripped = text.strip()
    special = _NUMERIC_SPECIAL.get(stripped.lower())
    if special is not None:
        return decimal.Decimal(special)
    if not _NUMERIC_RE.match(stripped):
        raise syntax_error(oid, text)
    return decimal.Decimal(stripped)


_NUMERIC_POS, _NUMERIC_NEG, _NUMERIC_NAN = 0x0000, 0x4000, 0xC000
_NUMERIC_PINF, _NUMERIC_NINF = 0xD000, 0xF000


def _recv_numeric(data: bytes) -> decimal.Decimal:
    if len(data) < 8:
        raise BadBinary("numeric header too short")
    ndigits, weight, sign, dscale = struct.unpack(">hhHH", data[:8])
    if ndigits < 0 or len(data) != 8 + 2 * ndigits:
        raise BadBinary("numeric digit count does not match the data")
    if sign == _NUMERIC_NAN:
        return decimal.Decimal("NaN")
    if sign == _NUMERIC_PINF:
        return decimal.Decimal("Infinity")
    if sign == _NUMERIC_NINF:
        return decimal.Decimal("-Infinity")
    if sign not in (_NUMERIC_POS, _NUMERIC_NEG):
        raise BadBinary('invalid sign in external "numeric" value')
    if dscale > 0x3FFF:
        raise BadBinary('invalid scale in external "numeric" value')
    digits = struct.unpack(f">{ndigits}H", data[8:])
    if any(d >= 10000 for d in digits):
        raise BadBinary('invalid digit in external "numeric" value')
    coefficient = "".join(f"{d:04d}" for d in digits) or "0"
    # value = coefficient × 10000^(weight - ndigits + 1), shown with dscale decimals.
    exponent = 4 * (weight - ndigits + 1)
    value = decimal.Decimal(
        f"{'-' if sign == _NUMERIC_NEG else ''}{coefficient}E{exponent}"
    )
    with decimal.localcontext() as ctx:
        ctx.prec = len(coefficient) + abs(exponent) + dscale + 2
        ctx.rounding = decimal.ROUND_HALF_UP  # round_var rounds half away from zero
        return value.quantize(decimal.Decimal(1).scaleb(-dscale))


def _decimal_text(arr: pa.Array, _pgtype: PgType, _timezone: str) -> Encoded:
    return decimal_text(arr)


def _numeric_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    return numeric_binary(arr, pgtype)


def register(registry: Registry) -> None:
    registry.add_text_out(DECIMAL_TYPES, _decimal_text)
    registry.add_binary_out((NUMERIC.oid,), _numeric_binary)
    registry.add_text_in((NUMERIC.oid,), _parse_numeric)
    registry.add_binary_in((NUMERIC.oid,), _recv_numeric)
