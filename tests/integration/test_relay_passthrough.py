"""The relay passes a source's answer through: a client sees the bytes PostgreSQL sends.

A raw client (tests/support/rawpg.py) sends the same simple Queries directly to
PostgreSQL and through the gateway, and the byte streams after startup are compared
message by message: a result of several MB, several results in one Query, an error in
the middle of a stream of rows, a COPY TO STDOUT, and NOTICEs between rows. Two
messages differ on purpose (docs/design.md §7 and §8): RowDescription names no table of
the source (its table OID and column number are zero), and an error carries its main
fields only; for those two the comparison leaves out exactly that, every other message
must be the same bytes.

Both with the row walk and answer walk compiled and with their source interpreted
(FEDGATE_ROW_WALK=python).

Then a client that reads a 1M-row result slowly: the gateway's resident memory stays
bounded (the source waits, instead of the rows piling up in the gateway), and the whole
result still arrives.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pgwire.protocol.client import ROW_WALK_ENV
from tests.support import rawpg
from tests.support.gateway_proc import PgSourceGateway, gateway_on_new_database
from tests.support.postgres import PostgresServer

BIG_ROWS = 200_000  # about 12 MB of DataRows
SLOW_ROWS = 1_000_000
SLOW_READ_S = 4.0
RSS_GROWTH_MB = 40  # the result is about 130 MB

DDL = f"""
CREATE TABLE big AS
    SELECT g AS id, 'row number ' || g AS note, g * 0.25 AS amount, (g % 3 = 0) AS flag
    FROM generate_series(1, {BIG_ROWS}) g;
CREATE TABLE slow_rows AS
    SELECT g AS id, repeat('x', 100) || g AS pad FROM generate_series(1, {SLOW_ROWS}) g;
CREATE FUNCTION noisy(i int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'row % passes', i;
    RETURN i;
END $$;
"""

QUERIES = {
    "large result": "SELECT id, note, amount, flag FROM big",
    "several results": ("SELECT id, note FROM big WHERE id <= 3; SELECT count(*) FROM big; "
                        "SELECT note, flag FROM big WHERE id = 7"),
    "error mid-stream": "SELECT id, 100 / (5000 - id) FROM big",
    "copy to stdout": "COPY (SELECT id, note FROM big WHERE id <= 20000) TO STDOUT",
    "notices": "SELECT noisy(id), note FROM big WHERE id <= 5",
}


# Each test runs against a gateway with the row walk compiled and one with its source
# interpreted (pgwire/protocol/answer_walks.py, ROW_WALK): both must pass the same bytes.
@pytest.fixture(scope="module", params=["C", "python"])
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory,
          request: pytest.FixtureRequest) -> Iterator[PgSourceGateway]:
    env = {ROW_WALK_ENV: request.param}
    with gateway_on_new_database(postgres_server.dsn, tmp_path_factory.mktemp("passthrough"),
                                 DDL, env=env) as found:
        log = found.gateway.log_path.read_text()
        fell_back = "the row walk is interpreted" in log
        assert fell_back == (request.param == "python"), log
        yield found


def direct(setup: PgSourceGateway) -> rawpg.RawPG:
    url = urlsplit(setup.truth)
    return rawpg.RawPG.connect(url.hostname, url.port, user=url.username or "postgres",
                               database=url.path.lstrip("/"), timeout=120)


def through_gateway(setup: PgSourceGateway) -> rawpg.RawPG:
    return rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port, timeout=120)


def wire_bytes(message: rawpg.Message) -> bytes:
    return message.type.encode() + struct.pack("!i", len(message.payload) + 4) + message.payload


def comparable(message: rawpg.Message) -> tuple[str, object]:
    """The message as the comparison sees it: its bytes, but for the two documented
    differences."""
    if message.type == "T":
        return "T", [{k: v for k, v in column.items() if k not in ("table_oid", "attnum")}
                     for column in rawpg.parse_row_description(message.payload)]
    if message.type == "E":
        return "E", {k: message.fields.get(k) for k in "SVCMDHP"}
    return message.type, wire_bytes(message)


@pytest.mark.parametrize("case", list(QUERIES))
def test_client_sees_the_sources_bytes(setup: PgSourceGateway, case: str) -> None:
    answers = {}
    for name, connect in (("direct", direct), ("gateway", through_gateway)):
        with connect(setup) as conn:
            conn.simple("SELECT id FROM big WHERE id = 1")  # the gateway's link is open
            conn.send(rawpg.query(QUERIES[case]))
            answers[name] = [comparable(m) for m in conn.read_until_ready(timeout=120)]
    expected, got = answers["direct"], answers["gateway"]
    assert [kind for kind, _ in got] == [kind for kind, _ in expected]
    mismatched = [i for i, (a, b) in enumerate(zip(expected, got)) if a != b]
    assert not mismatched, (f"{len(mismatched)} messages differ, the first at {mismatched[0]}: "
                            f"{expected[mismatched[0]]!r} != {got[mismatched[0]]!r}")
    if case == "large result":
        assert sum(len(body) for kind, body in got if kind == "D") > 10_000_000


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def test_slow_client_bounds_gateway_memory(setup: PgSourceGateway) -> None:
    pid = setup.gateway.proc.pid
    with through_gateway(setup) as conn:
        conn.simple("SELECT id FROM slow_rows WHERE id = 1")
        conn.sock.setsockopt(rawpg.socket.SOL_SOCKET, rawpg.socket.SO_RCVBUF, 64 * 1024)
        before = resident_mb(pid)
        conn.send(rawpg.query("SELECT id, pad FROM slow_rows"))
        peak = before
        stream = MessageCounter()
        deadline = time.monotonic() + SLOW_READ_S
        while time.monotonic() < deadline:  # a trickle: 64 KB every 20 ms
            stream.feed(conn.sock.recv(64 * 1024))
            peak = max(peak, resident_mb(pid))
            time.sleep(0.02)
        assert stream.received < 40_000_000, "the client was meant to read slower than the source sends"
        assert peak - before < RSS_GROWTH_MB, f"the gateway grew from {before:.0f} to {peak:.0f} MB"
        while not stream.ready:  # the rest, at full speed: it all arrives
            chunk = conn.sock.recv(1024 * 1024)
            assert chunk, "the gateway closed the connection"
            stream.feed(chunk)
        assert stream.counts == {"T": 1, "D": SLOW_ROWS, "C": 1, "Z": 1}, stream.counts


class MessageCounter:
    """Counts the messages of a byte stream by type, keeping only a partial message."""

    def __init__(self) -> None:
        self.pending = bytearray()
        self.counts: dict[str, int] = {}
        self.received = 0
        self.ready = False

    def feed(self, chunk: bytes) -> None:
        self.received += len(chunk)
        self.pending += chunk
        pos, size = 0, len(self.pending)
        while size - pos >= 5:
            end = pos + 1 + struct.unpack_from("!I", self.pending, pos + 1)[0]
            if end > size:
                break
            kind = chr(self.pending[pos])
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.ready = kind == "Z"
            pos = end
        del self.pending[:pos]
