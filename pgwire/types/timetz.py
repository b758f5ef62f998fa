"""time with time zone: PostgreSQL's text ('12:00:00.5+02', '08:00:00-05:30') as the
source printed it (DateStyle ISO); in binary (timetz_send) the int8 microseconds of the
time of day, then the int4 zone offset in seconds *west* of UTC (+02 is -7200)."""

from __future__ import annotations

import re
import struct

import pyarrow as pa

from pgwire.errors import INVALID_DATETIME_FORMAT, PgError
from pgwire.types.columns import Encoded
from pgwire.types.pg_type import TIMETZ, PgType
from pgwire.types.registry import Registry
from pgwire.types.text_backed import binary_from_text

_TIMETZ = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?([+-])(\d{2})(?::(\d{2}))?(?::(\d{2}))?$")


def timetz_send(text: str) -> bytes:
    found = _TIMETZ.match(text)
    if found is None:
        raise PgError(INVALID_DATETIME_FORMAT, f'invalid input syntax for type time with time zone: "{text}"')
    hours, minutes, seconds, fraction, sign, zh, zm, zs = found.groups()
    micros = ((int(hours) * 60 + int(minutes)) * 60 + int(seconds)) * 1_000_000 \
        + int((fraction or "").ljust(6, "0"))
    east = int(zh) * 3600 + int(zm or 0) * 60 + int(zs or 0)
    return struct.pack("!qi", micros, east if sign == "-" else -east)


def _timetz_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    return binary_from_text(arr, pgtype, timetz_send)


def register(registry: Registry) -> None:
    registry.add_binary_out((TIMETZ.oid,), _timetz_binary)
