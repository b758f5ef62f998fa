"""Binary Bind parameters, decoded the way PostgreSQL's *recv functions read them.

Layouts: big-endian integers and IEEE floats, date = int32 days since 2000-01-01,
time = int64 µs, timestamp(tz) = int64 µs since 2000-01-01, interval = int64 µs +
int32 days + int32 months, numeric = ndigits/weight/sign/dscale + base-10000 digits,
jsonb = version byte 1 + text, arrays = array_send's header + (length, bytes) items.
"""

from __future__ import annotations

import decimal
import struct
import uuid
from collections.abc import Callable

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.datetime_in import (
    USECS_PER_DAY,
    PgInterval,
    date_value,
    infinity,
    time_value,
    timestamp_value,
)
from pgwire.types.table import (
    BOOL,
    BPCHAR,
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
    NAME,
    NUMERIC,
    OID,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UNKNOWN,
    UUID,
    VARCHAR,
)

INT32_MAX, INT32_MIN = 2**31 - 1, -(2**31)
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
STRING_OIDS = frozenset({0, TEXT.oid, VARCHAR.oid, BPCHAR.oid, NAME.oid, UNKNOWN.oid})


class BadBinary(Exception):
    """Binary data that does not match the type's *recv layout (reported as 22P03)."""


def _need(data: bytes, size: int) -> None:
    if len(data) != size:
        raise BadBinary(f"expected {size} bytes, got {len(data)}")


def decode_binary(oid: int, data: bytes) -> object:
    if oid in STRING_OIDS and oid != 0:
        return _binary_text(data)
    decoder = _BINARY_DECODERS.get(oid)
    if decoder is not None:
        return decoder(data)
    elem = ELEMENT_OF.get(oid)
    if elem is not None:
        return _recv_array(elem.oid, data)
    if oid == 0:
        return data  # no type to interpret it by; the statement's cast decides
    raise PgError(
        FEATURE_NOT_SUPPORTED,
        f"binary format for parameters of type {oid} is not supported",
    )


def _binary_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBinary("invalid UTF-8") from exc


def _recv_int(fmt: str, size: int) -> Callable[[bytes], int]:
    def recv(data: bytes) -> int:
        _need(data, size)
        return struct.unpack(fmt, data)[0]

    return recv


def _recv_float4(data: bytes) -> float:
    _need(data, 4)
    return struct.unpack(">f", data)[0]


def _recv_float8(data: bytes) -> float:
    _need(data, 8)
    return struct.unpack(">d", data)[0]


def _recv_bool(data: bytes) -> bool:
    _need(data, 1)
    return data[0] != 0


def _recv_jsonb(data: bytes) -> str:
    if not data or data[0] != 1:
        raise BadBinary("unsupported jsonb version number")
    return _binary_text(data[1:])


def _recv_json(data: bytes) -> str:
    return _binary_text(data)


def _recv_uuid(data: bytes) -> uuid.UUID:
    _need(data, 16)
    return uuid.UUID(bytes=data)


def _recv_date(data: bytes) -> object:
    _need(data, 4)
    days = struct.unpack(">i", data)[0]
    if days in (INT32_MAX, INT32_MIN):
        return infinity(DATE.oid, days == INT32_MIN)
    return date_value(days + 10957)  # 10957 days from 1970-01-01 to 2000-01-01


def _recv_time(data: bytes) -> object:
    _need(data, 8)
    us = struct.unpack(">q", data)[0]
    if not 0 <= us <= USECS_PER_DAY:
        raise BadBinary("time out of range")
    return time_value(us)


_PG_EPOCH_US = 946_684_800_000_000  # 2000-01-01 in µs since 1970-01-01


def _recv_timestamp(aware: bool) -> Callable[[bytes], object]:
    oid = TIMESTAMPTZ.oid if aware else TIMESTAMP.oid

    def recv(data: bytes) -> object:
        _need(data, 8)
        us = struct.unpack(">q", data)[0]
        if us in (INT64_MAX, INT64_MIN):
            return infinity(oid, us == INT64_MIN)
        return timestamp_value(us + _PG_EPOCH_US, aware=aware)

    return recv


def _recv_interval(data: bytes) -> PgInterval:
    _need(data, 16)
    us, days, months = struct.unpack(">qii", data)
    return PgInterval(months, days, us)


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


def _recv_array(elem_oid: int, data: bytes) -> list[object]:
    if len(data) < 12:
        raise BadBinary("array header too short")
    ndim, flags, elem_type = struct.unpack(">iii", data[:12])
    if ndim < 0 or ndim > 6 or flags not in (0, 1):
        raise BadBinary("invalid array header")
    if elem_type != elem_oid:
        raise BadBinary(f"wrong element type {elem_type} (expected {elem_oid})")
    pos = 12
    dims: list[int] = []
    for _ in range(ndim):
        if len(data) < pos + 8:
            raise BadBinary("array header too short")
        size, _lbound = struct.unpack(">ii", data[pos : pos + 8])
        if size < 0:
            raise BadBinary("negative array dimension")
        dims.append(size)
        pos += 8
    total = 1
    for size in dims:
        total *= size
    if ndim == 0:
        total = 0
    flat: list[object] = []
    for _ in range(total):
        if len(data) < pos + 4:
            raise BadBinary("array data too short")
        (length,) = struct.unpack(">i", data[pos : pos + 4])
        pos += 4
        if length == -1:
            flat.append(None)
            continue
        if length < 0 or len(data) < pos + length:
            raise BadBinary("array element length out of range")
        flat.append(decode_binary(elem_oid, data[pos : pos + length]))
        pos += length
    if pos != len(data):
        raise BadBinary("trailing bytes after array data")
    for size in reversed(dims[1:]):
        flat = [flat[i : i + size] for i in range(0, len(flat), size)]
    return flat


_BINARY_DECODERS: dict[int, Callable[[bytes], object]] = {
    BOOL.oid: _recv_bool,
    BYTEA.oid: bytes,
    INT2.oid: _recv_int(">h", 2),
    INT4.oid: _recv_int(">i", 4),
    INT8.oid: _recv_int(">q", 8),
    OID.oid: _recv_int(">I", 4),
    FLOAT4.oid: _recv_float4,
    FLOAT8.oid: _recv_float8,
    NUMERIC.oid: _recv_numeric,
    JSON.oid: _recv_json,
    JSONB.oid: _recv_jsonb,
    UUID.oid: _recv_uuid,
    DATE.oid: _recv_date,
    TIME.oid: _recv_time,
    TIMESTAMP.oid: _recv_timestamp(aware=False),
    TIMESTAMPTZ.oid: _recv_timestamp(aware=True),
    INTERVAL.oid: _recv_interval,
}
