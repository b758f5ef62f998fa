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

from pgwire.errors import FEATURE_NOT_SUPPORTED, PROGRAM_LIMIT_EXCEEDED, PgError, ProtocolError
from pgwire.protocol.bodies import (
    AUTH_MESSAGE_LIMIT,
    FRONTEND_PARSERS,
    SMALL_MESSAGE_LIMIT,
    decode_text,
    parse_password,
    parse_sasl_initial,
)
from pgwire.protocol.messages import (
    CANCEL_REQUEST_CODE,
    GSSENC_REQUEST_CODE,
    PROTOCOL_MAJOR,
    SSL_REQUEST_CODE,
    CancelRequest,
    FrontendMessage,
    GSSENCRequest,
    SSLRequest,
    StartupMessage,
)

__all__ = [
    "AUTH_MESSAGE_LIMIT", "CANCEL_REQUEST_CODE", "DEFAULT_MAX_MESSAGE_BYTES",
    "GSSENC_REQUEST_CODE", "MAX_STARTUP_PACKET_LENGTH", "PROTOCOL_MAJOR",
    "SMALL_MESSAGE_LIMIT", "SSL_REQUEST_CODE", "FrontendDecoder", "asks_for_work", "parse_password",
    "parse_sasl_initial",
]  # fmt: skip

# PostgreSQL's MAX_STARTUP_PACKET_LENGTH limits the packet *after* its length word,
# so the length field itself may be up to 10004.
MAX_STARTUP_PACKET_LENGTH = 10000
DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024

_I32 = struct.Struct("!i")
_U32 = struct.Struct("!I")
_CANCEL_BODY = struct.Struct("!iI")  # pid, secret key


# Messages without fields are immutable and equal to each other, so share one instance.
_SSL_REQUEST = SSLRequest()
_GSSENC_REQUEST = GSSENCRequest()


# Decoder states.
_STARTUP = 0  # untyped packets: StartupMessage, SSLRequest, GSSENCRequest, CancelRequest
_STARTED = 1  # StartupMessage returned; waiting for startup_done()
_TYPED = 2  # regular typed messages
_FINISHED = 3  # CancelRequest returned; nothing else may follow on this connection

# Messages that ask the server to run something: statements and the COPY data they read.
# A Sync, Flush, Describe, Close or Terminate left unread asks for nothing that could be
# lost when the client has gone.
_WORK = frozenset(b"QPBEFdcf")


def asks_for_work(data: bytes) -> bool:
    """Whether `data`, typed frontend messages, holds a complete one that runs something.
    A malformed header counts: running on reports its error, as PostgreSQL would."""
    pos, n = 0, len(data)
    while pos + 5 <= n:
        if data[pos] not in FRONTEND_PARSERS:
            return True
        end = pos + 1 + _I32.unpack_from(data, pos + 1)[0]
        if end < pos + 5:
            return True
        if end > n:
            return False
        if data[pos] in _WORK:
            return True
        pos = end
    return False


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
        params[decode_text(buf[p:nul])] = decode_text(buf[nul + 1 : vnul])
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
        "limit_name",
        "_buf",
        "_pos",
        "_chunks",
        "_chunk_bytes",
        "_state",
        "_ssl_seen",
        "_gss_seen",
        "_awaited",
    )

    def __init__(self, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        # Public so the caller may tighten it, e.g. while the client is unauthenticated.
        self.max_message_bytes = max_message_bytes
        self.limit_name = "max_message_bytes"  # what the error names
        self._buf = b""
        self._pos = 0
        self._chunks: list[bytes] = []
        self._chunk_bytes = 0
        self._state = _STARTUP
        self._ssl_seen = False
        self._gss_seen = False
        self._awaited = 0

    @property
    def awaited(self) -> int:
        """The whole length of the message being received, once its header arrived and
        until its last byte did (0 otherwise): the reader may buffer this much without
        the decoder being able to hand anything out."""
        return self._awaited

    @property
    def buffered(self) -> int:
        """Bytes received but not yet decoded.

        Non-zero right after an SSLRequest that the server accepts means the client sent
        plaintext after asking for TLS (CVE-2021-23214); the caller must reject that.
        """
        return len(self._buf) - self._pos + self._chunk_bytes

    def holds_work(self) -> bool:
        """Whether what was received and not yet decoded holds a message that runs
        something (`asks_for_work`); only typed messages count."""
        if self._state != _TYPED:
            return False
        return asks_for_work(self._buf[self._pos:] + b"".join(self._chunks))

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
            if self._ensure(1) and self._buf[self._pos] not in FRONTEND_PARSERS:
                raise ProtocolError(f"invalid frontend message type {self._buf[self._pos]}")
            return None
        buf = self._buf
        pos = self._pos
        code = buf[pos]
        entry = FRONTEND_PARSERS.get(code)
        if entry is None:
            raise ProtocolError(f"invalid frontend message type {code}")
        parse, limit = entry
        length = _I32.unpack_from(buf, pos + 1)[0]
        # Checked before buffering the body, so a bogus length cannot make us wait for
        # (or allocate) gigabytes.
        if length < 4 or (limit and length > limit):
            raise ProtocolError("invalid message length")
        if length > self.max_message_bytes:
            # A message type that may be large (a Bind with a big bytea, a long Query)
            # over the configured cap: a limit of ours, not a broken client.
            raise PgError(PROGRAM_LIMIT_EXCEEDED,
                          f"message of {length} bytes exceeds {self.limit_name} "
                          f"({self.max_message_bytes} bytes)", severity="FATAL")
        end = pos + 1 + length
        if end > len(buf):
            if not self._ensure(1 + length):
                self._awaited = 1 + length
                return None
            buf = self._buf
            pos = self._pos
            end = pos + 1 + length
        # Consume before parsing: a malformed body does not desynchronise the stream.
        self._pos = end
        self._awaited = 0
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
