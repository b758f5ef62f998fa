"""Encoding half of the PostgreSQL v3 wire codec, with no I/O: values in, bytes out.

Every backend message is a type byte, an int32 length (counting itself) and a body. The
session writes what these functions return; constant messages are prebuilt once.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import lru_cache

from pgwire.errors import PgError
from pgwire.protocol.messages import FIELD_DESCRIPTION_LAYOUT, FieldDescription

_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")

@lru_cache(maxsize=64)
def _array(code: str, n: int) -> struct.Struct:
    """A struct for n big-endian values of one kind; counts repeat, so cache them."""
    return struct.Struct(f"!{n}{code}")


_HEAD = struct.Struct("!ci")
_AUTH = struct.Struct("!cii")  # 'R', length, auth request code
_RFD_FIELD = struct.Struct(FIELD_DESCRIPTION_LAYOUT)
_KEY_DATA = struct.Struct("!ciiI")


def _message(kind: bytes, body: bytes) -> bytes:
    return _HEAD.pack(kind, len(body) + 4) + body


def _cstr(value: str) -> bytes:
    """A NUL-terminated UTF-8 string; an embedded NUL would corrupt framing, so refuse it."""
    raw = value.encode("utf-8")
    if b"\x00" in raw:
        raise PgError("22021", 'invalid byte sequence for encoding "UTF8": 0x00')
    return raw + b"\x00"


AUTHENTICATION_OK = _AUTH.pack(b"R", 8, 0)
AUTHENTICATION_CLEARTEXT = _AUTH.pack(b"R", 8, 3)
EMPTY_QUERY_RESPONSE = _HEAD.pack(b"I", 4)
PARSE_COMPLETE = _HEAD.pack(b"1", 4)
BIND_COMPLETE = _HEAD.pack(b"2", 4)
CLOSE_COMPLETE = _HEAD.pack(b"3", 4)
NO_DATA = _HEAD.pack(b"n", 4)
PORTAL_SUSPENDED = _HEAD.pack(b"s", 4)
COPY_DONE = _HEAD.pack(b"c", 4)
SSL_REFUSED = b"N"  # also the answer that refuses a GSSENCRequest
_READY: dict[bytes, bytes] = {s: _HEAD.pack(b"Z", 5) + s for s in (b"I", b"T", b"E")}
READY_IDLE = _READY[b"I"]
READY_IN_TRANSACTION = _READY[b"T"]
READY_FAILED_TRANSACTION = _READY[b"E"]


def authentication_ok() -> bytes:
    return AUTHENTICATION_OK


def authentication_cleartext() -> bytes:
    return AUTHENTICATION_CLEARTEXT


def authentication_md5(salt: bytes) -> bytes:
    if len(salt) != 4:
        raise ValueError("MD5 salt must be 4 bytes")
    return _AUTH.pack(b"R", 12, 5) + salt


def authentication_sasl(mechanisms: Sequence[str]) -> bytes:
    body = b"".join(_cstr(m) for m in mechanisms) + b"\x00"
    return _AUTH.pack(b"R", 8 + len(body), 10) + body


def authentication_sasl_continue(data: bytes) -> bytes:
    return _AUTH.pack(b"R", 8 + len(data), 11) + data


def authentication_sasl_final(data: bytes) -> bytes:
    return _AUTH.pack(b"R", 8 + len(data), 12) + data


def parameter_status(name: str, value: str) -> bytes:
    return _message(b"S", _cstr(name) + _cstr(value))


def backend_key_data(pid: int, key: int) -> bytes:
    """pid as int32, key as uint32 (the same way the decoder reads CancelRequest)."""
    return _KEY_DATA.pack(b"K", 12, pid, key)


def ready_for_query(status: bytes) -> bytes:
    try:
        return _READY[status]
    except KeyError:
        raise ValueError(f"invalid transaction status {status!r}") from None


def row_description(fields: Sequence[FieldDescription]) -> bytes:
    parts = [_I16.pack(len(fields))]
    for f in fields:
        parts.append(_cstr(f.name))
        parts.append(
            _RFD_FIELD.pack(
                f.table_oid, f.column, f.type_oid, f.type_size, f.type_modifier, f.format
            )
        )
    return _message(b"T", b"".join(parts))


_NULL = _I32.pack(-1)


def data_row(values: Sequence[bytes | None]) -> bytes:
    """One DataRow; fine for a handful of rows, bulk results deserve a dedicated encoder."""
    parts = [_I16.pack(len(values))]
    pack = _I32.pack
    for value in values:
        if value is None:
            parts.append(_NULL)
        else:
            parts.append(pack(len(value)))
            parts.append(value)
    return _message(b"D", b"".join(parts))


def command_complete(tag: str) -> bytes:
    return _message(b"C", _cstr(tag))


def empty_query_response() -> bytes:
    return EMPTY_QUERY_RESPONSE


def _fields(
    severity: str,
    sqlstate: str,
    message: str,
    detail: str | None,
    hint: str | None,
    position: int | None,
    routine: str | None = None,
) -> bytes:
    # Reporting an error must not fail: drop NULs and unencodable characters.
    items = [(b"S", severity), (b"V", severity), (b"C", sqlstate), (b"M", message)]
    if detail is not None:
        items.append((b"D", detail))
    if hint is not None:
        items.append((b"H", hint))
    if position is not None:
        items.append((b"P", str(position)))
    if routine is not None:
        items.append((b"R", routine))
    body = b"".join(
        code + text.replace("\x00", "").encode("utf-8", "replace") + b"\x00" for code, text in items
    )
    return body + b"\x00"


def error_response(
    severity: str,
    sqlstate: str,
    message: str,
    detail: str | None = None,
    hint: str | None = None,
    position: int | None = None,
    routine: str | None = None,
) -> bytes:
    return _message(b"E", _fields(severity, sqlstate, message, detail, hint, position, routine))


def error_from(exc: PgError) -> bytes:
    return error_response(
        exc.severity, exc.sqlstate, exc.message, exc.detail, exc.hint, exc.position,
        exc.routine
    )


def notice_response(
    severity: str,
    sqlstate: str,
    message: str,
    detail: str | None = None,
    hint: str | None = None,
    position: int | None = None,
) -> bytes:
    return _message(b"N", _fields(severity, sqlstate, message, detail, hint, position))


def parse_complete() -> bytes:
    return PARSE_COMPLETE


def bind_complete() -> bytes:
    return BIND_COMPLETE


def close_complete() -> bytes:
    return CLOSE_COMPLETE


def no_data() -> bytes:
    return NO_DATA


def portal_suspended() -> bytes:
    return PORTAL_SUSPENDED


def parameter_description(oids: Sequence[int]) -> bytes:
    return _message(b"t", _I16.pack(len(oids)) + _array("I", len(oids)).pack(*oids))


def _copy_response(kind: bytes, fmt: int, column_formats: Sequence[int]) -> bytes:
    n = len(column_formats)
    return _message(kind, struct.pack("!bh", fmt, n) + _array("h", n).pack(*column_formats))


def copy_in_response(fmt: int, column_formats: Sequence[int]) -> bytes:
    return _copy_response(b"G", fmt, column_formats)


def copy_out_response(fmt: int, column_formats: Sequence[int]) -> bytes:
    return _copy_response(b"H", fmt, column_formats)


def copy_data(data: bytes) -> bytes:
    return _HEAD.pack(b"d", len(data) + 4) + data


def copy_done() -> bytes:
    return COPY_DONE


def negotiate_protocol_version(newest_minor: int, unrecognized: Sequence[str]) -> bytes:
    """Answer to a 3.x (x > 0) StartupMessage or unknown `_pq_.` options."""
    options = b"".join(_cstr(o) for o in unrecognized)
    return _message(b"v", _I32.pack(newest_minor) + _I32.pack(len(unrecognized)) + options)


def ssl_refused() -> bytes:
    return SSL_REFUSED
