"""Text input of dates, times, timestamps and intervals, as PostgreSQL parses them.

Covers the ISO forms clients send (DateStyle ISO), the special words ('infinity',
'epoch', 'now', …), BC years, fractional seconds rounded half to even, zones given as
offsets or IANA names, and PostgreSQL's interval syntax (postgres style, SQL standard
'Y-M D H:M:S', ISO 8601 'P…').

Values Python cannot hold travel as `duckdb.Value` objects — text plus the DuckDB type
it is cast to on binding — so they still bind with the right type: a `PgInterval`
(months survive, which timedelta would lose) and `DuckText` for 'infinity', BC and
five-digit years, and 24:00:00.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import zoneinfo
from functools import lru_cache

import duckdb
from duckdb import sqltypes

from pgwire.errors import INVALID_PARAMETER_VALUE, PgError
from pgwire.types.table import DATE, TIMESTAMP, TIMESTAMPTZ
from pgwire.types.table import input_syntax_error as _syntax

DATETIME_FIELD_OVERFLOW = "22008"  # not (yet) in pgwire.errors
INVALID_TIME_ZONE = INVALID_PARAMETER_VALUE
USECS_PER_DAY = 86_400_000_000


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


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (any year, year 0 = 1 BC)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    """Inverse of days_from_civil."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (m <= 2), m, d


def _fraction_us(frac: str | None) -> int:
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


@lru_cache(maxsize=256)
def lookup_zone(name: str) -> dt.tzinfo | None:
    """An IANA zone by case-insensitive name (PostgreSQL ignores case), or UTC aliases."""
    lowered = name.lower()
    if lowered in ("utc", "gmt", "z", "zulu", "etc/utc", "etc/gmt", "universal"):
        return dt.UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        pass
    for candidate in zoneinfo.available_timezones():
        if candidate.lower() == lowered:
            return zoneinfo.ZoneInfo(candidate)
    return None


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


def local_offset(tz: dt.tzinfo, local: dt.datetime) -> dt.timedelta:
    """The UTC offset PostgreSQL gives a wall-clock time in `tz`.

    An ambiguous time (DST ends) is read as the later instant and a skipped one (DST
    starts) with the offset from before the jump; both are the smaller of the two offsets.
    """
    first = tz.utcoffset(local.replace(fold=0)) or dt.timedelta(0)
    second = tz.utcoffset(local.replace(fold=1)) or dt.timedelta(0)
    return min(first, second)


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
        raise _syntax(oid, text)
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
    us += _fraction_us(m["f"])
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
        raise _syntax(oid, text)
    hour, minute, second = int(m["h"]), int(m["mi"]), int(m["s"] or 0)
    us = ((hour * 60 + minute) * 60 + second) * 1_000_000 + _fraction_us(m["f"])
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


# --- intervals ---------------------------------------------------------------------------

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
            raise _syntax(oid, text) from None
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
            raise _syntax(oid, text)
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
            raise _syntax(oid, text)
        i += 1
    if not seen_any:
        raise _syntax(oid, text)
    sign = -1 if ago else 1
    return PgInterval(sign * acc.months, sign * acc.days, sign * acc.us)


def _tokenize_interval(word: str, oid: int, text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    word = word.rstrip()
    while pos < len(word):
        m = _INTERVAL_TOKEN.match(word, pos)
        if m is None or m.end() == pos:
            raise _syntax(oid, text)
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
    us = ((hours * 60 + minutes) * 60 + int(seconds)) * 1_000_000 + _fraction_us(frac)
    return sign * us
