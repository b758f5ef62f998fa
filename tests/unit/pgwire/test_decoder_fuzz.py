"""Fuzz of the frontend decoder and the express lane's peek readers (hypothesis).

What a client sends is untrusted, so `FrontendDecoder` must turn any byte stream into
messages or its own ProtocolError/PgError (08P01, 0A000 for an unsupported protocol
version, 54000 for a message over max_message_bytes), never another exception and never a loop that stops consuming. The streams are
arbitrary bytes, valid message streams (startup packets, SSLRequest, GSSENCRequest,
CancelRequest, Query, Parse/Bind/Describe/Execute/Close/Sync/Flush, CopyData/CopyDone/
CopyFail, FunctionCall, PasswordMessage) and mutations of those (flipped, inserted and
deleted bytes, truncation, length words overwritten with odd values), fed in chunks cut
at arbitrary boundaries. Besides "no crash, no hang" three properties hold:
- a valid stream decodes to the messages it was built from;
- the outcome (messages, then the error if any) does not depend on how the bytes were
  chunked;
- a peek reader returns fields only for a message the decoder accepts, with the same
  values (the lane relays bytes that the decoder never saw, so peek must not be laxer).

`FEDGATE_FUZZ_EXAMPLES` raises the number of cases (`make fuzz`).
"""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgwire.errors import (FEATURE_NOT_SUPPORTED, PROGRAM_LIMIT_EXCEEDED, PROTOCOL_VIOLATION,
                           PgError)
from pgwire.protocol import peek
from pgwire.protocol.decoder import (
    AUTH_MESSAGE_LIMIT,
    CANCEL_REQUEST_CODE,
    GSSENC_REQUEST_CODE,
    SSL_REQUEST_CODE,
    FrontendDecoder,
)
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
from tests.support.fuzz import fuzz_examples, time_limit

# A case decodes at most a few hundred kilobytes: anything slower than this is a hang.
CASE_SECONDS = 5.0
FUZZ = settings(max_examples=fuzz_examples(300), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ----------------------------------------------------------------------------- builders
# Written from the protocol documentation ("Message Formats"), not with the codec.


def typed(tag: bytes, body: bytes = b"") -> bytes:
    return tag + struct.pack("!i", len(body) + 4) + body


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def untyped(code: int, body: bytes = b"") -> bytes:
    return struct.pack("!ii", len(body) + 8, code) + body


def values(items: tuple[bytes | None, ...]) -> bytes:
    return b"".join(struct.pack("!i", -1) if v is None else struct.pack("!i", len(v)) + v
                    for v in items)


def int16s(items: tuple[int, ...]) -> bytes:
    return struct.pack("!H", len(items)) + b"".join(struct.pack("!h", i) for i in items)


def encode(message: FrontendMessage) -> bytes:
    match message:
        case StartupMessage(protocol, params):
            body = b"".join(cstr(k) + cstr(v) for k, v in params.items()) + b"\0"
            return untyped(protocol, body)
        case SSLRequest():
            return untyped(SSL_REQUEST_CODE)
        case GSSENCRequest():
            return untyped(GSSENC_REQUEST_CODE)
        case CancelRequest(pid, key):
            return untyped(CANCEL_REQUEST_CODE, struct.pack("!iI", pid, key))
        case AuthResponse(data):
            return typed(b"p", data)
        case Query(sql):
            return typed(b"Q", cstr(sql))
        case Parse(name, query, types):
            return typed(b"P", cstr(name) + cstr(query) + struct.pack("!H", len(types))
                         + b"".join(struct.pack("!I", t) for t in types))
        case Bind(portal, statement, formats, params, results):
            return typed(b"B", cstr(portal) + cstr(statement) + int16s(formats)
                         + struct.pack("!H", len(params)) + values(params) + int16s(results))
        case Describe(kind, name):
            return typed(b"D", kind.encode() + cstr(name))
        case Close(kind, name):
            return typed(b"C", kind.encode() + cstr(name))
        case Execute(portal, max_rows):
            return typed(b"E", cstr(portal) + struct.pack("!i", max_rows))
        case Sync():
            return typed(b"S")
        case Flush():
            return typed(b"H")
        case Terminate():
            return typed(b"X")
        case CopyData(data):
            return typed(b"d", data)
        case CopyDone():
            return typed(b"c")
        case CopyFail(reason):
            return typed(b"f", cstr(reason))
        case FunctionCall(oid, formats, args, result_format):
            return typed(b"F", struct.pack("!I", oid) + int16s(formats)
                         + struct.pack("!H", len(args)) + values(args)
                         + struct.pack("!h", result_format))
    raise AssertionError(f"no encoding for {message!r}")


# ----------------------------------------------------------------------------- strategies

names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                max_size=12)
sql_texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                    max_size=60)
small_blobs = st.binary(max_size=40)
int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
uint32 = st.integers(0, 2**32 - 1)
param_values = st.lists(st.one_of(st.none(), small_blobs), max_size=6).map(tuple)


@st.composite
def binds(draw: st.DrawFn) -> Bind:
    params = draw(param_values)
    # Zero, one (for all) or one format per parameter: the decoder refuses other counts.
    formats = draw(st.sampled_from([(), (draw(int16),), tuple(draw(int16) for _ in params)]))
    return Bind(draw(names), draw(names), formats, params,
                tuple(draw(st.lists(int16, max_size=4))))


@st.composite
def function_calls(draw: st.DrawFn) -> FunctionCall:
    args = draw(param_values)
    formats = draw(st.sampled_from([(), (draw(int16),), tuple(draw(int16) for _ in args)]))
    return FunctionCall(draw(uint32), formats, args, draw(int16))


typed_messages = st.one_of(
    st.builds(Query, sql_texts),
    st.builds(Parse, names, sql_texts, st.lists(uint32, max_size=4).map(tuple)),
    binds(),
    st.builds(Describe, st.sampled_from("SP"), names),
    st.builds(Close, st.sampled_from("SP"), names),
    st.builds(Execute, names, int32),
    st.just(Sync()), st.just(Flush()), st.just(Terminate()),
    st.builds(CopyData, st.binary(max_size=200)),
    st.just(CopyDone()),
    st.builds(CopyFail, sql_texts),
    function_calls(),
    st.builds(AuthResponse, small_blobs),
)

startup_params = st.dictionaries(names.filter(bool), names, max_size=5)
startup_messages = st.builds(StartupMessage, st.sampled_from([196608, 196609, 196608 + 7]),
                             startup_params)
# Packets a client may send before its StartupMessage (each request at most once, as the
# decoder refuses a repeated one; a CancelRequest ends the stream).
pre_startup = st.lists(st.sampled_from([SSLRequest(), GSSENCRequest()]), max_size=2,
                       unique=True)
cancel_requests = st.builds(CancelRequest, int32, uint32)


@st.composite
def valid_streams(draw: st.DrawFn) -> list[FrontendMessage]:
    """What a well-behaved client could send on one connection."""
    if draw(st.integers(0, 9)) == 0:
        return [*draw(pre_startup), draw(cancel_requests)]
    return [*draw(pre_startup), draw(startup_messages),
            *draw(st.lists(typed_messages, max_size=12))]


# Values that make length words interesting: too small, exactly the limits, huge, negative.
ODD_LENGTHS = [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 255, 10000, 10003, 10004, 10005,
               AUTH_MESSAGE_LIMIT, AUTH_MESSAGE_LIMIT + 5, 2**20, 2**28, 2**31 - 1, -1, -4,
               -(2**31), 80877103, 80877102]


@st.composite
def mutated(draw: st.DrawFn, stream: bytes) -> bytes:
    """`stream` with a few random edits: the kind a buggy or hostile client produces."""
    data = bytearray(stream)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "length", "truncate",
                                     "duplicate", "byte"]))
        if kind == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 8))]
        elif kind == "length":
            value = draw(st.sampled_from(ODD_LENGTHS) | int32)
            data[at:at + 4] = struct.pack("!i", value)
        elif kind == "truncate":
            del data[at:]
        elif kind == "duplicate":
            data[at:at] = data[at:at + draw(st.integers(1, 32))]
    return bytes(data)


@st.composite
def chunkings(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """`data` cut at arbitrary points (sometimes one byte at a time)."""
    if data and draw(st.integers(0, 9)) == 0:
        return [data[i:i + 1] for i in range(len(data))]
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


# ----------------------------------------------------------------------------- driving

# 54000: a message over max_message_bytes, a limit of ours (README, Limits).
ALLOWED_SQLSTATES = {PROTOCOL_VIOLATION, FEATURE_NOT_SUPPORTED, PROGRAM_LIMIT_EXCEEDED}


def decode(chunks: list[bytes], max_message_bytes: int = 1 << 20
           ) -> tuple[list[FrontendMessage], tuple[str, str] | None]:
    """Feed `chunks` one by one, draining after each as the server does; accept every
    StartupMessage. Returns the messages and the codec's error, if it raised one; any
    other exception escapes (and fails the test)."""
    decoder = FrontendDecoder(max_message_bytes)
    out: list[FrontendMessage] = []
    total = sum(len(c) for c in chunks)
    with time_limit(CASE_SECONDS, "decoding"):
        for chunk in chunks:
            decoder.feed(chunk)
            # Every message consumes at least 4 bytes: more turns than that is a loop.
            for _ in range(total + 2):
                try:
                    message = decoder.next_message()
                except PgError as exc:
                    assert exc.sqlstate in ALLOWED_SQLSTATES, (exc.sqlstate, str(exc))
                    assert exc.severity == "FATAL", exc.severity
                    return out, (exc.sqlstate, str(exc))
                if message is None:
                    break
                out.append(message)
                if isinstance(message, StartupMessage):
                    decoder.startup_done()
            else:
                raise AssertionError(f"decoder returned messages without consuming: {out[-5:]}")
    return out, None


# ----------------------------------------------------------------------------- properties


@FUZZ
@given(st.data())
def test_valid_streams_decode_to_what_was_sent(data: st.DataObject) -> None:
    messages = data.draw(valid_streams())
    stream = b"".join(encode(m) for m in messages)
    decoded, error = decode(data.draw(chunkings(stream)))
    assert error is None, error
    assert decoded == messages


@FUZZ
@given(st.data())
def test_mutated_streams_fail_only_with_protocol_errors(data: st.DataObject) -> None:
    stream = b"".join(encode(m) for m in data.draw(valid_streams()))
    garbled = data.draw(mutated(stream))
    whole = decode([garbled])
    chunked = decode(data.draw(chunkings(garbled)))
    assert chunked == whole


@FUZZ
@given(st.binary(max_size=300), st.data())
def test_arbitrary_bytes_in_startup_phase(garbage: bytes, data: st.DataObject) -> None:
    assert decode(data.draw(chunkings(garbage))) == decode([garbage])


@FUZZ
@given(st.binary(max_size=300), st.data())
def test_arbitrary_bytes_after_startup(garbage: bytes, data: st.DataObject) -> None:
    hello = encode(StartupMessage(196608, {"user": "u"}))
    whole = decode([hello + garbage])
    assert whole[0][:1] == [StartupMessage(196608, {"user": "u"})]
    assert decode(data.draw(chunkings(hello + garbage))) == whole


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(b"QPBDECSHXdcfFp"), st.sampled_from(ODD_LENGTHS),
                          st.binary(max_size=16)), min_size=1, max_size=6),
       st.sampled_from([64, 10000, 1 << 20]), st.data())
def test_odd_length_words(frames: list[tuple[int, int, bytes]], limit: int,
                          data: st.DataObject) -> None:
    """Typed messages whose length word says anything at all, under a tight or loose
    max_message_bytes: refused before the body is awaited when out of bounds."""
    hello = encode(StartupMessage(196608, {"user": "u"}))
    stream = hello + b"".join(bytes([tag]) + struct.pack("!i", length) + body
                              for tag, length, body in frames)
    whole = decode([stream], limit)
    assert decode(data.draw(chunkings(stream)), limit) == whole


@FUZZ
@given(st.lists(st.sampled_from(ODD_LENGTHS) | int32, min_size=1, max_size=3),
       st.sampled_from([SSL_REQUEST_CODE, GSSENC_REQUEST_CODE, CANCEL_REQUEST_CODE, 196608,
                        196609, 0x00020000, 0x12345678]),
       st.binary(max_size=40), st.data())
def test_odd_startup_lengths(lengths: list[int], code: int, body: bytes,
                             data: st.DataObject) -> None:
    stream = b"".join(struct.pack("!ii", length, code) + body for length in lengths)
    assert decode(data.draw(chunkings(stream))) == decode([stream])


# ----------------------------------------------------------------------------- peek readers

PEEKS = {ord("B"): peek.bind, ord("E"): peek.execute, ord("D"): peek.describe}


def typed_decoder_for(frame: bytes) -> tuple[FrontendMessage | None, str | None]:
    decoder = FrontendDecoder(1 << 20)
    decoder.startup_done()
    decoder.feed(frame)
    try:
        return decoder.next_message(), None
    except PgError as exc:
        return None, str(exc)


def check_peek_agrees(frame: bytes, data: bytes, start: int) -> None:
    """Run the peek reader for `frame` (placed at `start` in `data`) and compare it with
    the decoder's reading of the same frame."""
    end = start + len(frame)
    reader = PEEKS[frame[0]]
    with time_limit(CASE_SECONDS, "peek"):
        view = reader(data, start, end)
    if view is None:
        return
    decoded, error = typed_decoder_for(frame)
    assert error is None, f"peek accepted what the decoder refuses ({error}): {view!r}"
    if isinstance(view, peek.BindView):
        assert isinstance(decoded, Bind), decoded
        assert (view.portal, view.statement, view.param_count, view.result_formats) == (
            decoded.portal, decoded.statement, len(decoded.params), decoded.result_formats)
    elif frame[0] == ord("E"):
        assert decoded == Execute(*view)
    else:
        assert decoded == Describe(*view)


@st.composite
def peekable_frames(draw: st.DrawFn) -> bytes:
    """A Bind, Execute or Describe, valid or mutated, with its length word made right
    (the lane frames messages itself before peeking)."""
    message = draw(st.one_of(binds(), st.builds(Execute, names, int32),
                             st.builds(Describe, st.sampled_from("SP"), names)))
    frame = encode(message)
    if draw(st.booleans()):
        body = draw(mutated(frame[5:]))
        frame = frame[:1] + struct.pack("!i", len(body) + 4) + body
    return frame


@FUZZ
@given(peekable_frames(), st.binary(max_size=8), st.binary(max_size=8))
def test_peek_readers_agree_with_the_decoder(frame: bytes, before: bytes, after: bytes) -> None:
    # Other messages around the frame in the same buffer, as in a pipelined run.
    check_peek_agrees(frame, before + frame + after, len(before))


@FUZZ
@given(st.sampled_from(sorted(PEEKS)), st.binary(max_size=60), st.binary(max_size=8))
def test_peek_readers_on_arbitrary_bodies(tag: int, body: bytes, after: bytes) -> None:
    frame = bytes([tag]) + struct.pack("!i", len(body) + 4) + body
    check_peek_agrees(frame, frame + after, 0)
