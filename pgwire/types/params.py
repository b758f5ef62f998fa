"""Decode Bind parameters (PostgreSQL text or binary format) into values DuckDB binds.

Text input follows PostgreSQL's input functions (boolin, int4in, float8in, date_in, …) for
the syntax clients actually send; binary input follows the *recv functions byte for byte.
Values DuckDB's Python API binds natively come back as Python objects (int, float,
Decimal, str, bool, date, time, datetime, bytes, UUID, list). Values Python cannot hold
come back as `duckdb.Value`s that DuckDB binds with the right type: intervals as
`PgInterval` (months kept; bound as INTERVAL), and 'infinity', BC or five-digit years
and 24:00:00 as `DuckText` (text in DuckDB's syntax, bound as DATE/TIMESTAMP/TIME).

The readers live with their type family (`pgwire.types.integers`, `.datetime`…) and are
found by OID through `pgwire.types.adapters.REGISTRY`; this module checks the encoding
and the format code and words the errors.
"""

from __future__ import annotations

from pgwire.errors import (
    INVALID_BINARY_REPRESENTATION,
    INVALID_PARAMETER_VALUE,
    PgError,
)
from pgwire.types.adapters import REGISTRY
from pgwire.types.civil import civil_from_days, days_from_civil
from pgwire.types.datetime_text import DuckText
from pgwire.types.interval import PgInterval
from pgwire.types.registry import BadBinary
from pgwire.types.zones import lookup_zone

CHARACTER_NOT_IN_REPERTOIRE = "22021"  # not (yet) in pgwire.errors

__all__ = [
    "DuckText",
    "PgInterval",
    "civil_from_days",
    "days_from_civil",
    "decode_param",
    "lookup_zone",
]


def decode_param(
    oid: int,
    fmt: int,
    data: bytes | None,
    *,
    index: int | None = None,
    timezone: str = "UTC",
) -> object:
    """Decode one Bind parameter of type `oid` sent in format `fmt` (0 text, 1 binary).

    `index` is the parameter's 1-based position, used in error messages the way
    PostgreSQL words them; `timezone` is the session TimeZone, which gives a
    timestamptz written without an offset its zone.
    """
    if data is None:
        return None
    if fmt == 0:
        return REGISTRY.decode_text(oid, _utf8(data), timezone)
    if fmt == 1:
        try:
            return REGISTRY.decode_binary(oid, bytes(data))
        except BadBinary as exc:
            where = (
                f"in bind parameter {index}"
                if index is not None
                else "in bind parameter"
            )
            raise PgError(
                INVALID_BINARY_REPRESENTATION,
                f"incorrect binary data format {where}",
                detail=str(exc) or None,
            ) from None
    raise PgError(INVALID_PARAMETER_VALUE, f"unsupported format code: {fmt}")


def _utf8(data: bytes) -> str:
    # PostgreSQL refuses a NUL as it refuses broken UTF-8 (its text cannot hold one); so
    # does the gateway, before any source: MySQL and SQLite would take and compare it.
    if b"\x00" in data:
        raise PgError(CHARACTER_NOT_IN_REPERTOIRE, 'invalid byte sequence for encoding "UTF8": 0x00')
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = " ".join(f"0x{b:02x}" for b in data[exc.start : exc.start + 2])
        raise PgError(
            CHARACTER_NOT_IN_REPERTOIRE,
            f'invalid byte sequence for encoding "UTF8": {bad}',
        ) from None
