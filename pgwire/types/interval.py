"""interval: text and binary output of result columns, text and binary input of parameters.

Output follows interval_out with IntervalStyle = postgres and interval_send (int64 µs,
int32 days, int32 months); results are formatted value by value (intervals are rare in
result sets, and the format has many cases). Input parses PostgreSQL's interval syntax
(postgres style, SQL standard 'Y-M D H:M:S', ISO 8601 'P…') into a `PgInterval`: months
survive, which Python's timedelta would lose, and DuckDB binds it as INTERVAL.
"""

from __future__ import annotations

import decimal
import re
import struct

import duckdb
import numpy as np
import pyarrow as pa
from duckdb import sqltypes

from pgwire.types.columns import (
    Encoded,
    binary_lengths,
    micros,
    piece_for,
    validity,
    with_nulls,
)
from pgwire.types.civil import USECS_PER_DAY
from pgwire.types.datetime_text import fraction_us
from pgwire.types.pg_type import INTERVAL, PgType
from pgwire.types.pg_type import input_syntax_error as syntax_error
from pgwire.types.registry import Registry, expect_size, unsupported_binary


class PgInterval(duckdb.Value):
    """An interval parameter: PostgreSQL's three fields, bound by DuckDB as INTERVAL.

    PostgreSQL intervals keep months, days and microseconds apart; Python's timedelta
    has no months, so the value reaches DuckDB as text it casts to INTERVAL.
    """

    def __init__(self, months: int, days: int, microseconds: int) -> None:
        text = f"{months} months {days} days {microseconds} microseconds"
        super().__init__(text, sqltypes.INTERVAL)
        self.months, self.days, self.microseconds = months, days, microseconds

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PgInterval):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def _fields(self) -> tuple[int, int, int]:
        return (self.months, self.days, self.microseconds)

    def __str__(self) -> str:
        return str(self.object)

    def __repr__(self) -> str:
        return f"PgInterval({self.months}, {self.days}, {self.microseconds})"


# --- text input ------------------------------------------------------------------------

_MONTHS, _DAYS, _USECS = 0, 1, 2
# unit → (field, amount of that field per unit)
_INTERVAL_UNITS: dict[str, tuple[int, int]] = {}
for _names, _unit in (
    (("millennium", "millennia", "millenniums", "mil", "mils"), (_MONTHS, 12000)),
    (("century", "centuries", "cent", "c"), (_MONTHS, 1200)),
    (("decade", "decades", "dec", "decs"), (_MONTHS, 120)),
    (("year", "years", "yr", "yrs", "y"), (_MONTHS, 12)),
    (("month", "months", "mon", "mons"), (_MONTHS, 1)),
    (("week", "weeks", "w"), (_DAYS, 7)),
    (("day", "days", "d"), (_DAYS, 1)),
    (("hour", "hours", "hr", "hrs", "h"), (_USECS, 3_600_000_000)),
    (("minute", "minutes", "min", "mins", "m"), (_USECS, 60_000_000)),
    (("second", "seconds", "sec", "secs", "s"), (_USECS, 1_000_000)),
    (
        ("millisecond", "milliseconds", "ms", "msec", "msecs", "millisecon"),
        (_USECS, 1000),
    ),
    (("microsecond", "microseconds", "us", "usec", "usecs", "microsecon"), (_USECS, 1)),
):
    for _name in _names:
        _INTERVAL_UNITS[_name] = _unit

_INTERVAL_TOKEN = re.compile(
    r"\s*(?:(?P<time>[+-]?\d+:\d+(?::\d+(?:\.\d*)?)?)"
    r"|(?P<ym>[+-]?\d+-\d+)"
    r"|(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"|(?P<word>[a-z@]+))"
)
_ISO_INTERVAL = re.compile(
    r"^(?P<neg>-)?p(?:(?P<y>[+-]?[\d.]+)y)?(?:(?P<mo>[+-]?[\d.]+)m)?(?:(?P<w>[+-]?[\d.]+)w)?"
    r"(?:(?P<d>[+-]?[\d.]+)d)?(?:t(?:(?P<h>[+-]?[\d.]+)h)?(?:(?P<mi>[+-]?[\d.]+)m)?"
    r"(?:(?P<s>[+-]?[\d.]+)s)?)?$"
)


class _IntervalAcc:
    """Accumulates interval fields the way DecodeInterval spreads fractional units."""

    def __init__(self) -> None:
        self.months = 0
        self.days = 0
        self.us = 0

    def add(self, amount: decimal.Decimal, field: int, per_unit: int) -> None:
        if field == _USECS:
            self.us += int(
                (amount * per_unit).to_integral_value(decimal.ROUND_HALF_EVEN)
            )
            return
        whole = int(amount)  # truncates toward zero, like the C code
        frac = amount - whole
        if field == _MONTHS:
            self.months += whole * per_unit
            if per_unit >= 12:  # fractional years become whole months (rint)
                self.months += int(
                    (frac * per_unit).to_integral_value(decimal.ROUND_HALF_EVEN)
                )
                return
            frac_days = frac * 30  # DAYS_PER_MONTH
        else:
            self.days += whole * per_unit
            frac_days = frac * per_unit
        extra_days = int(frac_days)
        self.days += extra_days
        self.us += int(
            ((frac_days - extra_days) * USECS_PER_DAY).to_integral_value(
                decimal.ROUND_HALF_EVEN
            )
        )


def parse_interval(oid: int, text: str, _tz: str) -> PgInterval:
    word = text.strip().lower()
    acc = _IntervalAcc()
    iso = _ISO_INTERVAL.match(word) if word.startswith(("p", "-p")) else None
    if iso is not None and word not in ("p", "-p"):
        try:
            for group, (field, per) in (
                ("y", (_MONTHS, 12)), ("mo", (_MONTHS, 1)), ("w", (_DAYS, 7)), ("d", (_DAYS, 1)),
                ("h", (_USECS, 3_600_000_000)), ("mi", (_USECS, 60_000_000)), ("s", (_USECS, 1_000_000)),
            ):  # fmt: skip
                if iso[group] is not None:
                    acc.add(decimal.Decimal(iso[group]), field, per)
        except decimal.InvalidOperation:
            raise syntax_error(oid, text) from None
        sign = -1 if iso["neg"] else 1
        return PgInterval(sign * acc.months, sign * acc.days, sign * acc.us)
    tokens = _tokenize_interval(word, oid, text)
    ago = False
    i = 0
    seen_any = False
    while i < len(tokens):
        kind, value = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if kind == "word":
            if value == "@":
                i += 1
                continue
            if value == "ago" and i == len(tokens) - 1:
                ago = True
                i += 1
                continue
            raise syntax_error(oid, text)
        seen_any = True
        if kind == "time":
            acc.us += _interval_clock(value)
        elif kind == "ym":
            sign = -1 if value.startswith("-") else 1
            years, _, months = value.lstrip("+-").partition("-")
            acc.months += sign * (int(years) * 12 + int(months))
        elif nxt is not None and nxt[0] == "word" and nxt[1] in _INTERVAL_UNITS:
            field, per = _INTERVAL_UNITS[nxt[1]]
            acc.add(decimal.Decimal(value), field, per)
            i += 1
        elif nxt is not None and nxt[0] == "time":
            acc.add(decimal.Decimal(value), _DAYS, 1)  # SQL-standard 'D H:M:S'
        elif nxt is None:
            acc.add(
                decimal.Decimal(value), _USECS, 1_000_000
            )  # a bare number is seconds
        else:
            raise syntax_error(oid, text)
        i += 1
    if not seen_any:
        raise syntax_error(oid, text)
    sign = -1 if ago else 1
    return PgInterval(sign * acc.months, sign * acc.days, sign * acc.us)


def _tokenize_interval(word: str, oid: int, text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    word = word.rstrip()
    while pos < len(word):
        m = _INTERVAL_TOKEN.match(word, pos)
        if m is None or m.end() == pos:
            raise syntax_error(oid, text)
        kind = m.lastgroup
        assert kind is not None
        tokens.append((kind, m[kind]))
        pos = m.end()
    return tokens


def _interval_clock(value: str) -> int:
    """'-04:05:06.5' → µs; 'H:M' is hours and minutes, as in PostgreSQL."""
    sign = -1 if value.startswith("-") else 1
    parts = value.lstrip("+-").split(":")
    hours, minutes = int(parts[0]), int(parts[1])
    seconds, _, frac = (parts[2] if len(parts) > 2 else "0").partition(".")
    us = ((hours * 60 + minutes) * 60 + int(seconds)) * 1_000_000 + fraction_us(frac)
    return sign * us


# --- output --------------------------------------------------------------------------


def interval_text(arr: pa.Array, _pgtype: PgType, _timezone: str) -> Encoded:
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


def interval_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    """int64 µs, int32 days, int32 months."""
    if not (pa.types.is_interval(arr.type) or pa.types.is_duration(arr.type)):
        raise unsupported_binary(arr, pgtype)
    valid = validity(arr)
    months, days, us = interval_fields(arr)
    rec = np.empty(
        len(arr), dtype=np.dtype([("us", ">i8"), ("days", ">i4"), ("months", ">i4")])
    )
    rec["us"], rec["days"], rec["months"] = us, days, months
    mat = rec.view(np.uint8).reshape(-1, 16)
    return Encoded([piece_for(mat, valid)], with_nulls(np.full(len(arr), 16), valid))


# --- binary input --------------------------------------------------------------------


def recv_interval(data: bytes) -> PgInterval:
    expect_size(data, 16)
    us, days, months = struct.unpack(">qii", data)
    return PgInterval(months, days, us)


def register(registry: Registry) -> None:
    registry.add_text_out((pa.month_day_nano_interval(), pa.duration("us")), interval_text)
    registry.add_binary_out((INTERVAL.oid,), interval_binary)
    registry.add_text_in((INTERVAL.oid,), parse_interval)
    registry.add_binary_in((INTERVAL.oid,), recv_interval)
