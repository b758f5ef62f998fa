"""Decode Bind parameters (PostgreSQL text or binary format) into values DuckDB binds.

Text input follows PostgreSQL's input functions (boolin, int4in, float8in, date_in, …) for
the syntax clients actually send; binary input follows the *recv functions byte for byte.
Values DuckDB's Python API binds natively come back as Python objects (int, float,
Decimal, str, bool, date, time, datetime, bytes, UUID, list). Values Python cannot hold
come back as `duckdb.Value`s that DuckDB binds with the right type: intervals as
`PgInterval` (months kept; bound as INTERVAL), and 'infinity', BC or five-digit years
and 24:00:00 as `DuckText` (text in DuckDB's syntax, bound as DATE/TIMESTAMP/TIME).

Dates, times and intervals are parsed in pgwire.types.datetime_in and the binary
format in pgwire.types.binary_in; this module dispatches and handles the rest.
"""

from __future__ import annotations

import decimal
import json
import math
import re
import struct
import uuid
from collections.abc import Callable

from pgwire.errors import (
    INVALID_BINARY_REPRESENTATION,
    INVALID_PARAMETER_VALUE,
    INVALID_TEXT_REPRESENTATION,
    NUMERIC_VALUE_OUT_OF_RANGE,
    PgError,
)
from pgwire.types.binary_in import STRING_OIDS, BadBinary, decode_binary
from pgwire.types.datetime_in import (
    DuckText,
    PgInterval,
    civil_from_days,
    days_from_civil,
    lookup_zone,
    parse_interval,
    parse_time,
    parse_timestamp,
)
from pgwire.types.table import (
    BOOL,
    BYTEA,
    DATE,
    ELEMENT_OF,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSON,
    JSONB,
    NUMERIC,
    OID,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    input_syntax_error,
    sql_name,
)

CHARACTER_NOT_IN_REPERTOIRE = "22021"  # not (yet) in pgwire.errors
INT32_MAX, INT32_MIN = 2**31 - 1, -(2**31)
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)

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
        return _decode_text(oid, _utf8(data), timezone)
    if fmt == 1:
        try:
            return decode_binary(oid, bytes(data))
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
    # NUL bytes are rejected too in PostgreSQL, but DuckDB copes, so they pass.
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = " ".join(f"0x{b:02x}" for b in data[exc.start : exc.start + 2])
        raise PgError(
            CHARACTER_NOT_IN_REPERTOIRE,
            f'invalid byte sequence for encoding "UTF8": {bad}',
        ) from None


_syntax = input_syntax_error


def _out_of_range(oid: int, text: str) -> PgError:
    name = sql_name(oid)
    return PgError(
        NUMERIC_VALUE_OUT_OF_RANGE, f'value "{text}" is out of range for type {name}'
    )


# ---------------------------------------------------------------------------------------
# Text format
# ---------------------------------------------------------------------------------------


def _decode_text(oid: int, text: str, timezone: str) -> object:
    if oid in STRING_OIDS:
        return text
    parse = _TEXT_PARSERS.get(oid)
    if parse is not None:
        return parse(oid, text, timezone)
    elem = ELEMENT_OF.get(oid)
    if elem is not None:
        return _parse_array(elem.oid, text, timezone)
    # A type the gateway has no parser for: DuckDB casts the text where the query says so.
    return text


_BOOL_WORDS: tuple[tuple[str, bool, int], ...] = (
    # (word, value, shortest accepted prefix) as in parse_bool_with_len.
    ("true", True, 1),
    ("false", False, 1),
    ("yes", True, 1),
    ("no", False, 1),
    ("on", True, 2),
    ("off", False, 2),
    ("1", True, 1),
    ("0", False, 1),
)


def _parse_bool(oid: int, text: str, _tz: str) -> bool:
    word = text.strip().lower()
    for full, value, shortest in _BOOL_WORDS:
        if len(word) >= shortest and full.startswith(word):
            return value
    raise _syntax(oid, text)


_INT_RE = re.compile(r"^\s*[+-]?\d+\s*$", re.ASCII)
_INT_RANGE: dict[int, tuple[int, int]] = {
    INT2.oid: (-(2**15), 2**15 - 1),
    INT4.oid: (INT32_MIN, INT32_MAX),
    INT8.oid: (INT64_MIN, INT64_MAX),
    OID.oid: (INT32_MIN, 2**32 - 1),
}


def _parse_int(oid: int, text: str, _tz: str) -> int:
    if not _INT_RE.match(text):
        raise _syntax(oid, text)
    value = int(text)
    lo, hi = _INT_RANGE[oid]
    if not lo <= value <= hi:
        raise _out_of_range(oid, text)
    if oid == OID.oid and value < 0:
        value += 2**32  # oidin accepts negative int4 input and wraps it
    return value


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
        raise _syntax(oid, text)
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


_NUMERIC_RE = _FLOAT_RE
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
        raise _syntax(oid, text)
    return decimal.Decimal(stripped)


def _parse_json(oid: int, text: str, _tz: str) -> str:
    def reject_constant(name: str) -> object:
        raise ValueError(name)

    try:
        json.loads(text, parse_constant=reject_constant)
    except ValueError:
        raise PgError(
            INVALID_TEXT_REPRESENTATION, "invalid input syntax for type json"
        ) from None
    return text


_UUID_RE = re.compile(r"^(\{)?[0-9a-fA-F]{4}(?:-?[0-9a-fA-F]{4}){7}(?(1)\})$", re.ASCII)


def _parse_uuid(oid: int, text: str, _tz: str) -> uuid.UUID:
    if not _UUID_RE.match(text):
        raise _syntax(oid, text)
    return uuid.UUID(text.strip("{}").replace("-", ""))


def _parse_bytea(oid: int, text: str, _tz: str) -> bytes:
    raw = text.encode("utf-8")
    if raw.startswith(b"\\x"):
        hexdigits = bytes(c for c in raw[2:] if c not in b" \t\n\r\f\v")
        try:
            return bytes.fromhex(hexdigits.decode("ascii"))
        except ValueError:
            raise PgError(
                INVALID_TEXT_REPRESENTATION, "invalid hexadecimal data"
            ) from None
    # Escape format: \\ is a backslash, \ooo an octal byte, anything else is literal.
    out = bytearray()
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != 0x5C:
            out.append(c)
            i += 1
        elif raw[i + 1 : i + 2] == b"\\":
            out.append(0x5C)
            i += 2
        elif re.fullmatch(rb"[0-3][0-7][0-7]", raw[i + 1 : i + 4]):
            out.append(int(raw[i + 1 : i + 4], 8))
            i += 4
        else:
            raise PgError(
                INVALID_TEXT_REPRESENTATION, "invalid input syntax for type bytea"
            )
    return bytes(out)


# --- arrays ------------------------------------------------------------------------------


def _parse_array(elem_oid: int, text: str, timezone: str) -> list[object]:
    """array_in for the common forms: '{1,2}', '{{1,2},{3,4}}', quoted items, NULL."""
    s = text.strip()
    if s.startswith("["):  # explicit bounds '[0:1]={...}': the bounds are dropped
        eq = s.find("=")
        if eq < 0:
            raise _array_syntax(text)
        s = s[eq + 1 :].strip()
    if not s.startswith("{"):
        raise _array_syntax(text)
    value, pos = _parse_array_level(elem_oid, s, 1, text, timezone)
    if s[pos:].strip():
        raise _array_syntax(text)
    return value


def _array_syntax(text: str) -> PgError:
    return PgError(INVALID_TEXT_REPRESENTATION, f'malformed array literal: "{text}"')


def _parse_array_level(
    elem_oid: int, s: str, pos: int, text: str, timezone: str
) -> tuple[list[object], int]:
    items: list[object] = []
    n = len(s)
    while True:
        while pos < n and s[pos].isspace():
            pos += 1
        if pos >= n:
            raise _array_syntax(text)
        if s[pos] == "}" and not items:
            return items, pos + 1
        if s[pos] == "{":
            sub, pos = _parse_array_level(elem_oid, s, pos + 1, text, timezone)
            items.append(sub)
        else:
            raw, quoted, pos = _array_item(s, pos, text)
            if not quoted and raw.upper() == "NULL":
                items.append(None)
            else:
                items.append(_decode_text(elem_oid, raw, timezone))
        while pos < n and s[pos].isspace():
            pos += 1
        if pos < n and s[pos] == ",":
            pos += 1
        elif pos < n and s[pos] == "}":
            return items, pos + 1
        else:
            raise _array_syntax(text)


def _array_item(s: str, pos: int, text: str) -> tuple[str, bool, int]:
    out: list[str] = []
    n = len(s)
    if s[pos] == '"':
        pos += 1
        while pos < n and s[pos] != '"':
            if s[pos] == "\\":
                pos += 1
            if pos >= n:
                raise _array_syntax(text)
            out.append(s[pos])
            pos += 1
        if pos >= n:
            raise _array_syntax(text)
        return "".join(out), True, pos + 1
    while pos < n and s[pos] not in ",}{":
        if s[pos] == "\\":
            pos += 1
            if pos >= n:
                raise _array_syntax(text)
        out.append(s[pos])
        pos += 1
    item = "".join(out).strip()
    if not item:
        raise _array_syntax(text)
    return item, False, pos


_TEXT_PARSERS: dict[int, Callable[[int, str, str], object]] = {
    BOOL.oid: _parse_bool,
    INT2.oid: _parse_int,
    INT4.oid: _parse_int,
    INT8.oid: _parse_int,
    OID.oid: _parse_int,
    FLOAT4.oid: _parse_float,
    FLOAT8.oid: _parse_float,
    NUMERIC.oid: _parse_numeric,
    JSON.oid: _parse_json,
    JSONB.oid: _parse_json,
    UUID.oid: _parse_uuid,
    BYTEA.oid: _parse_bytea,
    DATE.oid: parse_timestamp,  # date_in accepts a timestamp and keeps its date
    TIME.oid: parse_time,
    TIMESTAMP.oid: parse_timestamp,
    TIMESTAMPTZ.oid: parse_timestamp,
    INTERVAL.oid: parse_interval,
}
