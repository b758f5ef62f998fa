"""Frontend message bodies: the field readers and one parser per message type, no I/O.

Body parsers take the whole buffer plus [p, end) bounds so no per-message copy of the
body is made; only the fields themselves are sliced out. Errors are `ProtocolError`s
worded as PostgreSQL 15's pqformat.c words them. `FrontendDecoder`
(`pgwire.protocol.decoder`) does the framing and picks the parser by type byte.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Callable

from pgwire.errors import ProtocolError
from pgwire.protocol.messages import (
    AuthResponse,
    Bind,
    Close,
    CopyData,
    CopyDone,
    CopyFail,
    Describe,
    Execute,
    Flush,
    FrontendMessage,
    FrontendTag,
    FunctionCall,
    Parse,
    Query,
    Sync,
    Terminate,
)

# PQ_SMALL_MESSAGE_LIMIT: cap for message types that are never legitimately large.
SMALL_MESSAGE_LIMIT = 10000
# PG_MAX_AUTH_TOKEN_LENGTH: PostgreSQL reads 'p' with this cap, which also stops an
# unauthenticated client from making us buffer max_message_bytes.
AUTH_MESSAGE_LIMIT = 65535

_I16 = struct.Struct("!h")
_U16 = struct.Struct("!H")
_I32 = struct.Struct("!i")
_U32 = struct.Struct("!I")


@lru_cache(maxsize=64)
def _array(code: str, n: int) -> struct.Struct:
    """A struct for n big-endian values of one kind; counts repeat, so cache them."""
    return struct.Struct(f"!{n}{code}")


# Messages without fields are immutable and equal to each other, so share one instance.
_SYNC = Sync()
_FLUSH = Flush()
_TERMINATE = Terminate()
_COPY_DONE = CopyDone()


def _invalid_encoding(raw: bytes, start: int) -> ProtocolError:
    """PostgreSQL's report_invalid_encoding text: the offending character's bytes."""
    first = raw[start]
    width = 2 if 0xC0 <= first < 0xE0 else 3 if 0xE0 <= first < 0xF0 else 4 if first >= 0xF0 else 1
    shown = " ".join(f"0x{b:02x}" for b in raw[start : start + width])
    return ProtocolError(f'invalid byte sequence for encoding "UTF8": {shown}')


def decode_text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid_encoding(raw, exc.start) from None


def _cstring(buf: bytes, p: int, end: int) -> tuple[str, int]:
    nul = buf.find(b"\x00", p, end)
    if nul < 0:
        raise ProtocolError("invalid string in message")
    return decode_text(buf[p:nul]), nul + 1


def _short_data() -> ProtocolError:
    return ProtocolError("insufficient data left in message")


def _u16(buf: bytes, p: int, end: int) -> int:
    if p + 2 > end:
        raise _short_data()
    return _U16.unpack_from(buf, p)[0]


def _i16_array(buf: bytes, p: int, end: int) -> tuple[tuple[int, ...], int]:
    """A uint16 count followed by that many int16 values (format codes)."""
    n = _u16(buf, p, end)
    p += 2
    if p + 2 * n > end:
        raise _short_data()
    return (_array("h", n).unpack_from(buf, p) if n else ()), p + 2 * n


def _values(buf: bytes, p: int, end: int, n: int) -> tuple[tuple[bytes | None, ...], int]:
    """n length-prefixed values; length -1 is SQL NULL."""
    values: list[bytes | None] = []
    append = values.append
    unpack = _I32.unpack_from
    for _ in range(n):
        if p + 4 > end:
            raise _short_data()
        size = unpack(buf, p)[0]
        p += 4
        if size == -1:
            append(None)
            continue
        if size < 0 or p + size > end:
            raise _short_data()
        append(buf[p : p + size])
        p += size
    return tuple(values), p


def _check_end(p: int, end: int) -> None:
    # pq_getmsgend: trailing bytes mean the client and server disagree on the format.
    if p != end:
        raise ProtocolError("invalid message format")


def _parse_query(buf: bytes, p: int, end: int) -> Query:
    sql, p = _cstring(buf, p, end)
    _check_end(p, end)
    return Query(sql)


def _parse_parse(buf: bytes, p: int, end: int) -> Parse:
    name, p = _cstring(buf, p, end)
    query, p = _cstring(buf, p, end)
    n = _u16(buf, p, end)
    p += 2
    if p + 4 * n > end:
        raise _short_data()
    types = _array("I", n).unpack_from(buf, p) if n else ()
    _check_end(p + 4 * n, end)
    return Parse(name, query, types)


def _parse_bind(buf: bytes, p: int, end: int) -> Bind:
    portal, p = _cstring(buf, p, end)
    statement, p = _cstring(buf, p, end)
    param_formats, p = _i16_array(buf, p, end)
    n = _u16(buf, p, end)
    p += 2
    if len(param_formats) > 1 and len(param_formats) != n:
        raise ProtocolError(
            f"bind message has {len(param_formats)} parameter formats but {n} parameters"
        )
    params, p = _values(buf, p, end, n)
    result_formats, p = _i16_array(buf, p, end)
    _check_end(p, end)
    return Bind(portal, statement, param_formats, params, result_formats)


def _kind_and_name(buf: bytes, p: int, end: int, what: str) -> tuple[str, str]:
    if p >= end:
        raise ProtocolError("no data left in message")
    kind = buf[p]
    name, p = _cstring(buf, p + 1, end)
    _check_end(p, end)
    if kind == 0x53:
        return "S", name
    if kind == 0x50:
        return "P", name
    raise ProtocolError(f"invalid {what} message subtype {kind}")


def _parse_describe(buf: bytes, p: int, end: int) -> Describe:
    return Describe(*_kind_and_name(buf, p, end, "DESCRIBE"))


def _parse_close(buf: bytes, p: int, end: int) -> Close:
    return Close(*_kind_and_name(buf, p, end, "CLOSE"))


def _parse_execute(buf: bytes, p: int, end: int) -> Execute:
    portal, p = _cstring(buf, p, end)
    if p + 4 > end:
        raise _short_data()
    max_rows = _I32.unpack_from(buf, p)[0]
    _check_end(p + 4, end)
    return Execute(portal, max_rows)


def _parse_copy_fail(buf: bytes, p: int, end: int) -> CopyFail:
    message, p = _cstring(buf, p, end)
    _check_end(p, end)
    return CopyFail(message)


def _parse_function_call(buf: bytes, p: int, end: int) -> FunctionCall:
    if p + 4 > end:
        raise _short_data()
    oid = _U32.unpack_from(buf, p)[0]
    arg_formats, p = _i16_array(buf, p + 4, end)
    n = _u16(buf, p, end)
    if len(arg_formats) > 1 and len(arg_formats) != n:
        raise ProtocolError(
            f"function call message contains {len(arg_formats)} argument formats but {n} arguments"
        )
    args, p = _values(buf, p + 2, end, n)
    if p + 2 > end:
        raise _short_data()
    result_format = _I16.unpack_from(buf, p)[0]
    _check_end(p + 2, end)
    return FunctionCall(oid, arg_formats, args, result_format)


def _empty(message: FrontendMessage) -> Callable[[bytes, int, int], FrontendMessage]:
    def parse(buf: bytes, p: int, end: int) -> FrontendMessage:
        _check_end(p, end)
        return message

    return parse


# type byte -> (body parser, length limit); limit 0 means the decoder's max_message_bytes.
BodyParser = Callable[[bytes, int, int], FrontendMessage]
FRONTEND_PARSERS: dict[int, tuple[BodyParser, int]] = {
    FrontendTag.QUERY[0]: (_parse_query, 0),
    FrontendTag.PARSE[0]: (_parse_parse, 0),
    FrontendTag.BIND[0]: (_parse_bind, 0),
    FrontendTag.COPY_DATA[0]: (lambda buf, p, end: CopyData(buf[p:end]), 0),
    FrontendTag.FUNCTION_CALL[0]: (_parse_function_call, 0),
    FrontendTag.PASSWORD[0]: (lambda buf, p, end: AuthResponse(buf[p:end]), AUTH_MESSAGE_LIMIT),
    FrontendTag.DESCRIBE[0]: (_parse_describe, SMALL_MESSAGE_LIMIT),
    FrontendTag.EXECUTE[0]: (_parse_execute, SMALL_MESSAGE_LIMIT),
    FrontendTag.CLOSE[0]: (_parse_close, SMALL_MESSAGE_LIMIT),
    FrontendTag.SYNC[0]: (_empty(_SYNC), SMALL_MESSAGE_LIMIT),
    FrontendTag.FLUSH[0]: (_empty(_FLUSH), SMALL_MESSAGE_LIMIT),
    FrontendTag.TERMINATE[0]: (_empty(_TERMINATE), SMALL_MESSAGE_LIMIT),
    FrontendTag.COPY_DONE[0]: (_empty(_COPY_DONE), SMALL_MESSAGE_LIMIT),
    FrontendTag.COPY_FAIL[0]: (_parse_copy_fail, SMALL_MESSAGE_LIMIT),
}


def parse_password(data: bytes) -> str:
    """The password of a PasswordMessage ('p' during cleartext/md5 auth)."""
    # auth.c recv_password_packet: exactly one NUL, at the end.
    if not data or data.find(b"\x00") != len(data) - 1:
        raise ProtocolError("invalid password packet size")
    return decode_text(data[:-1])


def parse_sasl_initial(data: bytes) -> tuple[str, bytes]:
    """(mechanism, initial response) of a SASLInitialResponse; length -1 gives b""."""
    end = len(data)
    mechanism, p = _cstring(data, 0, end)
    if p + 4 > end:
        raise _short_data()
    size = _I32.unpack_from(data, p)[0]
    p += 4
    if size == -1:
        _check_end(p, end)
        return mechanism, b""
    if size < 0 or p + size > end:
        raise _short_data()
    _check_end(p + size, end)
    return mechanism, data[p : p + size]
