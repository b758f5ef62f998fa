"""Text input of dates, times and timestamps, as PostgreSQL's date_in/time_in/timestamp_in.

Covers the ISO forms clients send (DateStyle ISO), the special words ('infinity',
'epoch', 'now', …), BC years, fractional seconds rounded half to even, and zones given
as offsets or IANA names.

Values Python cannot hold travel as `DuckText`, a `duckdb.Value` holding text in DuckDB's
syntax plus the DuckDB type it is cast to on binding, so 'infinity', BC and five-digit
years, and 24:00:00 still bind with the right type. The binary readers in
`pgwire.types.datetime` build their values with the same functions.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re

import duckdb
from duckdb import sqltypes

from pgwire.errors import INVALID_PARAMETER_VALUE, PgError
from pgwire.types.civil import USECS_PER_DAY, civil_from_days, days_from_civil
from pgwire.types.pg_type import DATE, TIMESTAMP, TIMESTAMPTZ
from pgwire.types.pg_type import input_syntax_error as syntax_error
from pgwire.types.zones import local_offset, lookup_zone

DATETIME_FIELD_OVERFLOW = "22008"  # not (yet) in pgwire.errors
INVALID_TIME_ZONE = INVALID_PARAMETER_VALUE


class DuckText(duckdb.Value):
    """A date/time parameter outside Python's range, as text in DuckDB's syntax that
    DuckDB casts to `sqltype` when binding: DuckText('0044-03-15 (BC)', DATE)."""

    def __init__(self, text: str, sqltype: duckdb.sqltypes.DuckDBPyType) -> None:
        super().__init__(text, sqltype)
        self.text = text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DuckText):
            return NotImplemented
        return (self.text, str(self.type)) == (other.text, str(other.type))

    def __hash__(self) -> int:
        return hash((self.text, str(self.type)))

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"DuckText({self.text!r}, {self.type})"


_SQLTYPE_OF = {
    DATE.oid: sqltypes.DATE,
    TIMESTAMP.oid: sqltypes.TIMESTAMP,
    TIMESTAMPTZ.oid: sqltypes.TIMESTAMP_TZ,
}


def infinity(oid: int, negative: bool) -> DuckText:
    """±infinity of a date or timestamp type."""
    return DuckText("-infinity" if negative else "infinity", _SQLTYPE_OF[oid])


_DATE_PART = r"(?P<y>\d{4,})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})"
_TIME_PART = r"(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d*))?)?"
_ZONE_PART = (
    r"(?P<z>z|[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?|(?!(?:bc|ad)$)[a-z][a-z0-9_/+-]*)"
)
_TIMESTAMP_RE = re.compile(
    rf"^{_DATE_PART}(?:(?:t|\s+){_TIME_PART})?\s*{_ZONE_PART}?\s*(?P<bc>bc|ad)?$",
    re.ASCII,
)
_TIME_RE = re.compile(rf"^{_TIME_PART}\s*{_ZONE_PART}?$", re.ASCII)
_SPECIAL_TIMESTAMPS = ("infinity", "+infinity", "-infinity", "epoch", "now", "today", "tomorrow", "yesterday")  # fmt: skip


def fraction_us(frac: str | None) -> int:
    """'.5' → 500000 µs; more than 6 digits round half to even, as rint() does."""
    if not frac:
        return 0
    if len(frac) <= 6:
        return int(frac.ljust(6, "0"))
    return int(
        decimal.Decimal("0." + frac)
        .scaleb(6)
        .to_integral_value(decimal.ROUND_HALF_EVEN)
    )


def _zone_offset(zone: str, local: dt.datetime, oid: int, text: str) -> dt.timedelta:
    """UTC offset of a zone written in a timestamp literal, at local time `local`."""
    if zone == "z":
        return dt.timedelta(0)
    if zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        if len(digits) <= 2:
            h, m, s = int(digits), 0, 0
        elif len(digits) in (3, 4):
            h, m, s = int(digits[:-2]), int(digits[-2:]), 0
        else:
            h, m, s = int(digits[:-4]), int(digits[-4:-2]), int(digits[-2:])
        if h > 15 or m > 59 or s > 59:
            raise PgError(
                DATETIME_FIELD_OVERFLOW,
                f'time zone displacement out of range: "{text}"',
            )
        off = dt.timedelta(hours=h, minutes=m, seconds=s)
        return -off if zone[0] == "-" else off
    tz = lookup_zone(zone)
    if tz is None:
        raise PgError(INVALID_PARAMETER_VALUE, f'time zone "{zone}" not recognized')
    return local_offset(tz, local)


def _session_offset(timezone: str, local: dt.datetime) -> dt.timedelta:
    tz = lookup_zone(timezone)
    if tz is None:
        raise PgError(
            INVALID_TIME_ZONE, f'invalid value for parameter "TimeZone": "{timezone}"'
        )
    return local_offset(tz, local)


def _special_timestamp(word: str, oid: int) -> object:
    if word in ("infinity", "+infinity", "-infinity"):
        return infinity(oid, word.startswith("-"))
    aware = oid == TIMESTAMPTZ.oid
    now = dt.datetime.now(dt.UTC) if aware else dt.datetime.now()
    if word == "epoch":
        epoch = dt.datetime(1970, 1, 1)
        return epoch.replace(tzinfo=dt.UTC) if aware else epoch
    if word == "now":
        return now
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    shift = {"today": 0, "tomorrow": 1, "yesterday": -1}[word]
    return midnight + dt.timedelta(days=shift)


def parse_timestamp(oid: int, text: str, timezone: str) -> object:
    """timestamp / timestamptz / date input in ISO form (the form clients send)."""
    word = " ".join(text.strip().lower().split())
    if word in _SPECIAL_TIMESTAMPS:
        value = _special_timestamp(word, oid)
        if oid == DATE.oid and isinstance(value, dt.datetime):
            return value.date()
        return value
    m = _TIMESTAMP_RE.match(word)
    if m is None:
        raise syntax_error(oid, text)
    year, month, day = int(m["y"]), int(m["mo"]), int(m["d"])
    if m["bc"] == "bc":
        year = 1 - year  # astronomical numbering: 1 BC is year 0
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)):
        raise PgError(
            DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{text}"'
        )
    days = days_from_civil(year, month, day)
    if oid == DATE.oid:
        return date_value(days)
    hour, minute, second = int(m["h"] or 0), int(m["mi"] or 0), int(m["s"] or 0)
    if (
        hour > 24
        or minute > 59
        or second > 60
        or (hour == 24 and (minute or second or m["f"]))
    ):
        raise PgError(
            DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{text}"'
        )
    us = days * USECS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1_000_000
    us += fraction_us(m["f"])
    if oid == TIMESTAMP.oid:
        return timestamp_value(us, aware=False)  # PostgreSQL ignores a zone here
    local = _naive_or_none(us) or dt.datetime(1, 1, 1)
    if m["z"] is not None:
        offset = _zone_offset(m["z"], local, oid, text)
    else:
        offset = _session_offset(timezone, local)
    return timestamp_value(us - offset // dt.timedelta(microseconds=1), aware=True)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _duckdb_date_text(days: int) -> str:
    y, mo, d = civil_from_days(days)
    if y <= 0:
        return f"{1 - y:04d}-{mo:02d}-{d:02d} (BC)"
    return f"{y:04d}-{mo:02d}-{d:02d}"


def date_value(days: int) -> object:
    """Days since 1970 → date, or DuckDB date text where Python's date cannot go."""
    y, _, _ = civil_from_days(days)
    if 1 <= y <= 9999:
        return dt.date(1970, 1, 1) + dt.timedelta(days=days)
    return DuckText(_duckdb_date_text(days), sqltypes.DATE)


def _naive_or_none(us: int) -> dt.datetime | None:
    days, rem = divmod(us, USECS_PER_DAY)
    y, _, _ = civil_from_days(days)
    if 1 <= y <= 9999:
        return dt.datetime(1970, 1, 1) + dt.timedelta(days=days, microseconds=rem)
    return None


def timestamp_value(us: int, *, aware: bool) -> object:
    """µs since 1970 → datetime (UTC-aware for timestamptz), or DuckDB text."""
    naive = _naive_or_none(us)
    if naive is not None:
        return naive.replace(tzinfo=dt.UTC) if aware else naive
    days, rem = divmod(us, USECS_PER_DAY)
    secs, frac = divmod(rem, 1_000_000)
    clock = f"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    if frac:
        clock += f".{frac:06d}"
    if aware:
        return DuckText(f"{_duckdb_date_text(days)} {clock}+00", sqltypes.TIMESTAMP_TZ)
    return DuckText(f"{_duckdb_date_text(days)} {clock}", sqltypes.TIMESTAMP)


def parse_time(oid: int, text: str, _tz: str) -> object:
    word = text.strip().lower()
    if word == "allballs":
        return dt.time(0)
    if word == "now":
        return dt.datetime.now().time()
    m = _TIME_RE.match(word)
    if m is None:
        raise syntax_error(oid, text)
    hour, minute, second = int(m["h"]), int(m["mi"]), int(m["s"] or 0)
    us = ((hour * 60 + minute) * 60 + second) * 1_000_000 + fraction_us(m["f"])
    if minute > 59 or second > 60 or us > USECS_PER_DAY:
        raise PgError(
            DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{text}"'
        )
    return time_value(us)


def time_value(us: int) -> object:
    if us == USECS_PER_DAY:
        # Valid in PostgreSQL and DuckDB, not in datetime.time.
        return DuckText("24:00:00", sqltypes.TIME)
    secs, frac = divmod(us, 1_000_000)
    return dt.time(secs // 3600, secs // 60 % 60, secs % 60, frac)
