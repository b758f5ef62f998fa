"""Byte-level tests of the sans-IO protocol codec.

Inputs are built by hand with struct.pack following the "Message Formats" chapter of the
PostgreSQL documentation, and every encoder is compared with hand-written bytes, so the
codec is checked against the protocol rather than against itself.
"""

from __future__ import annotations

import struct

import pytest

from pgwire.errors import FEATURE_NOT_SUPPORTED, PROTOCOL_VIOLATION, PgError, ProtocolError
from pgwire.protocol import encoder
from pgwire.protocol import client as w
from pgwire.protocol.decoder import (FrontendDecoder, asks_for_work, parse_password,
                                     parse_sasl_initial)
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
    FieldDescription,
    Flush,
    FunctionCall,
    GSSENCRequest,
    Parse,
    Query,
    SSLRequest,
    StartupMessage,
    Sync,
    Terminate,
)

# ----------------------------------------------------------------------------- helpers


def msg(kind: bytes, body: bytes = b"") -> bytes:
    """A typed frontend message: type byte, int32 length counting itself, body."""
    return kind + struct.pack("!i", len(body) + 4) + body


def startup_packet(code: int, body: bytes = b"") -> bytes:
    return struct.pack("!ii", len(body) + 8, code) + body


def startup(params: dict[str, str], protocol: int = 196608) -> bytes:
    body = b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in params.items()) + b"\0"
    return startup_packet(protocol, body)


def typed_decoder(max_message_bytes: int = 256 * 1024 * 1024) -> FrontendDecoder:
    dec = FrontendDecoder(max_message_bytes)
    dec.feed(startup({"user": "u"}))
    assert isinstance(dec.next_message(), StartupMessage)
    dec.startup_done()
    return dec


def decode_one(data: bytes) -> object:
    dec = typed_decoder()
    dec.feed(data)
    message = dec.next_message()
    assert dec.next_message() is None
    assert dec.buffered == 0
    return message


def decode_error(data: bytes) -> ProtocolError:
    dec = typed_decoder()
    dec.feed(data)
    with pytest.raises(ProtocolError) as info:
        dec.next_message()
    return info.value


def bind_body(
    portal: bytes = b"",
    stmt: bytes = b"s1",
    formats: tuple[int, ...] = (),
    params: tuple[bytes | None, ...] = (),
    results: tuple[int, ...] = (),
) -> bytes:
    body = portal + b"\0" + stmt + b"\0"
    body += struct.pack(f"!H{len(formats)}h", len(formats), *formats)
    body += struct.pack("!H", len(params))
    for p in params:
        body += struct.pack("!i", -1) if p is None else struct.pack("!i", len(p)) + p
    body += struct.pack(f"!H{len(results)}h", len(results), *results)
    return body


# ----------------------------------------------------------------------------- startup


def test_startup_message() -> None:
    dec = FrontendDecoder()
    dec.feed(startup({"user": "alice", "database": "db", "application_name": "psql"}))
    assert dec.next_message() == StartupMessage(
        196608, {"user": "alice", "database": "db", "application_name": "psql"}
    )


def test_startup_waits_for_startup_done_then_reads_typed_messages() -> None:
    dec = FrontendDecoder()
    dec.feed(startup({"user": "u"}) + msg(b"Q", b"select 1\0"))
    assert isinstance(dec.next_message(), StartupMessage)
    # Not yet accepted: the trailing bytes must not be read as a startup packet.
    assert dec.next_message() is None
    dec.startup_done()
    assert dec.next_message() == Query("select 1")


def test_startup_byte_by_byte() -> None:
    data = startup({"user": "bob", "options": "-c x=1"})
    dec = FrontendDecoder()
    for i in range(len(data) - 1):
        dec.feed(data[i : i + 1])
        assert dec.next_message() is None
    dec.feed(data[-1:])
    assert dec.next_message() == StartupMessage(196608, {"user": "bob", "options": "-c x=1"})


def test_startup_minor_version_is_passed_through() -> None:
    dec = FrontendDecoder()
    dec.feed(startup({"user": "u", "_pq_.x": "1"}, protocol=(3 << 16) | 2))
    assert dec.next_message() == StartupMessage(196610, {"user": "u", "_pq_.x": "1"})


def test_startup_empty_params() -> None:
    dec = FrontendDecoder()
    dec.feed(startup_packet(196608, b"\0"))
    assert dec.next_message() == StartupMessage(196608, {})


def test_ssl_request_then_startup() -> None:
    dec = FrontendDecoder()
    dec.feed(struct.pack("!ii", 8, 80877103))
    assert dec.next_message() == SSLRequest()
    assert dec.buffered == 0
    dec.feed(startup({"user": "u"}))
    assert dec.next_message() == StartupMessage(196608, {"user": "u"})


def test_buffered_reports_plaintext_after_ssl_request() -> None:
    dec = FrontendDecoder()
    dec.feed(struct.pack("!ii", 8, 80877103) + startup({"user": "u"}))
    assert dec.next_message() == SSLRequest()
    assert dec.buffered == len(startup({"user": "u"}))


def test_gssenc_request_then_ssl_request_then_startup() -> None:
    dec = FrontendDecoder()
    gss, ssl = struct.pack("!ii", 8, 80877104), struct.pack("!ii", 8, 80877103)
    dec.feed(gss + ssl + startup({"user": "u"}))
    assert dec.messages() == [GSSENCRequest(), SSLRequest(), StartupMessage(196608, {"user": "u"})]


def test_repeated_ssl_request_is_rejected_like_pg() -> None:
    dec = FrontendDecoder()
    dec.feed(struct.pack("!ii", 8, 80877103) * 2)
    assert dec.next_message() == SSLRequest()
    with pytest.raises(ProtocolError, match=r"unsupported frontend protocol 1234\.5679"):
        dec.next_message()


def test_cancel_request() -> None:
    dec = FrontendDecoder()
    dec.feed(struct.pack("!iiiI", 16, 80877102, 4242, 0xDEADBEEF))
    assert dec.next_message() == CancelRequest(4242, 0xDEADBEEF)
    # Nothing may follow a cancel request on its connection.
    dec.feed(startup({"user": "u"}))
    assert dec.next_message() is None


def test_cancel_request_wrong_length() -> None:
    dec = FrontendDecoder()
    dec.feed(struct.pack("!iiii", 16 + 4, 80877102, 1, 2) + b"\0\0\0\0")
    with pytest.raises(ProtocolError, match="invalid length of startup packet"):
        dec.next_message()


def test_unsupported_protocol_version() -> None:
    dec = FrontendDecoder()
    dec.feed(startup({"user": "u"}, protocol=2 << 16))
    with pytest.raises(ProtocolError) as info:
        dec.next_message()
    assert info.value.message == "unsupported frontend protocol 2.0: server supports 3.0 to 3.0"
    assert info.value.sqlstate == FEATURE_NOT_SUPPORTED
    assert info.value.is_fatal


@pytest.mark.parametrize("length", [0, 4, 7, -1, 10005, 0x7FFFFFFF])
def test_startup_length_out_of_range_rejected_after_length_word(length: int) -> None:
    dec = FrontendDecoder()
    dec.feed(struct.pack("!i", length))  # only the length word: reject without waiting
    with pytest.raises(ProtocolError, match="invalid length of startup packet") as info:
        dec.next_message()
    assert info.value.sqlstate == PROTOCOL_VIOLATION


def test_startup_length_limit_is_pgs() -> None:
    # PostgreSQL limits the packet after the length word to 10000 bytes: 10004 in total.
    params = {"user": "u", "x": "y" * (10004 - 8 - len(b"user\0u\0x\0\0\0"))}
    data = startup(params)
    assert len(data) == 10004
    dec = FrontendDecoder()
    dec.feed(data)
    assert dec.next_message() == StartupMessage(196608, params)


@pytest.mark.parametrize(
    "body",
    [
        b"",  # no terminator at all
        b"user\0u\0",  # pairs but no final NUL
        b"user\0u\0\0\0",  # data after the terminator
        b"user\0",  # name without value
        b"user\0u\0x",  # last byte is not a NUL
    ],
)
def test_startup_bad_layout(body: bytes) -> None:
    dec = FrontendDecoder()
    dec.feed(startup_packet(196608, body))
    with pytest.raises(ProtocolError, match="invalid startup packet layout"):
        dec.next_message()


def test_startup_invalid_utf8() -> None:
    dec = FrontendDecoder()
    dec.feed(startup_packet(196608, b"user\0\xc3\x28\0\0"))
    with pytest.raises(ProtocolError, match='invalid byte sequence for encoding "UTF8": 0xc3 0x28'):
        dec.next_message()


# ----------------------------------------------------------------------------- typed messages

CASES: list[tuple[bytes, object]] = [
    (msg(b"Q", b"select 1\0"), Query("select 1")),
    (msg(b"Q", "select 'é'\0".encode()), Query("select 'é'")),
    (msg(b"Q", b"\0"), Query("")),
    (
        msg(b"P", b"s1\0select $1, $2\0" + struct.pack("!HII", 2, 23, 0xFFFFFFFF)),
        Parse("s1", "select $1, $2", (23, 0xFFFFFFFF)),
    ),
    (msg(b"P", b"\0select 1\0" + struct.pack("!H", 0)), Parse("", "select 1", ())),
    (msg(b"B", bind_body()), Bind("", "s1", (), (), ())),
    (
        msg(b"B", bind_body(b"p1", b"s1", (1,), (b"\x00\x00\x00\x07", None, b""), (0, 1))),
        Bind("p1", "s1", (1,), (b"\x00\x00\x00\x07", None, b""), (0, 1)),
    ),
    (
        msg(b"B", bind_body(b"", b"", (0, 1), (b"42", b"\x01"), (1,))),
        Bind("", "", (0, 1), (b"42", b"\x01"), (1,)),
    ),
    (msg(b"D", b"Ss1\0"), Describe("S", "s1")),
    (msg(b"D", b"P\0"), Describe("P", "")),
    (msg(b"E", b"p1\0" + struct.pack("!i", 100)), Execute("p1", 100)),
    (msg(b"E", b"\0" + struct.pack("!i", 0)), Execute("", 0)),
    (msg(b"C", b"Sstmt\0"), Close("S", "stmt")),
    (msg(b"C", b"Pportal\0"), Close("P", "portal")),
    (msg(b"S"), Sync()),
    (msg(b"H"), Flush()),
    (msg(b"X"), Terminate()),
    (msg(b"d", b"1\t2\n\0\xff"), CopyData(b"1\t2\n\0\xff")),
    (msg(b"d"), CopyData(b"")),
    (msg(b"c"), CopyDone()),
    (msg(b"f", b"aborted\0"), CopyFail("aborted")),
    (msg(b"p", b"secret\0"), AuthResponse(b"secret\0")),
    (
        msg(b"F", struct.pack("!IHhHi3sih", 1598, 1, 1, 2, 3, b"abc", -1, 1)),
        FunctionCall(1598, (1,), (b"abc", None), 1),
    ),
]


@pytest.mark.parametrize(("data", "expected"), CASES, ids=[repr(c[1])[:40] for c in CASES])
def test_decode_each_type(data: bytes, expected: object) -> None:
    assert decode_one(data) == expected


@pytest.mark.parametrize(("data", "expected"), CASES, ids=[repr(c[1])[:40] for c in CASES])
def test_decode_byte_by_byte(data: bytes, expected: object) -> None:
    dec = typed_decoder()
    got = []
    for i in range(len(data)):
        dec.feed(data[i : i + 1])
        got.extend(dec.messages())
    assert got == [expected]


def test_many_messages_in_one_feed() -> None:
    data = b"".join(d for d, _ in CASES)
    dec = typed_decoder()
    dec.feed(data)
    assert dec.messages() == [e for _, e in CASES]
    assert dec.buffered == 0


def test_pipeline_in_uneven_chunks_and_iteration() -> None:
    # A pgbench-like extended-protocol pipeline, split at awkward places.
    one = (
        msg(b"B", bind_body(b"", b"s", (), (b"17",), ()))
        + msg(b"E", b"\0" + struct.pack("!i", 0))
        + msg(b"S")
    )
    data = one * 200
    dec = typed_decoder()
    got = []
    for i in range(0, len(data), 7):
        dec.feed(data[i : i + 7])
        got.extend(dec)
    assert len(got) == 600
    assert got[:3] == [Bind("", "s", (), (b"17",), ()), Execute("", 0), Sync()]
    assert dec.buffered == 0


def test_large_message_in_many_chunks() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB
    data = msg(b"d", payload)
    dec = typed_decoder()
    for i in range(0, len(data), 65536):
        assert dec.next_message() is None
        dec.feed(data[i : i + 65536])
    assert dec.next_message() == CopyData(payload)


def test_feed_accepts_bytearray_and_memoryview() -> None:
    dec = typed_decoder()
    data = msg(b"Q", b"select 1\0")
    dec.feed(bytearray(data[:3]))
    dec.feed(memoryview(data)[3:])
    assert dec.next_message() == Query("select 1")


def test_fieldless_messages_are_shared() -> None:
    assert decode_one(msg(b"S")) is decode_one(msg(b"S"))


# ----------------------------------------------------------------------------- framing limits


def test_unknown_type() -> None:
    err = decode_error(b"Z")  # a single byte is enough to reject it, as PG does
    assert err.message == "invalid frontend message type 90"
    assert decode_error(msg(b"\x00")).message == "invalid frontend message type 0"


@pytest.mark.parametrize("kind", [b"S", b"H", b"X", b"D", b"E", b"C", b"c", b"f"])
def test_small_message_over_limit_rejected_after_header(kind: bytes) -> None:
    # Only the 5-byte header is sent: the decoder must not wait for the body.
    err = decode_error(kind + struct.pack("!i", 10001))
    assert err.message == "invalid message length"
    assert err.sqlstate == PROTOCOL_VIOLATION and err.is_fatal


def test_small_message_at_limit_accepted() -> None:
    body = b"x" * 9995 + b"\0"  # length word 4 + body 9996 = 10000
    assert decode_one(msg(b"f", body)) == CopyFail("x" * 9995)
    assert len(msg(b"f", body)) == 10001  # type byte + length 10000


@pytest.mark.parametrize("kind", [b"Q", b"P", b"B", b"d", b"F"])
def test_large_types_limited_by_max_message_bytes(kind: bytes) -> None:
    dec = typed_decoder(max_message_bytes=1 << 20)
    dec.feed(kind + struct.pack("!i", (1 << 20) + 1))
    with pytest.raises(PgError) as raised:
        dec.next_message()
    assert raised.value.sqlstate == "54000" and raised.value.is_fatal
    assert raised.value.message == ("message of 1048577 bytes exceeds max_message_bytes "
                                    "(1048576 bytes)")
    dec = typed_decoder(max_message_bytes=1 << 20)
    dec.feed(kind + struct.pack("!i", 1 << 20))
    assert dec.next_message() is None  # legal length: waits for the body
    assert dec.awaited == 1 + (1 << 20)  # the reader may buffer this much
    dec.feed(b"x" * ((1 << 20) - 5) + b"\0")
    try:
        dec.next_message()
    except ProtocolError:  # not a well-formed body of every kind: consumed all the same
        pass
    assert dec.awaited == 0 and dec.buffered == 0


def test_auth_message_limit() -> None:
    dec = typed_decoder()
    dec.feed(b"p" + struct.pack("!i", 65536))
    with pytest.raises(ProtocolError, match="invalid message length"):
        dec.next_message()


@pytest.mark.parametrize("length", [3, 0, -1, -(2**31)])
def test_length_below_four(length: int) -> None:
    assert decode_error(b"Q" + struct.pack("!i", length)).message == "invalid message length"


# ----------------------------------------------------------------------------- malformed bodies

MALFORMED: list[tuple[bytes, str]] = [
    (msg(b"Q", b"select 1"), "invalid string in message"),
    (msg(b"Q", b"select 1\0x"), "invalid message format"),
    (msg(b"Q", b"select \xff\0"), 'invalid byte sequence for encoding "UTF8": 0xff'),
    (msg(b"P", b"s\0q\0"), "insufficient data left in message"),
    (msg(b"P", b"s\0q\0" + struct.pack("!HI", 2, 23)), "insufficient data left in message"),
    (msg(b"P", b"s\0q\0" + struct.pack("!HI", 1, 23) + b"!"), "invalid message format"),
    (msg(b"P", b"s\0q"), "invalid string in message"),
    (msg(b"B", b"\0s"), "invalid string in message"),
    (msg(b"B", b"\0s\0" + struct.pack("!H", 3) + b"\0\0"), "insufficient data left in message"),
    (
        msg(b"B", bind_body(formats=(0, 1), params=(b"a", b"b", b"c"))),
        "bind message has 2 parameter formats but 3 parameters",
    ),
    (
        msg(b"B", b"\0s\0" + struct.pack("!HHi", 0, 1, 10) + b"abc" + struct.pack("!H", 0)),
        "insufficient data left in message",
    ),
    (
        msg(b"B", b"\0s\0" + struct.pack("!HHi", 0, 1, -2) + struct.pack("!H", 0)),
        "insufficient data left in message",
    ),
    (msg(b"B", bind_body()[:-2]), "insufficient data left in message"),
    (msg(b"B", bind_body() + b"\0"), "invalid message format"),
    (msg(b"D", b""), "no data left in message"),
    (msg(b"D", b"Xname\0"), "invalid DESCRIBE message subtype 88"),
    (msg(b"D", b"Sname"), "invalid string in message"),
    (msg(b"C", b"Qname\0"), "invalid CLOSE message subtype 81"),
    (msg(b"E", b"p\0\0\0"), "insufficient data left in message"),
    (msg(b"E", b"p\0" + struct.pack("!i", 1) + b"\0"), "invalid message format"),
    (msg(b"S", b"\0"), "invalid message format"),
    (msg(b"f", b"no terminator"), "invalid string in message"),
    (
        msg(b"F", struct.pack("!IHhhH", 1, 2, 0, 0, 3)),
        "function call message contains 2 argument formats but 3 arguments",
    ),
]


@pytest.mark.parametrize(("data", "error"), MALFORMED, ids=[e for _, e in MALFORMED])
def test_malformed_bodies(data: bytes, error: str) -> None:
    err = decode_error(data)
    assert err.message == error
    assert err.sqlstate == PROTOCOL_VIOLATION


def test_malformed_body_is_consumed() -> None:
    dec = typed_decoder()
    dec.feed(msg(b"D", b"X\0") + msg(b"S"))
    with pytest.raises(ProtocolError):
        dec.next_message()
    assert dec.next_message() == Sync()


# ----------------------------------------------------------------------------- auth payloads


def test_parse_password() -> None:
    assert parse_password(b"hunter2\0") == "hunter2"
    assert parse_password(b"\0") == ""
    for bad in (b"", b"abc", b"a\0b\0"):
        with pytest.raises(ProtocolError, match="invalid password packet size"):
            parse_password(bad)


def test_parse_sasl_initial() -> None:
    first = b"n,,n=,r=abc"
    data = b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first
    assert parse_sasl_initial(data) == ("SCRAM-SHA-256", first)
    assert parse_sasl_initial(b"SCRAM-SHA-256\0" + struct.pack("!i", -1)) == ("SCRAM-SHA-256", b"")
    with pytest.raises(ProtocolError, match="invalid string in message"):
        parse_sasl_initial(b"SCRAM")
    with pytest.raises(ProtocolError, match="insufficient data left in message"):
        parse_sasl_initial(b"SCRAM-SHA-256\0" + struct.pack("!i", 50) + first)
    with pytest.raises(ProtocolError, match="invalid message format"):
        parse_sasl_initial(data + b"!")


# ----------------------------------------------------------------------------- encoders


def test_authentication_messages() -> None:
    assert encoder.authentication_ok() == b"R\x00\x00\x00\x08\x00\x00\x00\x00"
    assert encoder.authentication_cleartext() == b"R\x00\x00\x00\x08\x00\x00\x00\x03"
    assert encoder.authentication_md5(b"abcd") == b"R\x00\x00\x00\x0c\x00\x00\x00\x05abcd"
    with pytest.raises(ValueError):
        encoder.authentication_md5(b"abc")
    assert encoder.authentication_sasl(["SCRAM-SHA-256"]) == (
        b"R\x00\x00\x00\x17\x00\x00\x00\x0aSCRAM-SHA-256\x00\x00"
    )
    assert encoder.authentication_sasl_continue(b"r=x") == b"R\x00\x00\x00\x0b\x00\x00\x00\x0br=x"
    assert encoder.authentication_sasl_final(b"v=y") == b"R\x00\x00\x00\x0b\x00\x00\x00\x0cv=y"


def test_session_setup_messages() -> None:
    assert encoder.parameter_status("TimeZone", "UTC") == b"S\x00\x00\x00\x11TimeZone\x00UTC\x00"
    assert encoder.backend_key_data(1234, 0xDEADBEEF) == (
        b"K\x00\x00\x00\x0c\x00\x00\x04\xd2\xde\xad\xbe\xef"
    )
    assert encoder.ready_for_query(b"I") == b"Z\x00\x00\x00\x05I"
    assert encoder.ready_for_query(b"T") == b"Z\x00\x00\x00\x05T"
    assert encoder.ready_for_query(b"E") == b"Z\x00\x00\x00\x05E"
    with pytest.raises(ValueError):
        encoder.ready_for_query(b"X")
    assert encoder.ssl_refused() == b"N"


def test_row_description() -> None:
    fields = [
        FieldDescription("id", 16384, 1, 23, 4, -1, 0),
        FieldDescription("name", 0, 0, 25, -1, -1, 1),
    ]
    expected = (
        b"T\x00\x00\x00\x32"  # length 4 + count 2 + ("id\0" + 18) + ("name\0" + 18) = 50
        b"\x00\x02"
        # name, table oid, column, type oid, size, typmod, format
        b"id\x00" b"\x00\x00\x40\x00" b"\x00\x01" b"\x00\x00\x00\x17"
        b"\x00\x04" b"\xff\xff\xff\xff" b"\x00\x00"
        b"name\x00" b"\x00\x00\x00\x00" b"\x00\x00" b"\x00\x00\x00\x19"
        b"\xff\xff" b"\xff\xff\xff\xff" b"\x00\x01"
    )
    assert len(expected) - 1 == 0x32
    assert encoder.row_description(fields) == expected
    assert encoder.row_description([]) == b"T\x00\x00\x00\x06\x00\x00"


def test_data_row() -> None:
    assert encoder.data_row([b"1", None, b""]) == (
        b"D\x00\x00\x00\x13\x00\x03"
        b"\x00\x00\x00\x011"
        b"\xff\xff\xff\xff"
        b"\x00\x00\x00\x00"
    )


def test_simple_responses() -> None:
    assert encoder.command_complete("SELECT 1") == b"C\x00\x00\x00\x0dSELECT 1\x00"
    assert encoder.empty_query_response() == b"I\x00\x00\x00\x04"
    assert encoder.parse_complete() == b"1\x00\x00\x00\x04"
    assert encoder.bind_complete() == b"2\x00\x00\x00\x04"
    assert encoder.close_complete() == b"3\x00\x00\x00\x04"
    assert encoder.no_data() == b"n\x00\x00\x00\x04"
    assert encoder.portal_suspended() == b"s\x00\x00\x00\x04"
    assert encoder.copy_done() == b"c\x00\x00\x00\x04"
    assert encoder.copy_data(b"a\tb\n") == b"d\x00\x00\x00\x08a\tb\n"


def test_error_response() -> None:
    assert encoder.error_response("ERROR", "42601", "syntax error") == (
        b"E\x00\x00\x00\x28"
        b"SERROR\x00VERROR\x00C42601\x00Msyntax error\x00\x00"
    )
    full = encoder.error_response("ERROR", "42P01", "no t", detail="d", hint="h", position=8)
    assert full == b"E\x00\x00\x00\x29SERROR\x00VERROR\x00C42P01\x00Mno t\x00Dd\x00Hh\x00P8\x00\x00"


def test_error_from_and_notice() -> None:
    exc = ProtocolError("invalid message length")
    assert encoder.error_from(exc) == encoder.error_response("FATAL", "08P01", "invalid message length")
    err = PgError("42601", "bad", hint="fix it", position=3)
    assert encoder.error_from(err) == encoder.error_response("ERROR", "42601", "bad", None, "fix it", 3)
    assert encoder.notice_response("NOTICE", "00000", "hi") == (
        b"N\x00\x00\x00\x20SNOTICE\x00VNOTICE\x00C00000\x00Mhi\x00\x00"
    )


def test_error_response_survives_nul_and_surrogates() -> None:
    out = encoder.error_response("ERROR", "XX000", "a\x00b\udcff")
    assert out == b"E\x00\x00\x00\x1fSERROR\x00VERROR\x00CXX000\x00Mab?\x00\x00"


def test_nul_in_other_strings_is_refused() -> None:
    with pytest.raises(PgError) as info:
        encoder.command_complete("SELECT\x001")
    assert info.value.sqlstate == "22021"


def test_parameter_description() -> None:
    assert encoder.parameter_description([23, 25]) == (
        b"t\x00\x00\x00\x0e\x00\x02\x00\x00\x00\x17\x00\x00\x00\x19"
    )
    assert encoder.parameter_description([]) == b"t\x00\x00\x00\x06\x00\x00"


def test_copy_responses() -> None:
    assert encoder.copy_in_response(0, [0, 0]) == b"G\x00\x00\x00\x0b\x00\x00\x02\x00\x00\x00\x00"
    assert encoder.copy_out_response(1, [1]) == b"H\x00\x00\x00\x09\x01\x00\x01\x00\x01"


def test_negotiate_protocol_version() -> None:
    assert encoder.negotiate_protocol_version(0, ["_pq_.x"]) == (
        b"v\x00\x00\x00\x13\x00\x00\x00\x00\x00\x00\x00\x01_pq_.x\x00"
    )


def test_constants_match_functions() -> None:
    assert encoder.READY_IDLE == encoder.ready_for_query(b"I")
    assert encoder.AUTHENTICATION_OK == encoder.authentication_ok()
    assert encoder.SSL_REFUSED == b"N"


def test_work_is_told_from_what_asks_for_nothing() -> None:
    """What a half-closed client left unread is run only when it asks for work."""
    assert asks_for_work(w.query("SELECT 1"))
    assert asks_for_work(w.SYNC + w.parse("", "SELECT 1", ()))
    assert not asks_for_work(w.SYNC + w.SYNC)
    assert not asks_for_work(b"")
    assert not asks_for_work(w.query("SELECT 1")[:-1])  # not whole yet
    assert asks_for_work(b"S\x00\x00\x00\x02")  # a bad length: its error is reported
    assert asks_for_work(b"?\x00\x00\x00\x04")  # an unknown type: the same
    decoder = FrontendDecoder()
    decoder.startup_done()
    decoder.feed(w.SYNC)
    assert not decoder.holds_work()
    decoder.feed(w.query("SELECT 1")[:3])
    decoder.feed(w.query("SELECT 1")[3:])
    assert decoder.holds_work()
