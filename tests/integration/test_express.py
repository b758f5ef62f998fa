"""The express lane (gateway/relay/express/) answers exactly as the session's task does.

Relayed statements of one PostgreSQL source are run from the sockets' callbacks when the
session is idle; everything else takes the task's road. These tests send the same
protocol messages on two connections to one gateway, one with `fedgate.express = on`
(the default) and one with it off, against the same table contents, and compare every
backend message byte for byte: reads, writes with RETURNING, source errors, transaction
blocks (BEGIN, COMMIT, failed blocks and ROLLBACK), the extended protocol with and without
a row limit, binary results, and pipelined messages. `SHOW fedgate.express_statements`
proves the lane took the statements on one connection and none on the other.

Then what only the lane does by itself: a CancelRequest stops the statement on the
source (pg_stat_activity shows the backend idle), a link whose backend is terminated
gives a class 08 error and the session carries on, and a client that stops reading a
large answer holds the source back instead of growing the gateway's memory.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from gateway.relay.express.text_split import EXPRESS_BUILD_ENV
from pgwire.protocol.client import ROW_WALK_ENV
from tests.support import rawpg
from tests.support.gateway_proc import PgSourceGateway, gateway_on_new_database
from tests.support.postgres import PostgresServer

ROWS = [(1, 100, "one"), (2, 200, "two"), (3, 300, None), (4, 400, "four")]


Setup = PgSourceGateway


# Each test runs against a gateway with the lane's Query split and answer walk compiled and
# one with their sources interpreted (gateway/relay/express/statement_bytes.py, SPLIT_BUILD;
# pgwire/protocol/answer_walks.py, ROW_WALK): both must answer alike.
@pytest.fixture(scope="module", params=["C", "python"])
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory,
          request: pytest.FixtureRequest) -> Iterator[Setup]:
    with gateway_on_new_database(postgres_server.dsn, tmp_path_factory.mktemp("express-gateway"),
                                 "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL, note text)",
                                 env={EXPRESS_BUILD_ENV: request.param,
                                      ROW_WALK_ENV: request.param}) as found:
        log = found.gateway.log_path.read_text()
        assert ("the Query split is interpreted" in log) == (request.param == "python"), log
        assert ("the answer walk is interpreted" in log) == (request.param == "python"), log
        yield found


def reset(setup: Setup) -> None:
    with psycopg.connect(setup.truth, autocommit=True) as conn:
        conn.execute("TRUNCATE acct")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO acct VALUES (%s, %s, %s)", ROWS)


def connect(setup: Setup, express: str) -> rawpg.RawPG:
    return rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port,
                               options=f"-c fedgate.express={express}")


def exchange(conn: rawpg.RawPG, *chunks: bytes, readies: int = 1) -> list[tuple[str, bytes]]:
    conn.send(*chunks)
    out: list[tuple[str, bytes]] = []
    for _ in range(readies):
        out += [(m.type, m.payload) for m in conn.read_until_ready() if m.type != "S"]
    return out


def show_taken(conn: rawpg.RawPG) -> int:
    conn.send(rawpg.query("SHOW fedgate.express_statements"))
    rows = [m for m in conn.read_until_ready() if m.type == "D"]
    return int(rawpg.parse_data_row(rows[0].payload)[0])


def q(sql: str) -> bytes:
    return rawpg.query(sql)


POINT = "SELECT bal, note FROM acct WHERE id = $1"
# Each entry: the chunks sent in one write, and how many ReadyForQuery end its answer.
SCRIPT: list[tuple[tuple[bytes, ...], int]] = [
    ((q("SELECT id FROM acct WHERE id = 1"),), 1),  # opens the link: always the task
    ((q("SELECT id, bal, note FROM acct WHERE id = 1"),), 1),
    ((q("SELECT id, bal, note FROM acct WHERE id = 3;"),), 1),
    ((q("SELECT id, bal FROM acct ORDER BY id"),), 1),
    ((q("UPDATE acct SET bal = bal + 5 WHERE id = 1 RETURNING bal"),), 1),
    ((q("INSERT INTO acct VALUES (9, 900, 'nine')"),), 1),
    ((q("SELECT bal / (id - 1) FROM acct WHERE id = 1"),), 1),  # division by zero, on the source
    ((q("SELECT nope FROM acct"),), 1),  # undefined column, on the source
    # A block that commits.
    ((q("BEGIN"),), 1),
    ((q("UPDATE acct SET bal = bal - 1 WHERE id = 2"),), 1),
    ((q("SELECT bal FROM acct WHERE id = 2"),), 1),
    ((q("COMMIT"),), 1),
    # A block that fails, refuses what follows, and rolls back.
    ((q("BEGIN"),), 1),
    ((q("UPDATE acct SET bal = 0 WHERE id = 4"),), 1),
    ((q("INSERT INTO acct VALUES (1, 0, 'dup')"),), 1),
    ((q("SELECT bal FROM acct WHERE id = 4"),), 1),
    ((q("ROLLBACK"),), 1),
    ((q("SELECT bal FROM acct WHERE id = 4"),), 1),
    # A block rolled back on purpose, and END outside a block (a warning).
    ((q("BEGIN"),), 1),
    ((q("DELETE FROM acct WHERE id = 3"),), 1),
    ((q("ROLLBACK"),), 1),
    ((q("END"),), 1),
    # Extended protocol, unnamed, re-Parsed each time (pgbench -M extended, most drivers).
    ((rawpg.parse(POINT, "", [23]), rawpg.bind("", "", [b"1"]), rawpg.describe("P"),
      rawpg.execute(), rawpg.sync()), 1),
    ((rawpg.parse(POINT, "", [23]), rawpg.bind("", "", [b"2"]), rawpg.describe("P"),
      rawpg.execute(), rawpg.sync()), 1),
    ((rawpg.parse(POINT, "", [23]), rawpg.bind("", "", [b"3"]), rawpg.describe("P"),
      rawpg.execute(), rawpg.sync()), 1),
    # Named, binary results, then with a row limit (asyncpg's fetchrow).
    ((rawpg.parse("SELECT id, bal FROM acct WHERE id >= $1 ORDER BY id", "s1", [23]),
      rawpg.describe("S", "s1"), rawpg.sync()), 1),
    ((rawpg.bind("", "s1", [b"2"], result_formats=[1]), rawpg.execute(), rawpg.sync()), 1),
    ((rawpg.bind("", "s1", [b"2"], result_formats=[1]), rawpg.execute(), rawpg.sync()), 1),
    ((rawpg.bind("", "s1", [b"1"]), rawpg.execute("", 2), rawpg.sync()), 1),
    ((rawpg.bind("", "s1", [b"9"]), rawpg.describe("P"), rawpg.execute("", 1), rawpg.sync()), 1),
    # A write with RETURNING in the extended protocol, and a source error there.
    ((rawpg.parse("UPDATE acct SET bal = bal + $1 WHERE id = $2 RETURNING id, bal", "w", [23, 23]),
      rawpg.sync()), 1),
    ((rawpg.bind("", "w", [b"7", b"2"]), rawpg.execute(), rawpg.sync()), 1),
    ((rawpg.bind("", "w", [b"7", b"2"]), rawpg.execute(), rawpg.sync()), 1),
    ((rawpg.bind("", "w", [b"x", b"2"]), rawpg.execute(), rawpg.sync()), 1),
    ((rawpg.bind("", "w", [b"1"]), rawpg.execute(), rawpg.sync()), 1),  # our error: 1 of 2 params
    # Pipelined: three statements in one write, one of them for the task (SET).
    ((q("SELECT bal FROM acct WHERE id = 1"), q("SET application_name = 'x'"),
      q("SELECT bal FROM acct WHERE id = 2")), 3),
    ((rawpg.bind("", "s1", [b"4"]), rawpg.execute(), rawpg.sync(),
      rawpg.bind("", "s1", [b"1"]), rawpg.execute(), rawpg.sync()), 2),
    # The unnamed portal of a repeated run: gone after Sync outside a block (the lane
    # keeps none there), kept inside one (and ran out of rows).
    ((rawpg.execute(), rawpg.sync()), 1),
    ((q("BEGIN"),), 1),
    ((rawpg.bind("", "s1", [b"3"]), rawpg.execute(), rawpg.sync()), 1),
    ((rawpg.bind("", "s1", [b"3"]), rawpg.execute(), rawpg.sync()), 1),
    ((rawpg.execute(), rawpg.sync()), 1),
    ((q("COMMIT"),), 1),
    # Two statements in one Query: an implicit transaction (the task's).
    ((q("UPDATE acct SET bal = 1 WHERE id = 1; SELECT bal FROM acct WHERE id = 1"),), 1),
]


def run_script(setup: Setup, express: str) -> tuple[list, int, list]:
    reset(setup)
    with connect(setup, express) as conn:
        answers = [exchange(conn, *chunks, readies=readies) for chunks, readies in SCRIPT]
        taken = show_taken(conn)
    with psycopg.connect(setup.truth) as conn:
        final = conn.execute("SELECT * FROM acct ORDER BY id").fetchall()
    return answers, taken, final


def test_lane_answers_as_the_task_does(setup: Setup) -> None:
    lane_answers, lane_taken, lane_final = run_script(setup, "on")
    task_answers, task_taken, task_final = run_script(setup, "off")
    for (chunks, _), lane, task in zip(SCRIPT, lane_answers, task_answers):
        assert lane == task, f"answers differ for {chunks!r}"
    assert lane_final == task_final
    assert task_taken == 0
    # Everything but the first statement, the first run of each shape with numbers (the
    # task prepares it on the link), the failed block's refusals, SET, END outside a
    # block and the task-only messages went through the lane.
    assert lane_taken >= 20, lane_taken
    # The script means what it says: errors and a failed block were really exercised.
    codes = [rawpg.parse_fields(p).get("C") for answer in lane_answers for t, p in answer if t == "E"]
    assert {"22012", "42703", "23505", "25P02", "22P02", "08P01", "34000"} <= set(codes), codes


def test_settings_reach_the_link_between_lane_statements(setup: Setup) -> None:
    """The lane sends the client's formatting settings ahead of a statement only when they
    changed since the last one (`PgLink.setting_commands` compares them as one tuple):
    a SET, a RESET, and a SET back to the first value each reach the source. RESET of
    bytea_output, which the gateway keeps no default for, resets it on the source too
    (it used to stay `escape` there)."""
    reset(setup)
    point = q("SELECT bal::float8 / 3, bal::text::bytea FROM acct WHERE id = 2")

    def answer(conn: rawpg.RawPG) -> list[bytes | None]:
        rows = [p for t, p in exchange(conn, point) if t == "D"]
        return rawpg.parse_data_row(rows[0])

    with connect(setup, "on") as conn:
        before = [answer(conn) for _ in range(3)]  # opens the link, prepares the shape
        exchange(conn, q("SET extra_float_digits = 0"))
        short = answer(conn)
        exchange(conn, q("SET bytea_output = 'escape'"))
        escaped = answer(conn)
        exchange(conn, q("RESET extra_float_digits"))
        exchange(conn, q("RESET bytea_output"))
        again = answer(conn)
        exchange(conn, q("SET extra_float_digits = 0"))
        short_again = answer(conn)
        taken = show_taken(conn)
    assert before[0] == before[1] == before[2] == again
    assert short[0] == short_again[0] == b"66.6666666666667" != before[0][0]
    assert (before[0][1], escaped[1]) == (b"\\x323030", b"200")
    assert taken >= 5, taken


# Runs for many seconds on the source (relayed: no pg_* function, which the gateway keeps).
LONG = ("SELECT count(*), '{marker}' FROM acct, generate_series(1, 20000) AS x, "
        "generate_series(1, 20000) AS y WHERE id = 1")


def backend_state(setup: Setup, marker: str) -> list[str]:
    with psycopg.connect(setup.truth, autocommit=True) as conn:
        return [r[0] for r in conn.execute(
            "SELECT state FROM pg_stat_activity WHERE query LIKE %s AND pid <> pg_backend_pid()",
            (f"%{marker}%",)).fetchall()]


def cancel_on_the_source(setup: Setup, conn: rawpg.RawPG, query: bytes, marker: str) -> None:
    """Send `query`, and once the source runs it (its text holds `marker`) a CancelRequest
    for the session: the answer is PostgreSQL's 57014 error, within 5 seconds."""
    conn.send(query)
    deadline = time.monotonic() + 10
    while backend_state(setup, marker) != ["active"]:
        assert time.monotonic() < deadline, "the statement never reached the source"
        time.sleep(0.05)
    started = time.monotonic()
    pid, key = conn.backend_key
    with rawpg.RawPG.open(setup.gateway.host, setup.gateway.port) as other:
        other.send(rawpg.cancel_request(pid, key))
    answer = conn.read_until_ready(timeout=10)
    assert time.monotonic() - started < 5
    errors = [m.fields for m in answer if m.type == "E"]
    assert errors and errors[0]["C"] == "57014", answer


def test_cancel_reaches_the_source(setup: Setup) -> None:
    reset(setup)
    with connect(setup, "on") as conn:
        exchange(conn, q("SELECT 1 FROM acct WHERE id = 1"))  # opens the link
        cancel_on_the_source(setup, conn, q(LONG.format(marker="cancel-me")), "cancel-me")
        assert backend_state(setup, "cancel-me") == ["idle"]
        # The session and its link carry on.
        assert [m.type for m in exchange_messages(conn, q("SELECT bal FROM acct WHERE id = 2"))] \
            == ["T", "D", "C", "Z"]
        # The long statement; the next one too when the pooled link it borrowed has its
        # shape prepared already (by an earlier session of the module).
        assert show_taken(conn) in (1, 2)


def exchange_messages(conn: rawpg.RawPG, *chunks: bytes) -> list[rawpg.Message]:
    conn.send(*chunks)
    return [m for m in conn.read_until_ready() if m.type != "S"]


def test_terminated_link_is_a_class_08_error(setup: Setup) -> None:
    reset(setup)
    with connect(setup, "on") as conn:
        exchange(conn, q("SELECT 1 FROM acct WHERE id = 1"))
        conn.send(q(LONG.format(marker="kill-me")))
        deadline = time.monotonic() + 10
        while backend_state(setup, "kill-me") != ["active"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with psycopg.connect(setup.truth, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE query LIKE '%kill-me%' AND pid <> pg_backend_pid()")
        answer = conn.read_until_ready(timeout=10)
        errors = [m.fields for m in answer if m.type == "E"]
        assert errors and errors[0]["C"].startswith("08"), answer
        assert answer[-1].type == "Z"
        rows = [m for m in exchange_messages(conn, q("SELECT bal FROM acct WHERE id = 2"))
                if m.type == "D"]
        assert [rawpg.parse_data_row(r.payload) for r in rows] == [[b"200"]]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_client_that_stops_reading_holds_the_source_back(setup: Setup) -> None:
    """About 300 MB of rows, read only after a pause: the gateway's memory stays flat."""
    reset(setup)
    sql = "SELECT g, repeat('x', 140) FROM acct, generate_series(1, 2000000) AS g WHERE id = 1"
    with connect(setup, "on") as conn:
        exchange(conn, q("SELECT 1 FROM acct WHERE id = 1"))
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        pid = setup.gateway.proc.pid
        before = rss_mb(pid)
        conn.send(q(sql))
        time.sleep(3)  # not reading: the lane must pause the source
        during = rss_mb(pid)
        rows = 0
        done = threading.Event()
        while not done.is_set():
            message = conn.read_message(timeout=60)
            if message.type == "D":
                rows += 1
            elif message.type == "Z":
                done.set()
        assert rows == 2_000_000
        assert during - before < 100, (before, during)
        assert show_taken(conn) == 1  # the big answer went through the lane
