"""Decoding half of the PostgreSQL v3 wire codec, with no I/O: bytes in, messages out.

Like asyncpg's coreproto, this module never touches a socket. The asyncio layer
(gateway/server/connection.py) feeds whatever it received to a `FrontendDecoder`, pulls complete
frontend messages out of it, and writes the `bytes` returned by the encoders in
`pgwire.protocol.encoder`. Keeping the codec pure makes it testable byte for byte and keeps framing rules
(length limits, malformed bodies) in one place. Limits and error texts follow
PostgreSQL 15 (postmaster.c ProcessStartupPacket, postgres.c SocketBackend, pqformat.c)
so clients see the errors they would see from a real server. Every decoding error is a
`ProtocolError` (SQLSTATE 08P01, FATAL): the connection is closed after reporting it.
A body error is raised only after the whole message was consumed, so a caller that
wanted PostgreSQL's laxer behaviour (ERROR, not FATAL, for a malformed body) could keep
reading.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from functools import lru_cache
from typing import Callable

from pgwire.errors import FEATURE_NOT_SUPPORTED, ProtocolError
from pgwire.protocol.messages import (
    AuthResponse,
    Bind,
    CancelRequest,
    Close,
    CopyData,
    CopyDone,
    CopyFail,
    Describe,
    Execute,
    Flush,
    FrontendMessage,
    FunctionCall,
    GSSENCRequest,
    Parse,
    Query,
    SSLRequest,
    StartupMessage,
    Sync,
    Terminate,
)

# Special startup-packet codes: 1234.5678, 1234.5679, 1234.5680.
CANCEL_REQUEST_CODE = 80877102
SSL_REQUEST_CODE = 80877103
GSSENC_REQUEST_CODE = 80877104
PROTOCOL_MAJOR = 3

# PostgreSQL's MAX_STARTUP_PACKET_LENGTH limits the packet *after* its length word,
# so the length field itself may be up to 10004.
MAX_STARTUP_PACKET_LENGTH = 10000
# PQ_SMALL_MESSAGE_LIMIT: cap for message types that are never legitimately large.
SMALL_MESSAGE_LIMIT = 10000
# PG_MAX_AUTH_TOKEN_LENGTH: PostgreSQL reads 'p' with this cap, which also stops an
# unauthenticated client from making us buffer max_message_bytes.
AUTH_MESSAGE_LIMIT = 65535
DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024

_I16 = struct.Struct("!h")
_U16 = struct.Struct("!H")
_I32 = struct.Struct("!i")
_U32 = struct.Struct("!I")
_CANCEL_BODY = struct.Struct("!iI")  # pid, secret key


@lru_cache(maxsize=64)
def _array(code: str, n: int) -> struct.Struct:
    """A struct for n big-endian values of one kind; counts repeat, so cache them."""
    return struct.Struct(f"!{n}{code}")


# --------------------------------------------------------------------------- decoding
# Body parsers take the whole buffer plus [p, end) bounds so no per-message copy of the
# body is made; only the fields themselves are sliced out.

# Messages without fields are immutable and equal to each other, so share one instance.
_SSL_REQUEST = SSLRequest()
_GSSENC_REQUEST = GSSENCRequest()
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


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid_encoding(raw, exc.start) from None


def _cstring(buf: bytes, p: int, end: int) -> tuple[str, int]:
    nul = buf.find(b"\x00", p, end)
    if nul < 0:
        raise ProtocolError("invalid string in message")
    return _text(buf[p:nul]), nul + 1


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
_Parser = Callable[[bytes, int, int], FrontendMessage]
_TYPES: dict[int, tuple[_Parser, int]] = {
    ord("Q"): (_parse_query, 0),
    ord("P"): (_parse_parse, 0),
    ord("B"): (_parse_bind, 0),
    ord("d"): (lambda buf, p, end: CopyData(buf[p:end]), 0),
    ord("F"): (_parse_function_call, 0),
    ord("p"): (lambda buf, p, end: AuthResponse(buf[p:end]), AUTH_MESSAGE_LIMIT),
    ord("D"): (_parse_describe, SMALL_MESSAGE_LIMIT),
    ord("E"): (_parse_execute, SMALL_MESSAGE_LIMIT),
    ord("C"): (_parse_close, SMALL_MESSAGE_LIMIT),
    ord("S"): (_empty(_SYNC), SMALL_MESSAGE_LIMIT),
    ord("H"): (_empty(_FLUSH), SMALL_MESSAGE_LIMIT),
    ord("X"): (_empty(_TERMINATE), SMALL_MESSAGE_LIMIT),
    ord("c"): (_empty(_COPY_DONE), SMALL_MESSAGE_LIMIT),
    ord("f"): (_parse_copy_fail, SMALL_MESSAGE_LIMIT),
}

# Decoder states.
_STARTUP = 0  # untyped packets: StartupMessage, SSLRequest, GSSENCRequest, CancelRequest
_STARTED = 1  # StartupMessage returned; waiting for startup_done()
_TYPED = 2  # regular typed messages
_FINISHED = 3  # CancelRequest returned; nothing else may follow on this connection


def _unsupported_protocol(code: int) -> ProtocolError:
    exc = ProtocolError(
        f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}: "
        f"server supports {PROTOCOL_MAJOR}.0 to {PROTOCOL_MAJOR}.0"
    )
    # Still fatal, but PostgreSQL reports this one as feature_not_supported.
    exc.sqlstate = FEATURE_NOT_SUPPORTED
    return exc


def _parse_startup_params(buf: bytes, p: int, end: int) -> dict[str, str]:
    """name\\0value\\0 ... \\0, with the terminator exactly at the last byte (as PG checks)."""
    params: dict[str, str] = {}
    while p < end and buf[p] != 0:
        nul = buf.find(b"\x00", p, end)
        if nul < 0 or nul + 1 >= end:
            break  # missing terminator or value: reported below
        vnul = buf.find(b"\x00", nul + 1, end)
        if vnul < 0:
            break
        params[_text(buf[p:nul])] = _text(buf[nul + 1 : vnul])
        p = vnul + 1
    if p != end - 1 or buf[p] != 0:
        raise ProtocolError("invalid startup packet layout: expected terminator as last byte")
    return params


class FrontendDecoder:
    """Incremental decoder of client messages: `feed()` bytes, pull with `next_message()`.

    Starts in startup mode (untyped packets). After returning a StartupMessage it yields
    nothing until the caller accepts it with `startup_done()`, so bytes that follow are
    never misread as startup packets. Received chunks are kept in a list and joined only
    when a message needs them, so a large message is copied once, not once per chunk.
    """

    __slots__ = (
        "max_message_bytes",
        "_buf",
        "_pos",
        "_chunks",
        "_chunk_bytes",
        "_state",
        "_ssl_seen",
        "_gss_seen",
    )

    def __init__(self, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        # Public so the caller may tighten it, e.g. while the client is unauthenticated.
        self.max_message_bytes = max_message_bytes
        self._buf = b""
        self._pos = 0
        self._chunks: list[bytes] = []
        self._chunk_bytes = 0
        self._state = _STARTUP
        self._ssl_seen = False
        self._gss_seen = False

    @property
    def buffered(self) -> int:
        """Bytes received but not yet decoded.

        Non-zero right after an SSLRequest that the server accepts means the client sent
        plaintext after asking for TLS (CVE-2021-23214); the caller must reject that.
        """
        return len(self._buf) - self._pos + self._chunk_bytes

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if data:
            self._chunks.append(bytes(data))  # no copy when data is already bytes
            self._chunk_bytes += len(data)

    def startup_done(self) -> None:
        """Switch to typed messages once the StartupMessage has been accepted."""
        self._state = _TYPED

    def next_message(self) -> FrontendMessage | None:
        """The next complete message, or None until more bytes are fed."""
        if self._state == _TYPED:
            return self._next_typed()
        if self._state == _STARTUP:
            return self._next_startup()
        return None

    def messages(self) -> list[FrontendMessage]:
        """All complete messages buffered so far."""
        out: list[FrontendMessage] = []
        while (message := self.next_message()) is not None:
            out.append(message)
        return out

    def __iter__(self) -> Iterator[FrontendMessage]:
        while (message := self.next_message()) is not None:
            yield message

    def _ensure(self, n: int) -> bool:
        """Make n unread bytes contiguous in self._buf; False if not all received yet."""
        avail = len(self._buf) - self._pos
        if avail >= n:
            return True
        if avail + self._chunk_bytes < n:
            return False
        chunks = self._chunks
        if avail:
            chunks.insert(0, self._buf[self._pos :])
        self._buf = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self._pos = 0
        chunks.clear()
        self._chunk_bytes = 0
        return True

    def _next_typed(self) -> FrontendMessage | None:
        if not self._ensure(5):
            # PostgreSQL rejects an unknown type byte before reading the length.
            if self._ensure(1) and self._buf[self._pos] not in _TYPES:
                raise ProtocolError(f"invalid frontend message type {self._buf[self._pos]}")
            return None
        buf = self._buf
        pos = self._pos
        code = buf[pos]
        entry = _TYPES.get(code)
        if entry is None:
            raise ProtocolError(f"invalid frontend message type {code}")
        parse, limit = entry
        length = _I32.unpack_from(buf, pos + 1)[0]
        # Checked before buffering the body, so a bogus length cannot make us wait for
        # (or allocate) gigabytes.
        if length < 4 or length > (limit or self.max_message_bytes):
            raise ProtocolError("invalid message length")
        end = pos + 1 + length
        if end > len(buf):
            if not self._ensure(1 + length):
                return None
            buf = self._buf
            pos = self._pos
            end = pos + 1 + length
        # Consume before parsing: a malformed body does not desynchronise the stream.
        self._pos = end
        return parse(buf, pos + 5, end)

    def _next_startup(self) -> FrontendMessage | None:
        if not self._ensure(4):
            return None
        length = _I32.unpack_from(self._buf, self._pos)[0]
        if length < 8 or length - 4 > MAX_STARTUP_PACKET_LENGTH:
            raise ProtocolError("invalid length of startup packet")
        if not self._ensure(length):
            return None
        buf = self._buf
        pos = self._pos
        end = pos + length
        self._pos = end
        code = _U32.unpack_from(buf, pos + 4)[0]
        if code == CANCEL_REQUEST_CODE:
            if length != 16:
                raise ProtocolError("invalid length of startup packet")
            self._state = _FINISHED
            return CancelRequest(*_CANCEL_BODY.unpack_from(buf, pos + 8))
        # A repeated SSL/GSS request falls through to the version check, as in PG.
        if code == SSL_REQUEST_CODE and not self._ssl_seen:
            self._ssl_seen = True
            return _SSL_REQUEST
        if code == GSSENC_REQUEST_CODE and not self._gss_seen:
            self._gss_seen = True
            return _GSSENC_REQUEST
        if code >> 16 != PROTOCOL_MAJOR:
            raise _unsupported_protocol(code)
        # A 3.x minor version is accepted; the caller answers NegotiateProtocolVersion.
        params = _parse_startup_params(buf, pos + 8, end)
        self._state = _STARTED
        return StartupMessage(code, params)


def parse_password(data: bytes) -> str:
    """The password of a PasswordMessage ('p' during cleartext/md5 auth)."""
    # auth.c recv_password_packet: exactly one NUL, at the end.
    if not data or data.find(b"\x00") != len(data) - 1:
        raise ProtocolError("invalid password packet size")
    return _text(data[:-1])


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
