"""Differential fuzz of the express lane: its compiled build against its interpreted one.

Two gateways serve one PostgreSQL database: one with the lane's compiled modules (the
repeats, the Query split, the row and answer walks: FEDGATE_EXPRESS=c,
FEDGATE_ROW_WALK=c), one with the same sources interpreted (=python). Each generated case (tests/support/lane_fuzz.py) is
played on both from the same table contents: a warm-up that arms the lane on a few shapes,
then a hostile stream of statements the lane takes, mixed with errors and malformed
messages, delivered unit by unit, in one write, cut at generated offsets or byte by byte,
ended by Terminate (half-closes are not generated: see tests/support/lane_fuzz.py). Both gateways must send the
same bytes (every message, to the close), leave the same rows on the source, stay alive,
log no traceback and send no internal error (XX000). Hostile answers come from the real
source: wide rows, many columns, NULLs, rows then an error, and a backend terminated by
another connection in the middle of a repeat's answer. `FEDGATE_FUZZ_EXAMPLES` scales the
number of cases (`make fuzz`).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings

from gateway.relay.express.text_split import EXPRESS_BUILD_ENV
from pgwire.protocol.client import ROW_WALK_ENV
from tests.support import rawpg
from tests.support.fuzz import fuzz_examples, time_limit
from tests.support.gateway_proc import (GatewayProcess, new_database, pg_source_config,
                                        start_gateway)
from tests.support.lane_fuzz import DDL, ROWS, Case, Delivery, cases, deliver
from tests.support.postgres import PostgresServer

# A case is two gateway sessions of a few dozen statements, and a reset of the source:
# about two hundred times a decoder case.
CASES = settings(max_examples=fuzz_examples(30, cost=200), deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CASE_SECONDS = 120.0
BUILDS = ("C", "python")

# Arms the lane: each shape is prepared on the link on its first run and arms the lane on
# its second; the third and later are repeats (in C on the C build).
WARM_UP = [rawpg.query(f"SELECT id, bal, note FROM acct WHERE id = {i}") for i in (1, 2, 3)] + [
    rawpg.query(f"SELECT bal FROM acct WHERE id = {i}") for i in (1, 2, 4)] + [
    rawpg.query("UPDATE acct SET bal = bal + 0 WHERE id = 1")] * 3 + [
    b"".join((rawpg.parse("SELECT bal, note FROM acct WHERE id = $1", "", [23]),
              rawpg.bind("", "", [v]), rawpg.describe("P"), rawpg.execute(), rawpg.sync()))
    for v in (b"1", b"2", b"3")]
REPEATS_SHOWN = rawpg.query("SHOW fedgate.express_repeats")
REARM = rawpg.query("SELECT bal FROM acct WHERE id = 4")


@dataclass
class Lane:
    gateway: GatewayProcess
    log_seen: int = 0  # how much of the log the checks read already


@dataclass
class Lanes:
    truth: str
    admin: psycopg.Connection
    builds: dict[str, Lane] = field(default_factory=dict)


@pytest.fixture(scope="module")
def lanes(postgres_server: PostgresServer,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lanes]:
    truth = new_database(postgres_server.dsn, DDL)
    root = tmp_path_factory.mktemp("express-fuzz")
    found = Lanes(truth, psycopg.connect(truth, autocommit=True))
    try:
        for build in BUILDS:
            env = {EXPRESS_BUILD_ENV: build.lower(), ROW_WALK_ENV: build.lower()}
            found.builds[build] = Lane(start_gateway(pg_source_config(truth), root / build,
                                                     env=env))
            log = found.builds[build].gateway.log()
            assert ("the repeats are interpreted" in log) == (build == "python"), log
        yield found
    finally:
        for lane in found.builds.values():
            lane.gateway.stop()
        found.admin.close()


def reset(lanes: Lanes) -> None:
    """The same rows for each play; no session of the gateways is left on the source."""
    settle(lanes)
    lanes.admin.execute("SET lock_timeout = '20s'")
    lanes.admin.execute("TRUNCATE acct")
    with lanes.admin.cursor() as cur:
        cur.executemany("INSERT INTO acct VALUES (%s, %s, %s)", ROWS)


def settle(lanes: Lanes, seconds: float = 20.0) -> None:
    """Wait until no backend of the gateways runs a statement or holds a transaction: the
    end of a client's session reaches the source after the client saw its socket close."""
    deadline = time.monotonic() + seconds
    while True:
        busy = lanes.admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'").fetchone()
        if busy == (0,):
            return
        assert time.monotonic() < deadline, "the gateways' backends stay busy"
        time.sleep(0.02)


def final_rows(lanes: Lanes) -> list[tuple]:
    settle(lanes)
    return lanes.admin.execute("SELECT * FROM acct ORDER BY id").fetchall()


def frames(data: bytes) -> list[rawpg.Message]:
    """Cut what the gateway sent into messages; every frame must be whole."""
    out = []
    p = 0
    while p < len(data):
        assert p + 5 <= len(data), f"truncated frame at {p}: {data[p:p + 40]!r}"
        length = int.from_bytes(data[p + 1:p + 5], "big", signed=True)
        assert 4 <= length and p + 1 + length <= len(data), f"bad frame: {data[p:p + 40]!r}"
        out.append(rawpg.Message(chr(data[p]), data[p + 5:p + 1 + length]))
        p += 1 + length
    return out


def exchange(conn: rawpg.RawPG, unit: bytes) -> list[rawpg.Message]:
    conn.send(unit)
    return conn.read_until_ready()


def shown_repeats(conn: rawpg.RawPG) -> int:
    rows = [m for m in exchange(conn, REPEATS_SHOWN) if m.type == "D"]
    return int(rawpg.parse_data_row(rows[0].payload)[0])


def play(lanes: Lanes, build: str, case: Case) -> tuple[list[tuple[str, bytes]], list[tuple]]:
    """Every message the gateway of `build` sent in `case` after the start-up, and the
    source's rows afterwards."""
    lane = lanes.builds[build]
    reset(lanes)
    with time_limit(CASE_SECONDS, f"the case on the {build} build"):
        conn = rawpg.RawPG.connect(lane.gateway.host, lane.gateway.port, timeout=30.0)
        try:
            answers = [m for unit in WARM_UP for m in exchange(conn, unit)]
            warmed = shown_repeats(conn)
            assert warmed >= 3, (build, warmed)
            answers += exchange(conn, REARM)  # SHOW left the lane unarmed
            answers += deliver(conn, case)
            answers += frames(bytes(conn.buf) + conn.read_raw_until_closed())
        finally:
            conn.close()
    check_gateway(lane, answers)
    return [(m.type, m.payload) for m in answers], final_rows(lanes)


def check_gateway(lane: Lane, answers: list[rawpg.Message]) -> None:
    gateway = lane.gateway
    assert gateway.proc.poll() is None, gateway.log()[-3000:]
    log = gateway.log()
    fresh, lane.log_seen = log[lane.log_seen:], len(log)
    assert "Traceback" not in fresh, fresh[-5000:]
    internal = [m.fields for m in answers if m.type == "E" and m.fields.get("C") == "XX000"]
    assert not internal, internal


def first_difference(a: list, b: list) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"message {i}: C {x!r:.300} / python {y!r:.300}"
    return f"lengths {len(a)} / {len(b)}; the longer goes on with {(a + b)[min(len(a), len(b))]!r:.300}"


@CASES
@given(cases())
def test_both_builds_answer_alike(lanes: Lanes, case: Case) -> None:
    compiled, compiled_rows = play(lanes, "C", case)
    interpreted, interpreted_rows = play(lanes, "python", case)
    assert compiled == interpreted, first_difference(compiled, interpreted)
    assert compiled_rows == interpreted_rows


REPEATED = [rawpg.query(f"SELECT id, bal, note FROM acct WHERE id = {i}") for i in (2, 3, 1)] + [
    rawpg.query(f"UPDATE acct SET bal = bal + {i} WHERE id = 1") for i in (1, 2)] + [
    b"".join((rawpg.parse("SELECT bal, note FROM acct WHERE id = $1", "", [23]),
              rawpg.bind("", "", [v]), rawpg.describe("P"), rawpg.execute(), rawpg.sync()))
    for v in (b"4", b"2")] + [rawpg.query("BEGIN"), rawpg.query("SELECT bal FROM acct WHERE id = 2"),
                              rawpg.query("COMMIT")]


ENDS = tuple(sum(map(len, REPEATED[:i + 1])) for i in range(len(REPEATED)))
# (delivery, repeats at the end of the stream at least, on either build): the warm-up's 3 and REARM's
# 1, then one for each statement that reached the armed lane as a chunk of its own. What
# arrives with or behind another statement is held and run by the lane's Python.
DELIVERIES = [
    (Delivery("lockstep"), 4 + len(REPEATED) - 1),
    (Delivery("pipelined"), 4),
    (Delivery("split", ENDS, pauses=(0.005,)), 4 + len(REPEATED) - 2),
    (Delivery("split", ENDS, pauses=(0.0, 0.0005)), 4),
    (Delivery("split", tuple(range(7, ENDS[-1], 13))), 4),
    (Delivery("bytewise"), 4),
]


@pytest.mark.parametrize("delivery,least", DELIVERIES,
                         ids=["lockstep", "pipelined", "split-armed", "split-held",
                              "split-anywhere", "bytewise"])
def test_the_deliveries_reach_the_compiled_repeats(lanes: Lanes, delivery: Delivery,
                                                   least: int) -> None:
    """The fuzz's deliveries are taken by the repeats, not only by the lane's Python road:
    `SHOW fedgate.express_repeats` at the end of a stream of repeats counts what reached
    them, on both builds; both answer alike, ended by Terminate."""
    units = (*REPEATED, REPEATS_SHOWN)
    case = Case(units, b"", Delivery(delivery.mode, delivery.cuts, None, delivery.pauses))
    answers = {build: play(lanes, build, case) for build in BUILDS}
    counts = {}
    for build, (messages, _) in answers.items():
        rows = [rawpg.parse_data_row(p) for t, p in messages if t == "D"]
        counts[build] = int(rows[-1][0])
    assert counts["C"] >= least, counts
    assert counts["python"] >= least, counts
    # the last DataRow is the SHOW's count, which differs
    same = [messages[:-3] + messages[-2:] for messages, _ in answers.values()]
    assert all(t == "D" for t, _ in (messages[-3] for messages, _ in answers.values()))
    assert same[0] == same[1], first_difference(*same)
    assert answers["C"][1] == answers["python"][1]


# About 150 bytes a row, 3000 rows for each `twice` row: a client that reads nothing
# makes the source's backend wait to write (ClientWrite) part way through.
WIDE = "SELECT big.g, big.h, big.h, big.h, big.h FROM big, big AS twice WHERE twice.g <= {}"


def terminated_mid_answer(lanes: Lanes, build: str) -> tuple[list, list[bytes]]:
    """A repeat whose source backend is terminated (pg_terminate_backend, from another
    connection) while the client holds back part of its rows; then the session goes on.
    The messages, with the cut answer's rows apart (how many came is a matter of timing)."""
    lane = lanes.builds[build]
    reset(lanes)
    conn = rawpg.RawPG.connect(lane.gateway.host, lane.gateway.port, timeout=30.0)
    with conn:
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 131072)
        answers = [m for unit in WARM_UP for m in exchange(conn, unit)]
        for rows in (1, 1, 1):  # prepared, armed, then a repeat
            answers += exchange(conn, rawpg.query(WIDE.format(rows)))
        before = shown_repeats(conn)
        answers += exchange(conn, REARM)
        conn.send(rawpg.query(WIDE.format(30)))  # 90,000 rows, about 14 MB
        deadline = time.monotonic() + 20
        while lanes.admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = "
                "'ClientWrite' AND query LIKE 'SELECT big.g, big.h%'").fetchall() == []:
            assert time.monotonic() < deadline, "the source never waited for the gateway"
            time.sleep(0.02)
        cut = conn.read_until_ready()
        rows = [m.payload for m in cut if m.type == "D"]
        answers += [m for m in cut if m.type != "D"]
        answers += exchange(conn, rawpg.query("SELECT bal FROM acct WHERE id = 2"))
        for rows_wanted in (2, 1, 1, 2):  # a new link: the shape prepared again, repeats
            answers += exchange(conn, rawpg.query(WIDE.format(rows_wanted)))
        after = shown_repeats(conn)
    check_gateway(lane, answers)
    assert before >= 5 and after > before, (before, after)
    errors = [m.fields for m in cut if m.type == "E"]
    assert [e["C"] for e in errors] == ["08006"], errors
    assert 0 < len(rows) < 90000
    return [(m.type, m.payload) for m in answers], rows


def test_a_source_backend_terminated_mid_answer(lanes: Lanes) -> None:
    """Both builds pass on an in-order prefix of the rows, then the same class 08 error,
    and carry on alike on a new link."""
    compiled, compiled_rows = terminated_mid_answer(lanes, "C")
    interpreted, interpreted_rows = terminated_mid_answer(lanes, "python")
    assert compiled == interpreted, first_difference(compiled, interpreted)
    with psycopg.connect(lanes.truth) as conn:
        whole = conn.execute(WIDE.format(30)).fetchall()
    for rows in (compiled_rows, interpreted_rows):
        got = [tuple(v.decode() for v in rawpg.parse_data_row(p)) for p in rows]
        assert got == [(str(g), h, h, h, h) for g, h, *_ in whole[:len(got)]]


# Found by the fuzz (seed 91281142260461680734479105811823706199): a large answer, then a
# malformed Bind and a Terminate sent byte by byte. The gateway closed its socket while the
# client was still writing the Terminate; the kernel reset the connection, and the client
# lost the end of the answer (and the FATAL) it had not read yet.
MALFORMED_AFTER_A_LARGE_ANSWER = Case(
    units=(rawpg.query("SELECT g, h, h, h, h FROM big WHERE g <= 1359 ORDER BY g"),),
    garbage=b"B\x00\x00\x00\x10\x00\x00\x00\x00\x00\x01\x00\x00\x00\x011\x00",
    delivery=Delivery("bytewise"))


@pytest.mark.parametrize("attempt", [1, 2])
def test_a_malformed_message_after_a_large_answer_loses_nothing(lanes: Lanes, attempt: int) -> None:
    """Every row, ReadyForQuery, then the FATAL 08P01, whole, on both builds."""
    compiled, _ = play(lanes, "C", MALFORMED_AFTER_A_LARGE_ANSWER)
    interpreted, _ = play(lanes, "python", MALFORMED_AFTER_A_LARGE_ANSWER)
    assert compiled == interpreted, first_difference(compiled, interpreted)
    tail = compiled[-2:]
    assert tail[0] == ("Z", b"I") and tail[1][0] == "E" and b"C08P01" in tail[1][1], tail
    assert sum(1 for kind, _ in compiled if kind == "D") >= 1359
