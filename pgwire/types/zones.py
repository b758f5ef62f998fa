"""UTC offsets of a time zone for many instants at once, the way PostgreSQL computes them.

PostgreSQL reads the same tz database files as Python's zoneinfo, including the POSIX
rule at their end that supplies DST for years after the last listed transition (2037 in
most files). Arrow's zone support stops at that last transition — an instant in 2065 in
America/New_York would get EST all summer — so offsets come from zoneinfo instead:
for each calendar year present in the data the offset changes are found once (a probe
per day, then bisection to the second), cached, and every row is resolved with one
vectorized binary search.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from functools import lru_cache

import numpy as np

from pgwire.errors import INVALID_PARAMETER_VALUE, PgError
from pgwire.types.civil import days_from_civil
from pgwire.types.columns import civil_from_days

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_SECS_PER_DAY = 86_400
_SECS_PER_400Y = (
    146_097 * _SECS_PER_DAY
)  # the Gregorian calendar repeats every 400 years
_FIRST_SAFE = (days_from_civil(1, 1, 1) + 1) * _SECS_PER_DAY
_LAST_SAFE = (days_from_civil(9999, 12, 31) - 1) * _SECS_PER_DAY


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


def local_offset(tz: dt.tzinfo, local: dt.datetime) -> dt.timedelta:
    """The UTC offset PostgreSQL gives a wall-clock time in `tz`.

    An ambiguous time (DST ends) is read as the later instant and a skipped one (DST
    starts) with the offset from before the jump; both are the smaller of the two offsets.
    """
    first = tz.utcoffset(local.replace(fold=0)) or dt.timedelta(0)
    second = tz.utcoffset(local.replace(fold=1)) or dt.timedelta(0)
    return min(first, second)


def canonical_zone(timezone: str) -> str:
    """The IANA key for a PostgreSQL TimeZone value (case-insensitive), 'UTC' for UTC."""
    tz = lookup_zone(timezone)
    if tz is None:
        raise PgError(
            INVALID_PARAMETER_VALUE,
            f'invalid value for parameter "TimeZone": "{timezone}"',
        )
    key = getattr(tz, "key", None)
    return key if key else "UTC"


def zone_offsets(us: np.ndarray, skip: np.ndarray, timezone: str) -> np.ndarray:
    """UTC offset in seconds of `timezone` at each instant (µs since 1970, UTC).

    Rows under `skip` (±infinity, NULL garbage) get offset 0.
    """
    name = canonical_zone(timezone)
    n = len(us)
    if name == "UTC" or n == 0:
        return np.zeros(n, dtype=np.int64)
    secs = np.floor_divide(np.where(skip, 0, us), 1_000_000)
    # zoneinfo covers years 1..9999; later instants borrow the year 400k years earlier
    # (same calendar, same rules), earlier ones keep the zone's first (LMT) offset.
    first_secs = days_from_civil(1, 1, 1) * _SECS_PER_DAY
    last_secs = days_from_civil(10000, 1, 1) * _SECS_PER_DAY
    late = secs >= last_secs
    if late.any():
        periods = (secs[late] - last_secs) // _SECS_PER_400Y + 1
        secs = secs.copy()
        secs[late] -= periods * _SECS_PER_400Y
    secs = np.maximum(secs, first_secs)
    years, _, _ = civil_from_days(np.floor_divide(secs, _SECS_PER_DAY))
    lo = int(years.min())
    present = np.flatnonzero(np.bincount(years - lo)) + lo
    starts: list[np.ndarray] = []
    offsets: list[np.ndarray] = []
    for year in present.tolist():
        s, o = _year_table(name, year)
        starts.append(s)
        offsets.append(o)
    all_starts = np.concatenate(starts)
    all_offsets = np.concatenate(offsets)
    idx = np.searchsorted(all_starts, secs, side="right") - 1
    return all_offsets[idx]


@lru_cache(maxsize=8192)
def _year_table(zone: str, year: int) -> tuple[np.ndarray, np.ndarray]:
    """Offset changes during one UTC calendar year: (start second, offset from then on).

    The first entry starts at January 1st 00:00 UTC.
    """
    tz = lookup_zone(zone)
    assert tz is not None

    def offset_at(sec: int) -> int:
        # Keep a day away from datetime's limits: local time may fall outside them.
        sec = min(max(sec, _FIRST_SAFE), _LAST_SAFE)
        local = (_EPOCH + dt.timedelta(seconds=sec)).astimezone(tz)
        delta = local.utcoffset()
        return int(delta.total_seconds()) if delta is not None else 0

    start = days_from_civil(year, 1, 1) * _SECS_PER_DAY
    end = days_from_civil(year + 1, 1, 1) * _SECS_PER_DAY
    changes = [start]
    values = [offset_at(start)]
    prev_sec, prev_off = start, values[0]
    for sec in range(start + _SECS_PER_DAY, end + 1, _SECS_PER_DAY):
        off = offset_at(min(sec, end))
        if off != prev_off:
            lo, hi = (
                prev_sec,
                min(sec, end),
            )  # offset_at(lo) == prev_off != offset_at(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if offset_at(mid) == prev_off:
                    lo = mid
                else:
                    hi = mid
            changes.append(hi)
            values.append(off)
            prev_off = off
        prev_sec = sec
    return np.array(changes, dtype=np.int64), np.array(values, dtype=np.int64)
