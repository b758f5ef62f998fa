"""Building blocks shared by the text and binary result encoders.

An encoded column is an `Encoded`: a few "pieces" whose per-row concatenation is the
value's bytes, plus each row's byte length (-1 for NULL, which is exactly what DataRow
sends). A piece is either an Arrow binary array (NULL rows contribute nothing) or, for
fixed-width values of a column without NULLs, an (n, width) uint8 numpy matrix that
`results.encode_rows` can glue to its neighbours before handing everything to Arrow.

Most formatting happens on such matrices: dates, times and hex digits are written one
character column at a time with numpy, which costs a few vector operations per character
instead of Python work per value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.types.civil import USECS_PER_DAY

Piece = pa.Array | np.ndarray

PG_EPOCH_DAYS = 10_957  # 2000-01-01 in days since 1970-01-01
PG_EPOCH_USECS = PG_EPOCH_DAYS * USECS_PER_DAY
INT32_MAX, INT32_MIN = 2**31 - 1, -(2**31)
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)

_ZERO = ord("0")


@dataclass
class Encoded:
    """One column's wire values: per-row concatenation of `pieces`, `lengths` (-1 = NULL)."""

    pieces: list[Piece]
    lengths: np.ndarray


def null_column(n: int) -> Encoded:
    return Encoded([], np.full(n, -1, dtype=np.int64))


def validity(arr: pa.Array) -> np.ndarray | None:
    """Boolean validity per row, or None when the array has no NULLs."""
    if arr.null_count == 0:
        return None
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=bool)
    buf = arr.buffers()[0]
    if buf is None:  # e.g. unions or run-end arrays compute validity elsewhere
        return pc.is_valid(arr).to_numpy(zero_copy_only=False)
    return _bits(buf, arr.offset, len(arr))


def _bits(buf: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """n bits of an Arrow bitmap from bit `offset`, as booleans (only the bytes needed:
    slices of a big batch share its whole bitmap)."""
    raw = np.frombuffer(buf, dtype=np.uint8)[offset // 8 : (offset + n + 7) // 8]
    bits = np.unpackbits(raw, bitorder="little")
    start = offset % 8
    return bits[start : start + n].astype(bool)


def with_nulls(lengths: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """Lengths as int64 with -1 where the row is NULL."""
    lengths = lengths.astype(np.int64, copy=False)
    if valid is None:
        return lengths
    return np.where(valid, lengths, -1)


def _validity_buffer(valid: np.ndarray | None) -> pa.Buffer | None:
    if valid is None:
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def binary_from_fixed(mat: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """(n, w) uint8 matrix → binary array of n values of w bytes (NULL where not valid)."""
    n, w = mat.shape
    offsets = np.arange(0, (n + 1) * w, w, dtype=np.int32)
    data = np.ascontiguousarray(mat, dtype=np.uint8)
    return pa.Array.from_buffers(
        pa.binary(),
        n,
        [_validity_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)],
    )


def binary_from_ragged(
    mat: np.ndarray, lengths: np.ndarray, valid: np.ndarray | None = None
) -> pa.Array:
    """Row i of the binary array is mat[i, :lengths[i]] (lengths ≥ 0)."""
    n, w = mat.shape
    if n and (lengths == w).all():
        return binary_from_fixed(mat, valid)
    keep = np.arange(w) < lengths[:, None]
    data = mat[keep]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(
        pa.binary(),
        n,
        [_validity_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)],
    )


def make_binary(
    n: int, offsets: np.ndarray, data: np.ndarray, valid: np.ndarray | None = None
) -> pa.Array:
    """A `binary` array from numpy offsets (n + 1, starting at 0) and data bytes."""
    return pa.Array.from_buffers(
        pa.binary(),
        n,
        [
            _validity_buffer(valid),
            pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int32)),
            pa.py_buffer(np.ascontiguousarray(data, dtype=np.uint8)),
        ],
    )


def piece_for(mat: np.ndarray, valid: np.ndarray | None) -> Piece:
    """A fixed-width matrix stays numpy when it has no NULL rows, else becomes Arrow."""
    return mat if valid is None else binary_from_fixed(mat, valid)


def as_binary(arr: pa.Array) -> pa.Array:
    """Any string/binary flavour as a plain `binary` array sharing buffers when possible."""
    t = arr.type
    if pa.types.is_binary(t):
        return arr
    if pa.types.is_string(t):
        return arr.view(pa.binary())
    if pa.types.is_large_string(t):
        return arr.view(pa.large_binary()).cast(pa.binary())
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return arr.cast(pa.binary())
    if pa.types.is_string_view(t):
        return arr.cast(pa.string()).view(pa.binary())
    if pa.types.is_fixed_size_binary(t):
        return arr.cast(pa.binary())
    raise TypeError(f"not a binary-like array: {t}")


def binary_lengths(arr: pa.Array) -> np.ndarray:
    """Per-row byte lengths of a `binary` (int32 offsets) array."""
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[
        arr.offset : arr.offset + len(arr) + 1
    ]
    return np.diff(offsets)


def binary_data(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets rebased to 0, data bytes) of a `binary` array, zero-copy."""
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[
        arr.offset : arr.offset + len(arr) + 1
    ]
    buf = arr.buffers()[2]
    data = (
        np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    )
    start = int(offsets[0])
    return offsets - start, data[start : int(offsets[-1])]


def to_matrix(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A binary array as a zero-padded (n, maxlen) uint8 matrix and its lengths."""
    offsets, data = binary_data(arr)
    lengths = np.diff(offsets)
    width = int(lengths.max()) if len(lengths) else 0
    cols = np.arange(width)
    idx = offsets[:-1, None] + cols
    mask = cols < lengths[:, None]
    if len(data) == 0:
        return np.zeros((len(lengths), width), np.uint8), lengths
    mat = np.where(mask, data[np.minimum(idx, len(data) - 1)], 0).astype(np.uint8)
    return mat, lengths


def primitive_values(arr: pa.Array, dtype: np.dtype | type) -> np.ndarray:
    """The values buffer of a fixed-width primitive array as numpy, zero-copy.

    Slots under NULLs hold whatever the producer left there; callers mask them out.
    """
    dtype = np.dtype(dtype)
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(len(arr), dtype)
    return np.frombuffer(buf, dtype=dtype)[arr.offset : arr.offset + len(arr)]


def zero_nulls(values: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """`values` with 0 under NULL rows, whose slots may hold arbitrary leftovers.

    Keeps garbage from steering data-dependent work (calendar ranges, zone tables).
    """
    return values if valid is None else np.where(valid, values, 0)


def bool_values(arr: pa.Array) -> np.ndarray:
    return _bits(arr.buffers()[1], arr.offset, len(arr))


def digits_matrix(values: np.ndarray, width: int, prefix: bytes = b"") -> np.ndarray:
    """(n, len(prefix) + width): `prefix`, then non-negative integers as zero-padded
    decimals.

    Built one character position at a time in a (width, n) array — contiguous writes —
    and transposed once; floor division by a constant is fast in numpy, `%` is not.
    """
    k = len(prefix)
    cols = np.empty((k + width, len(values)), dtype=np.uint8)
    for i, ch in enumerate(prefix):
        cols[i] = ch
    v = values
    for i in range(k + width - 1, k - 1, -1):
        q = v // 10
        cols[i] = v - q * 10 + _ZERO
        v = q
    return np.ascontiguousarray(cols.T)


def hcat(parts: list[np.ndarray]) -> np.ndarray:
    """Concatenate (n, w_i) uint8 matrices side by side.

    Copies whole w_i-byte items through a structured dtype, several times faster than
    np.hstack, which copies these narrow rows byte-slice by byte-slice.
    """
    n = parts[0].shape[0]
    parts = [p for p in parts if p.shape[1]]
    if len(parts) <= 1:
        return parts[0] if parts else np.empty((n, 0), dtype=np.uint8)
    widths = [p.shape[1] for p in parts]
    rec = np.empty(
        n, dtype=np.dtype([(f"f{i}", f"V{w}") for i, w in enumerate(widths)])
    )
    for i, (part, w) in enumerate(zip(parts, widths, strict=True)):
        rec[f"f{i}"] = np.ascontiguousarray(part).view(f"V{w}").reshape(n)
    return rec.view(np.uint8).reshape(n, sum(widths))


def const_matrix(n: int, text: bytes) -> np.ndarray:
    """(n, len(text)) matrix repeating `text` on every row."""
    return np.broadcast_to(np.frombuffer(text, dtype=np.uint8), (n, len(text)))


def civil_from_days(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Proleptic Gregorian (year, month, day) from days since 1970-01-01 (vectorized).

    Howard Hinnant's algorithm; year 0 is 1 BC, like PostgreSQL's internal numbering.
    """
    z = days.astype(np.int64) + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    y = yoe + era * 400 + (m <= 2)
    return y, m, d


def _date_matrix_arith(days: np.ndarray) -> np.ndarray:
    y, m, d = civil_from_days(days)
    return hcat(
        [
            digits_matrix(np.clip(y, 0, 9999), 4),
            digits_matrix(m, 2, b"-"),
            digits_matrix(d, 2, b"-"),
        ]
    )


def _clock_matrix_arith(secs: np.ndarray) -> np.ndarray:
    return hcat(
        [
            digits_matrix(secs // 3600, 2),
            digits_matrix(secs // 60 % 60, 2, b":"),
            digits_matrix(secs % 60, 2, b":"),
        ]
    )


# Lookup tables, built on first use: 'YYYY-MM-DD' for every day of 1800–2199 (1.5 MB)
# and 'HH:MM:SS' for every second of a day (0.7 MB). A gather of fixed-size items is
# several times faster than producing the digits arithmetically.
_LUT_FIRST_DAY = -62_091  # 1800-01-01
_LUT_DAYS = 146_097  # 400 Gregorian years, through 2199-12-31
_date_lut: np.ndarray | None = None
_clock_lut: np.ndarray | None = None


def _dates() -> np.ndarray:
    global _date_lut
    if _date_lut is None:
        days = np.arange(_LUT_FIRST_DAY, _LUT_FIRST_DAY + _LUT_DAYS, dtype=np.int64)
        _date_lut = np.ascontiguousarray(_date_matrix_arith(days)).view("V10").ravel()
    return _date_lut


def _clocks() -> np.ndarray:
    global _clock_lut
    if _clock_lut is None:
        mat = np.ascontiguousarray(
            _clock_matrix_arith(np.arange(86_400, dtype=np.int64))
        )
        _clock_lut = mat.view(np.int64).ravel()
    return _clock_lut


def date_matrix(days: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """'YYYY-MM-DD' for each day number, and a mask of rows whose year is outside 1..9999
    (those need the slow path: 'BC' suffix or a five-digit year)."""
    n = len(days)
    if n == 0:
        return np.empty((0, 10), np.uint8), np.zeros(0, bool)
    lo, hi = int(days.min()), int(days.max())
    if lo >= _LUT_FIRST_DAY and hi < _LUT_FIRST_DAY + _LUT_DAYS:
        picked = np.take(_dates(), days - _LUT_FIRST_DAY)
        return picked.view(np.uint8).reshape(n, 10), np.zeros(n, dtype=bool)
    # -719162 is 0001-01-01 and 2932897 is 10000-01-01 (days since 1970).
    odd = (days < -719_162) | (days >= 2_932_897)
    return _date_matrix_arith(days), odd


def clock_matrix(usecs_of_day: np.ndarray) -> np.ndarray:
    """'HH:MM:SS' for µs since midnight (hours may exceed 24 for intervals)."""
    secs = usecs_of_day // 1_000_000
    n = len(secs)
    if n and int(secs.min()) >= 0 and int(secs.max()) < 86_400:
        return np.take(_clocks(), secs).view(np.uint8).reshape(n, 8)
    return _clock_matrix_arith(secs)


def fraction_matrix(usecs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """'.ffffff' with trailing zeros trimmed (empty when zero) for µs within a second."""
    frac = usecs - (usecs // 1_000_000) * 1_000_000
    n = len(usecs)
    if not frac.any():
        return np.zeros((n, 7), dtype=np.uint8), np.zeros(n, dtype=np.int64)
    mat = digits_matrix(frac, 6, b".")
    trailing = np.zeros(n, dtype=np.int64)
    for k in (10, 100, 1000, 10_000, 100_000):
        trailing += (frac - (frac // k) * k) == 0
    lengths = np.where(frac == 0, 0, 7 - trailing)
    return mat, lengths


def place(
    dst: np.ndarray, starts: np.ndarray, src: np.ndarray, src_lengths: np.ndarray
) -> None:
    """dst[i, starts[i] + k] = src[i, k] for k < src_lengths[i] (row-wise ragged copy)."""
    rows = np.arange(len(starts))
    for k in range(src.shape[1]):
        sel = k < src_lengths
        if not sel.any():
            break
        dst[rows[sel], starts[sel] + k] = src[sel, k]


def replace_rows(arr: pa.Array, mask: np.ndarray, values: list[bytes]) -> pa.Array:
    """`arr` (binary) with the rows under `mask` replaced by `values`, in order."""
    return pc.replace_with_mask(arr, pa.array(mask), pa.array(values, pa.binary()))


def micros(arr: pa.Array, unit: str) -> np.ndarray:
    """int64 values of a time/timestamp/duration array converted to µs.

    Nanoseconds round half to even, as PostgreSQL's rint() does on input.
    """
    raw = primitive_values(
        arr, np.int64 if arr.type.bit_width == 64 else np.int32
    ).astype(np.int64)
    if unit == "us":
        return raw
    if unit == "ns":
        q, r = np.divmod(raw, 1000)
        return q + ((r > 500) | ((r == 500) & (q % 2 == 1)))
    return raw * (1_000_000 if unit == "s" else 1000)


def unit_of(t: pa.DataType) -> str:
    return getattr(t, "unit", "us")
