"""Protocol fuzz against the real gateway over a socket (hypothesis; a bounded number of cases).

The decoder fuzz (tests/unit/pgwire/test_decoder_fuzz.py) shows the codec survives any
bytes; this shows the server around it does: garbage sent before the startup packet, or
after a good startup, makes the gateway answer with well-formed messages (an
ErrorResponse, never an internal error) and close that connection once the client has
sent its last byte; it never hangs on it, and a fresh connection still works. The
garbage is arbitrary bytes or a mutated stream of valid messages (the decoder fuzz's
strategies). `FEDGATE_FUZZ_EXAMPLES` scales the number of cases (`make fuzz`).
"""

from __future__ import annotations

import socket
import sqlite3
import struct
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgwire.protocol.decoder import GSSENC_REQUEST_CODE, SSL_REQUEST_CODE
from tests.support import rawpg
from tests.support.fuzz import fuzz_examples
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.unit.pgwire.test_decoder_fuzz import encode, mutated, typed_messages, valid_streams

# A case is a connection or two: about fifty times a decoder case.
CASES = settings(max_examples=fuzz_examples(200, cost=50), deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# The gateway must have closed the connection this long after the client's last byte.
CLOSE_SECONDS = 15.0
SSL_CODES = (struct.pack("!i", SSL_REQUEST_CODE), struct.pack("!i", GSSENC_REQUEST_CODE))


@pytest.fixture(scope="module")
def fuzz_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("protocol_fuzz")
    con = sqlite3.connect(root / "t.db")
    con.execute("CREATE TABLE t (id INTEGER, s TEXT)")
    con.execute("INSERT INTO t VALUES (1, 'one')")
    con.commit()
    con.close()
    gateway = start_gateway(f'[sources.lite]\nkind = "sqlite"\npath = "{root / "t.db"}"\n',
                            root / "gateway")
    yield gateway
    gateway.stop()


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes; fails if it keeps the socket open."""
    deadline = time.monotonic() + CLOSE_SECONDS
    received = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, (f"connection still open {CLOSE_SECONDS}s after EOF: "
                               f"{bytes(received[:200])!r}")
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            return bytes(received)
        except TimeoutError:
            continue
        if not chunk:
            return bytes(received)
        received += chunk


def backend_messages(data: bytes) -> list[rawpg.Message]:
    """Split what the server sent into messages; every frame must be whole."""
    out = []
    p = 0
    while p < len(data):
        assert p + 5 <= len(data), f"truncated frame at {p}: {data[p:]!r}"
        (length,) = struct.unpack_from("!i", data, p + 1)
        assert 4 <= length and p + 1 + length <= len(data), f"bad frame at {p}: {data[p:p + 40]!r}"
        out.append(rawpg.Message(chr(data[p]), data[p + 5:p + 1 + length]))
        p += 1 + length
    return out


def send_garbage(gateway: GatewayProcess, garbage: bytes, after_startup: bool) -> bytes:
    conn = (rawpg.RawPG.connect(gateway.host, gateway.port, timeout=CLOSE_SECONDS)
            if after_startup else rawpg.RawPG.open(gateway.host, gateway.port, CLOSE_SECONDS))
    try:
        try:
            conn.sock.sendall(garbage)
            conn.sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server already closed: it refused an early byte
        return bytes(conn.buf) + read_until_closed(conn.sock)
    finally:
        conn.close()


def check_answer(answer: bytes, garbage: bytes, after_startup: bool) -> None:
    if not after_startup and any(code in garbage for code in SSL_CODES):
        return  # SSLRequest/GSSENCRequest answers are single unframed bytes
    for message in backend_messages(answer):
        if message.type == "E":
            fields = message.fields
            assert fields.get("C") and fields.get("M"), fields
            assert fields["C"] != "XX000", fields


def still_serves(gateway: GatewayProcess) -> None:
    assert gateway.proc.poll() is None, gateway.log()[-3000:]
    with rawpg.RawPG.connect(gateway.host, gateway.port, timeout=CLOSE_SECONDS) as conn:
        assert rawpg.data_rows(conn.simple("SELECT id, s FROM lite.t")) == [["1", "one"]]


garbage_streams = st.one_of(
    st.binary(max_size=300),
    valid_streams().map(lambda ms: b"".join(encode(m) for m in ms)).flatmap(mutated),
)
typed_garbage = st.one_of(
    st.binary(max_size=300),
    st.lists(typed_messages, max_size=10).map(lambda ms: b"".join(encode(m) for m in ms))
    .flatmap(mutated),
)


@CASES
@given(garbage_streams)
def test_garbage_before_startup(fuzz_gateway: GatewayProcess, garbage: bytes) -> None:
    check_answer(send_garbage(fuzz_gateway, garbage, False), garbage, False)
    still_serves(fuzz_gateway)


@CASES
@given(typed_garbage)
def test_garbage_after_startup(fuzz_gateway: GatewayProcess, garbage: bytes) -> None:
    check_answer(send_garbage(fuzz_gateway, garbage, True), garbage, True)
    still_serves(fuzz_gateway)


def test_no_traceback_in_the_gateway_log(fuzz_gateway: GatewayProcess) -> None:
    """Runs after the cases above (file order): nothing they sent made the server log an
    unhandled exception."""
    assert "Traceback" not in fuzz_gateway.log(), fuzz_gateway.log()[-5000:]
