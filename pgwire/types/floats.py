"""float4 and float8: text output identical to PostgreSQL 15's float4out / float8out,
big-endian IEEE values in binary (`pgwire.types.integers.fixed_binary`), and parameter
input as float4in / float8in and the *recv functions read it.

With extra_float_digits = 1 (the default since PostgreSQL 12) PostgreSQL prints the
shortest digits that read back to the same float (Ryu), plainly for decimal exponents
-4 ≤ e < 15 (float4: e < 6) and as d.ddde±XX otherwise. Arrow's cast prints the same
shortest digits, plainly for -6 ≤ e ≤ 9 and otherwise with an exponent of as few digits
as needed. So rows agree except for a handful of exponents; those rows are regrouped by
exponent and rewritten with Arrow string kernels whose slice positions are constants
within a group. The exponent itself comes from the value: it is the largest k with
|x| ≥ float(1e k), one binary search per row.

One subtle difference remains: PostgreSQL's Ryu never accepts a decimal lying exactly
halfway to the neighbouring float, even where round-half-even parsing would map it back;
Arrow and Python do accept it for even mantissas. Only integers ≥ 2**53 (2**24 for
float4) can be such midpoints with ≤ 17 digits; they are detected with vectorized
integer arithmetic and re-printed exactly with Python integers, one by one.
"""

from __future__ import annotations

import decimal
import math
import re
import struct
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.errors import NUMERIC_VALUE_OUT_OF_RANGE, PgError
from pgwire.types.columns import (
    Encoded,
    as_binary,
    binary_lengths,
    primitive_values,
    validity,
    with_nulls,
)
from pgwire.types.integers import fixed_binary
from pgwire.types.pg_type import FLOAT4, FLOAT8, PgType, sql_name
from pgwire.types.pg_type import input_syntax_error as syntax_error
from pgwire.types.registry import Registry, expect_size

# float(10**k) for every k where it is a normal or subnormal number, ascending.
_POW10_F64 = np.array([float(f"1e{k}") for k in range(-323, 309)], dtype=np.float64)
_POW10_F64_FIRST = -323
with np.errstate(over="ignore", under="ignore"):
    _POW10_F32 = np.array(
        [np.float32(f"1e{k}") for k in range(-45, 39)], dtype=np.float32
    )
_POW10_F32_FIRST = -45
_SPECIAL_NAMES = pa.array(["NaN", "Infinity", "-Infinity"], pa.string())


def float_text(arr: pa.Array) -> Encoded:
    """float4/float8 as PostgreSQL prints them with extra_float_digits = 1."""
    if arr.type == pa.float16():
        arr = pc.cast(arr, pa.float32())
    single = arr.type == pa.float32()
    n = len(arr)
    valid = validity(arr)
    values = primitive_values(arr, np.float32 if single else np.float64)
    text = pc.cast(arr, pa.string())
    ok = np.ones(n, dtype=bool) if valid is None else valid
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(values) & ok
        nonzero = finite & (values != 0)
    exponent = np.zeros(n, dtype=np.int64)
    if nonzero.any():
        powers, first = (
            (_POW10_F32, _POW10_F32_FIRST) if single else (_POW10_F64, _POW10_F64_FIRST)
        )
        mags = np.abs(values[nonzero])
        exponent[nonzero] = np.searchsorted(powers, mags, side="right") - 1 + first
    exp_high = 6 if single else 15
    # Rows whose notation differs: PostgreSQL plain / Arrow exponent (or vice versa),
    # and one-digit exponents Arrow writes as e-7 where PostgreSQL writes e-07.
    pg_plain = (exponent >= -4) & (exponent < exp_high)
    arrow_plain = (exponent >= -6) & (exponent <= 9)
    change = nonzero & (
        (pg_plain != arrow_plain) | ((exponent >= -9) & (exponent <= -7))
    )
    positions: list[np.ndarray] = []
    replacements: list[pa.Array] = []
    if change.any():
        for exp in np.unique(exponent[change]).tolist():
            rows = np.flatnonzero(change & (exponent == exp))
            subset = text if len(rows) == n else text.take(pa.array(rows))
            positions.append(rows)
            replacements.append(_renotate(subset, values[rows], exp, exp_high))
    special = ok & ~np.isfinite(values)
    if special.any():
        rows = np.flatnonzero(special)
        picked = values[rows]
        code = np.where(np.isnan(picked), 0, np.where(picked > 0, 1, 2))
        positions.append(rows)
        replacements.append(_SPECIAL_NAMES.take(pa.array(code)))
    boundary, step_exps = _on_rounding_boundary(values, nonzero, exponent, text, single)
    if boundary.any():
        rows = np.flatnonzero(boundary)
        positions.append(rows)
        fixed = [
            _boundary_repr(v, q, single)
            for v, q in zip(values[rows].tolist(), step_exps.tolist(), strict=True)
        ]
        replacements.append(pa.array(fixed, pa.string()))
    if positions:
        text = _replace(text, positions, replacements)
    out = as_binary(text)
    return Encoded([out], with_nulls(binary_lengths(out), valid))


def _replace(
    text: pa.Array, positions: list[np.ndarray], replacements: list[pa.Array]
) -> pa.Array:
    """`text` with row positions[i][j] replaced by replacements[i][j] (later lists win)."""
    if len(positions) == 1 and len(positions[0]) == len(text):
        return replacements[0].cast(pa.string())  # every row rewritten, in order
    order_rows = np.concatenate(positions)
    values = pa.concat_arrays([r.cast(pa.string()) for r in replacements])
    # Keep the last replacement of a row (boundary fixes come after notation changes).
    rev = order_rows[::-1]
    _, first_in_rev = np.unique(rev, return_index=True)
    keep = len(order_rows) - 1 - first_in_rev  # ascending row order
    mask = np.zeros(len(text), dtype=bool)
    mask[order_rows[keep]] = True
    return pc.replace_with_mask(text, pa.array(mask), values.take(pa.array(keep)))


def _renotate(text: pa.Array, values: np.ndarray, exp: int, exp_high: int) -> pa.Array:
    """Arrow's text of floats that all have decimal exponent `exp`, PostgreSQL style."""
    negative = np.signbit(values)
    body = pc.utf8_ltrim(text, "-") if negative.any() else text
    if -9 <= exp <= -7:
        # Both use exponents here; PostgreSQL writes at least two exponent digits.
        result = pc.binary_replace_slice(body, -1, -1, "0")
    elif exp_high <= exp <= 9 or exp in (-6, -5):
        # Arrow plain ('0.00001234', '1234567.5'), PostgreSQL exponent.
        if exp < 0:
            digits = pc.utf8_slice_codeunits(body, 1 - exp)  # drop '0.0000'
        else:
            digits = pc.utf8_rtrim(pc.replace_substring(body, ".", ""), "0")
        long = pc.greater(pc.utf8_length(digits), 1)
        mantissa = pc.if_else(long, pc.binary_replace_slice(digits, 1, 1, "."), digits)
        suffix = f"e{'-' if exp < 0 else '+'}{abs(exp):02d}"
        result = pc.binary_join_element_wise(mantissa, suffix, "")
    else:
        # 10 ≤ exp < 15 for float8: Arrow 'd.ddde+1X', PostgreSQL plain.
        digits = pc.replace_substring(pc.utf8_slice_codeunits(body, 0, -4), ".", "")
        width = exp + 1
        padded = pc.utf8_rpad(digits, width, "0")
        dotted = pc.binary_replace_slice(digits, width, width, ".")
        result = pc.if_else(pc.greater(pc.utf8_length(digits), width), dotted, padded)
    if negative.any():
        signed = pc.binary_join_element_wise("-", result, "")
        result = pc.if_else(pa.array(negative), signed, result)
    return result


def _on_rounding_boundary(
    values: np.ndarray,
    nonzero: np.ndarray,
    exponent: np.ndarray,
    text: pa.Array,
    single: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose shortest digits sit exactly halfway to a neighbouring float, and for
    those rows q, the power of ten of the digits' last place.

    With x = M·2**e and the digits D·10**q (D odd part `odd`, 2**twos), x's upper
    midpoint is (2M + 1)·2**(e-1), the lower one (2M - 1)·2**(e-1), or (4M - 1)·2**(e-2)
    just above a power of two; equality needs odd·5**q to match the odd factor and the
    powers of two to agree. Only q ≥ 0 (integers) with 5**q small enough can match.
    """
    n = len(values)
    mag = np.abs(values)
    if single:
        bits = mag.astype(np.float32).view(np.uint32).astype(np.int64)
        frac_bits, bias, qmax, big = 23, 150, 10, np.float32(2.0**24)
        biased = (bits >> 23) & 0xFF
    else:
        raw = mag.astype(np.float64).view(np.uint64)
        frac_bits, bias, qmax, big = 52, 1075, 23, 2.0**53
        biased = (raw >> np.uint64(52)).astype(np.int64) & 0x7FF
        bits = (raw & np.uint64((1 << 52) - 1)).astype(np.int64)
    frac = bits & ((1 << frac_bits) - 1)
    with np.errstate(invalid="ignore"):
        candidate = nonzero & (mag >= big) & ((frac & 1) == 0) & (exponent <= qmax + 17)
    result = np.zeros(n, dtype=bool)
    if not candidate.any():
        return result, np.zeros(0, dtype=np.int64)
    rows = np.flatnonzero(candidate)
    # The significant digits Arrow printed: mantissa without '.', trailing zeros, sign.
    body = pc.utf8_ltrim(text.take(pa.array(rows)), "-")
    mantissa = pc.replace_substring_regex(body, "e.*$", "")
    digit_text = pc.utf8_rtrim(pc.replace_substring(mantissa, ".", ""), "0")
    digits = pc.cast(digit_text, pa.int64()).to_numpy(zero_copy_only=False)
    ndigits = pc.utf8_length(digit_text).to_numpy(zero_copy_only=False).astype(np.int64)
    q = exponent[rows] - ndigits + 1
    mant = frac[rows] | (1 << frac_bits)
    e = biased[rows] - bias
    lowbit = digits & -digits
    twos = np.frexp(lowbit.astype(np.float64))[1] - 1
    odd = digits >> twos
    qc = np.clip(q, 0, qmax)
    pow5 = np.array([5**i for i in range(qmax + 1)], dtype=np.int64)[qc]
    fits = (q >= 0) & (q <= qmax) & (odd <= (1 << 56) // pow5)
    product = np.where(fits, odd, 0) * pow5
    mid = (q + twos == e - 1) & ((product == 2 * mant + 1) | (product == 2 * mant - 1))
    below_pow2 = (frac[rows] == 0) & (q + twos == e - 2) & (product == 4 * mant - 1)
    hit = fits & (mid | below_pow2)
    result[rows] = hit
    return result, q[hit]


def _boundary_repr(x: float, q: int, single: bool) -> str:
    """PostgreSQL's text for an integer-valued float whose shortest digits (last place
    10**q) are a rounding midpoint: the shortest decimal strictly inside the rounding
    interval, nearest to x, ties to even — in exact integer arithmetic. Nothing with
    the last place at 10**q or coarser qualifies, so the search starts one finer."""
    negative = x < 0
    a = abs(x)
    mantissa_bits = 24 if single else 53
    m, ex = math.frexp(a)
    big_m = int(m * (1 << mantissa_bits))
    e = ex - mantissa_bits
    value = big_m << e  # x ≥ 2**mantissa_bits, so e ≥ 1 and x is an integer
    ulp = 1 << e
    below = ulp // 2 if big_m == 1 << (mantissa_bits - 1) else ulp
    low2, high2 = 2 * value - below, 2 * value + ulp  # interval ends, doubled
    for step_exp in range(q - 1, -1, -1):
        step = 10**step_exp
        base = value // step
        best: int | None = None
        for k in (base, base + 1):
            if low2 < 2 * k * step < high2 and (
                best is None
                or abs(k * step - value) < abs(best * step - value)
                or (abs(k * step - value) == abs(best * step - value) and k % 2 == 0)
            ):
                best = k
        if best is not None:
            text = str(best)
            digits = text.rstrip("0")
            return layout_float(
                digits, step_exp + len(text) - 1, negative, 6 if single else 15
            )
    return repr(x)  # unreachable: step 1 always lands inside


def pg_float_repr(x: float, single: bool = False) -> str:
    """float8out / float4out (extra_float_digits = 1) for one value, computed exactly.

    Shortest decimal strictly inside the interval of values that round to x (PostgreSQL
    excludes the interval's ends), nearest to x, ties to even. Slow; used for the rare
    boundary rows and as the reference in tests.
    """
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    negative = x < 0
    a = abs(x)
    if single:
        a32 = np.float32(a)
        a = float(a32)
        with np.errstate(over="ignore"):
            below = float(np.nextafter(a32, np.float32(0)))
            above = float(np.nextafter(a32, np.float32(np.inf)))
        max_digits = 9
    else:
        below = math.nextafter(a, 0.0)
        above = math.nextafter(a, math.inf)
        max_digits = 17
    exact = Fraction(a)
    low = (exact + Fraction(below)) / 2
    high = (
        (exact + Fraction(above)) / 2
        if not math.isinf(above)
        else exact + (exact - low)
    )
    e10 = decimal.Decimal(a).adjusted()
    for n in range(1, max_digits + 1):
        scale = e10 - n + 1
        unit = Fraction(10) ** scale
        floor_k = math.floor(exact / unit)
        best: int | None = None
        for k in (floor_k, floor_k + 1):
            value = k * unit
            if k > 0 and low < value < high:
                if best is None:
                    best = k
                else:
                    d_best, d_k = abs(best * unit - exact), abs(value - exact)
                    if d_k < d_best or (d_k == d_best and k % 2 == 0):
                        best = k
        if best is not None:
            text = str(best)
            stripped = text.rstrip("0")
            return layout_float(
                stripped, scale + len(text) - 1, negative, 6 if single else 15
            )
    return repr(x)  # unreachable: 17 (9) digits always round-trip


def layout_float(digits: str, exponent: int, negative: bool, exp_high: int) -> str:
    """Significant digits d1d2… with value d1.d2… × 10**exponent, PostgreSQL style."""
    sign = "-" if negative else ""
    if exponent < -4 or exponent >= exp_high:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    if len(digits) <= exponent + 1:
        return sign + digits + "0" * (exponent + 1 - len(digits))
    return f"{sign}{digits[: exponent + 1]}.{digits[exponent + 1 :]}"


# --- parameters ----------------------------------------------------------------------


_FLOAT_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$", re.ASCII)
_FLOAT_SPECIAL = {
    "nan": float("nan"),
    "+nan": float("nan"),
    "-nan": float("nan"),
    "infinity": float("inf"),
    "+infinity": float("inf"),
    "-infinity": float("-inf"),
    "inf": float("inf"),
    "+inf": float("inf"),
    "-inf": float("-inf"),
}


def _parse_float(oid: int, text: str, _tz: str) -> float:
    stripped = text.strip()
    special = _FLOAT_SPECIAL.get(stripped.lower())
    if special is not None:
        return special
    if not _FLOAT_RE.match(stripped):
        raise syntax_error(oid, text)
    value = float(stripped)
    if oid == FLOAT4.oid:
        # Round to single precision the way the column will store it (inf on overflow).
        try:
            value = struct.unpack("<f", struct.pack("<f", value))[0]
        except OverflowError:
            value = math.copysign(math.inf, value)
    mantissa = stripped.lower().partition("e")[0]
    underflow = value == 0.0 and any(c in "123456789" for c in mantissa)
    if underflow or value in (float("inf"), float("-inf")):
        name = sql_name(oid)
        raise PgError(
            NUMERIC_VALUE_OUT_OF_RANGE, f'"{stripped}" is out of range for type {name}'
        )
    return value


def _recv_float4(data: bytes) -> float:
    expect_size(data, 4)
    return struct.unpack(">f", data)[0]


def _recv_float8(data: bytes) -> float:
    expect_size(data, 8)
    return struct.unpack(">d", data)[0]


def _float_text(arr: pa.Array, _pgtype: PgType, _timezone: str) -> Encoded:
    return float_text(arr)


def register(registry: Registry) -> None:
    registry.add_text_out((pa.float16(), pa.float32(), pa.float64()), _float_text)
    registry.add_binary_out((FLOAT4.oid, FLOAT8.oid), fixed_binary)
    registry.add_text_in((FLOAT4.oid, FLOAT8.oid), _parse_float)
    registry.add_binary_in((FLOAT4.oid,), _recv_float4)
    registry.add_binary_in((FLOAT8.oid,), _recv_float8)
