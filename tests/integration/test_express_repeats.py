"""The express lane's repeats (gateway/relay/express/repeats.py) answer as the Python road does.

A statement the lane relayed before, repeated while the session is idle, is started and
answered by one call of the repeats each way, with the checks, the bookkeeping and the
transaction state of the Python road (gateway/relay/express/memory.py), which takes over whenever the
repeats meet something they do not read. These tests drive repeats through what can happen
to them: new numbers and parameter values, source errors in the middle of a repeat's
answer, transaction blocks (BEGIN sent ahead of a block's first repeat), a failed
block, a setting mirrored to the source changed between repeats (extra_float_digits), pipelined statements
arriving while a repeat runs, a CancelRequest, a source backend gone between repeats;
and what other sessions see (pg_stat_activity). Each runs against a gateway with the
compiled build and one with the same source interpreted (FEDGATE_EXPRESS=python), and
compares the bytes with `fedgate.express = off` (the session's task). `SHOW
fedgate.express_repeats` proves the repeats ran on both.
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from gateway.relay.express.text_split import EXPRESS_BUILD_ENV
from pgwire.protocol.client import ROW_WALK_ENV
from tests.integration.test_express import cancel_on_the_source, connect, exchange, q
from tests.support import rawpg
from tests.support.gateway_proc import GatewayProcess, gateway_on_new_database
from tests.support.postgres import PostgresServer



@dataclass
class Setup:
    gateway: GatewayProcess
    truth: str  # direct DSN of the source's database
    compiled: bool  # the gateway runs the repeats' compiled build
ROWS = [(1, 100, "one", "2024-01-05"), (2, 200, "two", "2024-02-06"), (3, 300, None, None)]


@pytest.fixture(scope="module", params=["C", "python"])
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory,
          request: pytest.FixtureRequest) -> Iterator[Setup]:
    with gateway_on_new_database(
            postgres_server.dsn, tmp_path_factory.mktemp("repeats-gateway"),
            "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL, note text, opened date); "
            "CREATE TABLE big AS SELECT g FROM generate_series(1, 20000) AS g",
            env={EXPRESS_BUILD_ENV: request.param, ROW_WALK_ENV: request.param}) as found:
        log = found.gateway.log_path.read_text()
        assert ("the repeats are interpreted" in log) == (request.param == "python"), log
        yield Setup(found.gateway, found.truth, request.param == "C")


def reset(setup: Setup) -> None:
    with psycopg.connect(setup.truth, autocommit=True) as conn:
        conn.execute("TRUNCATE acct")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO acct VALUES (%s, %s, %s, %s)", ROWS)


def show(conn: rawpg.RawPG, name: str) -> int:
    rows = [p for t, p in exchange(conn, q(f"SHOW {name}")) if t == "D"]
    return int(rawpg.parse_data_row(rows[0])[0])


def point(value: bytes, parse: bool = True) -> tuple[bytes, ...]:
    """pgbench -M extended's run (the unnamed statement Parsed again each time)."""
    head = (rawpg.parse("SELECT bal, note FROM acct WHERE id = $1", "", [23]),) if parse else ()
    return (*head, rawpg.bind("", "", [value]), rawpg.describe("P"), rawpg.execute(),
            rawpg.sync())


def named(value: bytes) -> tuple[bytes, ...]:
    """pgbench -M prepared's run of the statement `p` (Parsed once)."""
    return rawpg.bind("", "p", [value]), rawpg.execute(), rawpg.sync()


def limited(value: bytes, rows: int) -> tuple[bytes, ...]:
    """asyncpg's fetchrow (rows 1) of the statement `l`: Bind, Execute with a row limit, Sync."""
    return rawpg.bind("", "l", [value]), rawpg.execute("", rows), rawpg.sync()


def repeated(sql: str, *values: int) -> list[tuple[bytes, ...]]:
    return [(q(sql.format(v)),) for v in values]


SCRIPT: list[tuple[bytes, ...]] = [
    (q("SELECT id FROM acct WHERE id = 1"),),  # opens the link: the task
    *repeated("SELECT id, bal, note, opened FROM acct WHERE id = {}", 1, 2, 3, 4, 2),
    *repeated("UPDATE acct SET bal = bal + {} WHERE id = 2 RETURNING bal", 1, 2, 3, 4),
    # A repeat that fails on the source mid-answer, and repeats after it.
    *repeated("SELECT bal / (id - 2) FROM acct WHERE id = {}", 1, 3, 2, 1, 3),
    # Blocks: BEGIN goes to the source ahead of the block's first repeat.
    (q("BEGIN"),),
    *repeated("UPDATE acct SET bal = bal - {} WHERE id = 1", 5, 6),
    *repeated("SELECT bal FROM acct WHERE id = {}", 1, 1, 2),
    (q("COMMIT"),),
    (q("BEGIN"),),
    *repeated("UPDATE acct SET bal = bal - {} WHERE id = 1", 7, 8),
    *repeated("SELECT bal FROM acct WHERE id = {}", 1, 3),
    (q("ROLLBACK"),),
    *repeated("SELECT bal FROM acct WHERE id = {}", 1, 2),
    # A failed block: its repeats are refused until ROLLBACK.
    (q("BEGIN"),),
    *repeated("SELECT bal FROM acct WHERE id = {}", 1),
    *repeated("SELECT bal / (id - 2) FROM acct WHERE id = {}", 2),
    *repeated("SELECT bal FROM acct WHERE id = {}", 1, 3),
    (q("ROLLBACK"),),
    # A setting mirrored to the source changes between repeats.
    *repeated("SELECT bal::float8 / 7 FROM acct WHERE id = {}", 1, 2, 1),
    (q("SET extra_float_digits = 0"),),
    *repeated("SELECT bal::float8 / 7 FROM acct WHERE id = {}", 1, 2, 1),
    (q("RESET extra_float_digits"),),
    *repeated("SELECT bal::float8 / 7 FROM acct WHERE id = {}", 2, 1),
    # search_path changes between repeats (the same names, another resolution).
    (q("SET search_path = pg, public"),),
    *repeated("SELECT bal FROM acct WHERE id = {}", 3, 1),
    (q("RESET search_path"),),
    *repeated("SELECT bal FROM acct WHERE id = {}", 3, 1),
    # Extended runs: unnamed and re-Parsed, then named; a value the source refuses.
    point(b"1"), point(b"2"), point(b"3"), point(b"9"), point(b"x"), point(b"2"),
    (rawpg.parse("SELECT bal, note FROM acct WHERE id = $1", "p", [23]), rawpg.sync()),
    named(b"1"), named(b"2"), named(b"3"), named(b"x"), named(b"1"),
    # Extended runs inside blocks (psycopg's default, autocommit off): BEGIN goes to the
    # source ahead of the block's first run; the block's unnamed portal lives on, done.
    (q("BEGIN"),), named(b"2"), named(b"1"), named(b"3"), (q("COMMIT"),), named(b"3"),
    (q("BEGIN"),), point(b"1"), point(b"2"), point(b"3"), point(b"1"),
    (rawpg.execute(), rawpg.sync()),  # the done portal run again: SELECT 0
    (q("ROLLBACK"),),
    # A block's writes as runs, a source error in a block's run, runs refused after it.
    (rawpg.parse("UPDATE acct SET bal = bal + $1 WHERE id = 2 RETURNING bal", "u", [23]),
     rawpg.sync()),
    (q("BEGIN"),), *[(rawpg.bind("", "u", [v]), rawpg.execute(), rawpg.sync())
                     for v in (b"1", b"2", b"3", b"4")],
    named(b"2"), named(b"x"), named(b"1"), (q("ROLLBACK"),),
    (q("BEGIN"),), named(b"1"), *[(rawpg.bind("", "u", [v]), rawpg.execute(), rawpg.sync())
                                  for v in (b"5", b"6", b"7")], (q("COMMIT"),),
    # Runs pipelined in one chunk in a block, a write among them, and BEGIN with them.
    (q("BEGIN"),), named(b"1"), (*named(b"2"), *named(b"3")),
    (rawpg.bind("", "u", [b"8"]), rawpg.execute(), rawpg.sync(), *named(b"2")),
    (q("COMMIT"), q("BEGIN"), *named(b"1")), named(b"2"), (*named(b"3"), q("ROLLBACK")),
    # Row limits (asyncpg's fetchrow): one row or none ends with CommandComplete, more
    # than the limit with PortalSuspended; outside a block Sync closes the portal, so
    # its next Execute finds none.
    (rawpg.parse("SELECT id, note FROM acct WHERE id >= $1 ORDER BY id", "l", [23]),
     rawpg.sync()),
    *[limited(v, 1) for v in (b"3", b"9", b"1", b"2", b"3", b"1", b"9")],
    (rawpg.execute("", 1), rawpg.sync()),
    *[limited(v, 2) for v in (b"1", b"2", b"3", b"1")],
    # In a block a limited run's portal outlives Sync: the general road, which resumes it.
    (q("BEGIN"),), limited(b"1", 1), limited(b"1", 1), (rawpg.execute("", 1), rawpg.sync()),
    (rawpg.execute("", 5), rawpg.sync()), limited(b"3", 1), (q("COMMIT"),),
    limited(b"2", 1),
]


def readies(chunks: tuple[bytes, ...]) -> int:
    """The ReadyForQuerys a chunk's messages are answered with: one per Query and Sync."""
    return sum(1 for message in chunks if message[:1] in (b"Q", b"S"))


def run_script(setup: Setup, express: str) -> tuple[list, int, list]:
    reset(setup)
    with connect(setup, express) as conn:
        answers = [exchange(conn, *chunks, readies=readies(chunks)) for chunks in SCRIPT]
        repeats = show(conn, "fedgate.express_repeats")
    with psycopg.connect(setup.truth) as conn:
        final = conn.execute("SELECT * FROM acct ORDER BY id").fetchall()
    return answers, repeats, final


def test_repeats_answer_as_the_task_does(setup: Setup) -> None:
    lane_answers, lane_repeats, lane_final = run_script(setup, "on")
    task_answers, task_repeats, task_final = run_script(setup, "off")
    for chunks, lane, task in zip(SCRIPT, lane_answers, task_answers):
        assert lane == task, f"answers differ for {chunks!r}"
    assert lane_final == task_final
    assert task_repeats == 0
    # Every repeat after the first two of its shape (the first is prepared on the link,
    # the second arms the lane), less the ones that had to wait for Python: both builds.
    # (38 when the repeats took no extended runs in blocks and none with a row limit.)
    assert lane_repeats >= 55, lane_repeats
    codes = [rawpg.parse_fields(p).get("C") for answer in lane_answers for t, p in answer
             if t == "E"]
    assert {"22012", "25P02", "22P02"} <= set(codes), codes
    sevenths = [rawpg.parse_data_row(p) for chunks, answer in zip(SCRIPT, lane_answers)
                for t, p in answer if t == "D" and b"/ 7" in chunks[0]]
    assert [b"12.7142857142857"] in sevenths and [b"12.714285714285714"] in sevenths, sevenths


def test_pg_stat_activity_shows_the_last_repeat(setup: Setup) -> None:
    reset(setup)
    with connect(setup, "on") as conn, connect(setup, "on") as other:
        for value in (1, 2, 3, 2):
            exchange(conn, q(f"SELECT bal FROM acct WHERE id = {value}"))
        pid, _ = conn.backend_key
        rows = [rawpg.parse_data_row(p) for t, p in exchange(
            other, q(f"SELECT state, query FROM pg_stat_activity WHERE pid = {pid}")) if t == "D"]
        assert rows == [[b"idle", b"SELECT bal FROM acct WHERE id = 2"]]
        assert show(conn, "fedgate.express_repeats") >= 2


# Quick with 20000 (20,000 rows), long with small numbers (1: 400 million rows).
COUNTING = "SELECT count(*) AS repeat_marker FROM big AS a, big AS b WHERE a.g >= {0}"


def test_cancel_stops_a_repeat(setup: Setup) -> None:
    reset(setup)
    with connect(setup, "on") as conn:
        exchange(conn, q("SELECT 1 FROM acct WHERE id = 1"))  # opens the link
        before = show(conn, "fedgate.express_repeats")  # (the task's: the lane waits)
        for _ in range(2):  # prepared on the link, then run by the lane, which arms
            exchange(conn, q(COUNTING.format(20000)))
        cancel_on_the_source(setup, conn, q(COUNTING.format(1)), "repeat_marker")
        rows = [rawpg.parse_data_row(p) for t, p in exchange(conn, q(COUNTING.format(20000)))
                if t == "D"]
        assert rows == [[b"20000"]]
        assert show(conn, "fedgate.express_repeats") - before >= 2


def test_source_gone_between_repeats(setup: Setup) -> None:
    """The source's backend ends while the session is idle: the next repeat finds the link
    at its end and takes the Python road, which connects again and answers."""
    reset(setup)
    with connect(setup, "on") as conn:
        answers = [exchange(conn, q(f"SELECT bal AS gone_marker FROM acct WHERE id = {v}"))
                   for v in (1, 2, 3)]
        with psycopg.connect(setup.truth, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE query LIKE '%gone_marker%' AND pid <> pg_backend_pid()")
        time.sleep(0.5)  # the gateway reads the link's end of file
        again = exchange(conn, q("SELECT bal AS gone_marker FROM acct WHERE id = 2"))
        assert again == answers[1]


def test_statements_sent_while_a_repeat_runs(setup: Setup) -> None:
    """A client that does not wait for the answer (pipelining): what arrives while a
    repeat runs is held, then taken in order."""
    reset(setup)
    with connect(setup, "on") as conn:
        exchange(conn, q("SELECT 1 FROM acct WHERE id = 1"))
        for _ in range(2):
            exchange(conn, q(COUNTING.format(20000)))
        conn.send(q(COUNTING.format(19000)))  # 20 million rows: a while
        time.sleep(0.1)
        conn.send(q("SELECT bal FROM acct WHERE id = 3"))
        conn.send(q(COUNTING.format(19999)), q("SELECT bal FROM acct WHERE id = 2"))
        answers = [[rawpg.parse_data_row(m.payload) for m in conn.read_until_ready()
                    if m.type == "D"] for _ in range(4)]
        assert answers == [[[b"20020000"]], [[b"300"]], [[b"40000"]], [[b"200"]]]
        assert show(conn, "fedgate.express_repeats") >= 1


def backend_waiting(setup: Setup, marker: str) -> bool:
    """A source backend runs the statement containing `marker` and waits on a lock."""
    with psycopg.connect(setup.truth, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE %s AND wait_event_type = "
            "'Lock' AND pid <> pg_backend_pid()", (f"%{marker}%",)).fetchone()
    return bool(row and row[0])


def until_waiting(setup: Setup, marker: str) -> None:
    """Wait until the statement containing `marker` reached the source and waits there."""
    deadline = time.monotonic() + 10
    while not backend_waiting(setup, marker):
        assert time.monotonic() < deadline, "the repeat never reached the source"
        time.sleep(0.05)


@pytest.mark.parametrize("late", ["pipelined", "half-closed"])
def test_a_pipelined_write_is_answered_once_and_exactly(setup: Setup, late: str) -> None:
    """A client that sends its next Query while a repeated UPDATE is in flight (psycopg's
    pipeline mode, pgJDBC batches), or half-closes its side meanwhile, gets the UPDATE's
    own CommandComplete and ReadyForQuery, then the next statement's answer: never an
    error for a write the source committed, and the write applied once."""
    reset(setup)
    update = "UPDATE acct SET bal = bal + {} WHERE id = 1"
    with connect(setup, "on") as conn:
        exchange(conn, q("SELECT 1 FROM acct WHERE id = 1"))
        for step in (1, 2, 3):  # the first two runs of a shape take the Python road
            assert exchange(conn, q(update.format(step)))[0] == ("C", b"UPDATE 1\0")
        taken = show(conn, "fedgate.express_repeats")
        # SHOW left the lane unarmed; a statement of the lane's arms it again
        assert exchange(conn, q(update.format(4)))[0] == ("C", b"UPDATE 1\0")
        with psycopg.connect(setup.truth) as locker:  # holds the row: the repeat waits
            locker.execute("SELECT bal FROM acct WHERE id = 1 FOR UPDATE")
            conn.send(q(update.format(10)))
            until_waiting(setup, "UPDATE acct SET bal = bal +")
            if late == "pipelined":
                conn.send(q("SELECT bal FROM acct WHERE id = 1"))
            else:
                conn.sock.shutdown(socket.SHUT_WR)
            time.sleep(0.2)  # the late chunk or the end of file reaches the gateway first
            locker.commit()
        if late == "pipelined":
            got = [(m.type, m.payload) for m in conn.read_until_ready() if m.type != "S"]
            assert got == [("C", b"UPDATE 1\0"), ("Z", b"I")]
            got = [(m.type, m.payload) for m in conn.read_until_ready() if m.type != "S"]
            assert [t for t, _ in got] == ["T", "D", "C", "Z"]
            assert rawpg.parse_data_row(got[1][1]) == [b"120"]
            assert got[2:] == [("C", b"SELECT 1\0"), ("Z", b"I")]
            assert show(conn, "fedgate.express_repeats") - taken >= 1
        else:  # the session ends with the client's side; no error for the write
            assert [m for m in conn.expect_closed() if m.type == "E"] == []
    with psycopg.connect(setup.truth) as check:  # 100 + 1 + 2 + 3 + 4 + 10: applied once
        assert check.execute("SELECT bal FROM acct WHERE id = 1").fetchone() == (120,)


def test_statements_pipelined_ahead_of_a_half_close_are_all_answered(setup: Setup) -> None:
    """A client that sends several statements and shuts its side of the socket at once
    (`shutdown(SHUT_WR)`, then reads) gets every answer, as from PostgreSQL, and each
    write is applied: the session runs what arrived before the end of file, then ends."""
    reset(setup)
    update = "UPDATE acct SET bal = bal + {} WHERE id = 1"
    with connect(setup, "on") as conn:
        for step in (1, 2, 3):  # the lane knows the shapes: the later ones are repeats
            assert exchange(conn, q(update.format(step)))[0] == ("C", b"UPDATE 1\0")
        conn.send(q("SELECT pg_sleep(0.3)"), q(update.format(4)),
                  q("SELECT bal FROM acct WHERE id = 1"))
        conn.sock.shutdown(socket.SHUT_WR)
        got = [m for m in conn.expect_closed() if m.type not in ("S", "N")]
    kinds = [m.type for m in got]
    assert kinds == ["T", "D", "C", "Z", "C", "Z", "T", "D", "C", "Z"], kinds
    assert got[4].payload == b"UPDATE 1\0"
    assert rawpg.parse_data_row(got[7].payload) == [b"110"]


def test_a_half_close_behind_a_repeat_in_flight_gets_the_held_answers(setup: Setup) -> None:
    """The next Query sent while a repeat waits on a row lock, then the end of file: the
    repeat's answer, then the next one's, then the close; the write applied once."""
    reset(setup)
    update = "UPDATE acct SET bal = bal + {} WHERE id = 1"
    with connect(setup, "on") as conn:
        exchange(conn, q("SELECT 1 FROM acct WHERE id = 1"))
        for step in (1, 2, 3, 4):
            assert exchange(conn, q(update.format(step)))[0] == ("C", b"UPDATE 1\0")
        with psycopg.connect(setup.truth) as locker:
            locker.execute("SELECT bal FROM acct WHERE id = 1 FOR UPDATE")
            conn.send(q(update.format(10)))
            until_waiting(setup, "UPDATE acct SET bal = bal +")
            conn.send(q("SELECT bal FROM acct WHERE id = 1"))
            conn.sock.shutdown(socket.SHUT_WR)
            time.sleep(0.2)  # the chunk and the end of file reach the gateway first
            locker.commit()
        got = [(m.type, m.payload) for m in conn.expect_closed() if m.type not in ("S", "N")]
    assert [t for t, _ in got] == ["C", "Z", "T", "D", "C", "Z"], got
    assert got[0] == ("C", b"UPDATE 1\0")
    assert rawpg.parse_data_row(got[3][1]) == [b"120"]
    with psycopg.connect(setup.truth) as check:
        assert check.execute("SELECT bal FROM acct WHERE id = 1").fetchone() == (120,)


def test_a_slow_reader_pipelining_gets_every_answer_in_order(setup: Setup) -> None:
    """A repeat whose answer outgrows the socket's buffers while the client reads nothing
    (the gateway pauses writing mid-answer), with the next Query sent meanwhile: the
    whole answer, its ReadyForQuery, then the next one's, message by message."""
    reset(setup)
    wide = ("SELECT big.g, md5(big.g::text) AS a, md5(big.g::text) AS b, "
            "md5(big.g::text) AS c, md5(big.g::text) AS d "
            "FROM big, big AS twice WHERE twice.g <= 2 AND big.g <= {}")
    with connect(setup, "on") as conn:
        # a small window (not below loopback's segment size, where Linux stalls)
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 131072)
        exchange(conn, q("SELECT 1 FROM acct WHERE id = 1"))
        for rows in (3, 4, 5):
            exchange(conn, q(wide.format(rows)))
        taken = show(conn, "fedgate.express_repeats")
        exchange(conn, q(wide.format(6)))  # arms the lane again after SHOW
        conn.send(q(wide.format(20000)))  # about 6 MB: more than the buffers hold
        time.sleep(0.5)
        conn.send(q("SELECT bal FROM acct WHERE id = 3"))
        time.sleep(0.2)
        first = [m for m in conn.read_until_ready() if m.type != "S"]
        second = [m for m in conn.read_until_ready() if m.type != "S"]
        assert [m.type for m in first] == ["T", *["D"] * 40000, "C", "Z"]
        md5 = hashlib.md5(b"20000").hexdigest().encode()
        assert rawpg.parse_data_row(first[-3].payload) == [b"20000", md5, md5, md5, md5]
        assert (first[-2].payload, first[-1].payload) == (b"SELECT 40000\0", b"I")
        assert [(m.type, m.payload) for m in second[1:]] == [
            ("D", second[1].payload), ("C", b"SELECT 1\0"), ("Z", b"I")]
        assert rawpg.parse_data_row(second[1].payload) == [b"300"]
        assert show(conn, "fedgate.express_repeats") - taken >= 1


def direct(setup: Setup) -> rawpg.RawPG:
    """A connection straight to the source's database, for PostgreSQL's own answers."""
    info = conninfo_to_dict(setup.truth)
    return rawpg.RawPG.connect(str(info.get("host", "127.0.0.1")), int(info.get("port", 5432)),
                               user=str(info["user"]), database=str(info["dbname"]))


def said(answer: list[tuple[str, bytes]]) -> list[tuple]:
    """An answer as a client reads it: errors by their SQLSTATE and message (PostgreSQL's
    own also name its source file and line)."""
    out: list[tuple] = []
    for t, p in answer:
        if t == "E":
            fields = rawpg.parse_fields(p)
            out.append((t, fields.get("C"), fields.get("M")))
        elif t != "N":
            out.append((t, p))
    return out


SUSPENDING = "SELECT g FROM big WHERE g >= $1 ORDER BY g"


def fetchrow(value: bytes, rows: int = 1) -> tuple[bytes, ...]:
    return rawpg.bind("", "s", [value]), rawpg.execute("", rows), rawpg.sync()


LIMITED: list[tuple[bytes, ...]] = [
    (rawpg.parse(SUSPENDING, "s", [23]), rawpg.sync()),
    # more rows than the limit: DataRow, PortalSuspended; one: CommandComplete; none
    *[fetchrow(v) for v in (b"1", b"5", b"19999", b"20000", b"20001", b"7", b"8")],
    *[fetchrow(v, 3) for v in (b"1", b"19998", b"19999", b"2")],
    (rawpg.execute("", 1), rawpg.sync()),  # Sync closed the portal: 34000
    (rawpg.execute("s", 1), rawpg.sync()),
    # in a block the portal stays suspended on the source, and resumes
    (q("BEGIN"),), fetchrow(b"3", 2), (rawpg.execute("", 2), rawpg.sync()),
    (rawpg.execute("", 3), rawpg.flush(), rawpg.execute("", 0), rawpg.sync()),
    fetchrow(b"19999", 1),
    (rawpg.execute("", 1), rawpg.sync()), (q("COMMIT"),),
    fetchrow(b"9"), fetchrow(b"10"),
]


def test_limited_runs_answer_as_postgresql(setup: Setup) -> None:
    """asyncpg's fetchrow sends Execute with a row limit of 1: the repeats take it outside a
    block, and the client gets PostgreSQL's own answer, PortalSuspended when the statement
    has more rows than the limit, CommandComplete when it has no more."""
    with connect(setup, "on") as conn:
        before = show(conn, "fedgate.express_repeats")
        through = [said(exchange(conn, *chunks)) for chunks in LIMITED]
        repeats = show(conn, "fedgate.express_repeats") - before
    with direct(setup) as conn:
        truth = [said(exchange(conn, *chunks)) for chunks in LIMITED]
    for chunks, got, want in zip(LIMITED, through, truth):
        assert got == want, f"answers differ for {chunks!r}"
    # PostgreSQL says PortalSuspended whenever the limit was reached, even at the last
    # row (20000); CommandComplete only below it (none, or two rows of three)
    assert [t for t, *_ in truth[1]] == ["2", "D", "s", "Z"]
    assert [t for t, *_ in truth[4]] == ["2", "D", "s", "Z"]
    assert truth[5] == [("2", b""), ("C", b"SELECT 0\0"), ("Z", b"I")]
    assert [t for t, *_ in truth[9]] == ["2", "D", "D", "D", "s", "Z"]
    assert [t for t, *_ in truth[10]] == ["2", "D", "D", "C", "Z"]
    # after the first two runs of the key, each one outside the block
    assert repeats >= 10, repeats


POINT_SQL = "SELECT id, bal, note, opened FROM acct WHERE id = {}"
KEYS = [1, 2, 3, 4, 2, 1, 3, 3, 2, 1] * 4


def psycopg_defaults(dsn: str, gateway: bool) -> tuple[list, int]:
    """psycopg 3 as applications use it: autocommit off, so every statement runs in the
    transaction block psycopg opens with BEGIN, prepared after five runs. A source error
    fails the block (rolled back), writes are committed."""
    out: list = []
    with psycopg.connect(dsn, connect_timeout=10) as conn:
        before = int(conn.execute("SHOW fedgate.express_repeats").fetchone()[0]) if gateway else 0
        conn.commit()
        for k in KEYS:
            out.append(conn.execute(POINT_SQL.format("%s"), (k,)).fetchone())
        try:
            conn.execute("SELECT bal / (id - 2) FROM acct WHERE id = %s", (2,))
        except psycopg.errors.DivisionByZero as exc:
            out.append(exc.sqlstate)
        out.append(conn.info.transaction_status.name)
        conn.rollback()
        for k in KEYS[:12]:
            conn.execute("UPDATE acct SET bal = bal + 1 WHERE id = %s", (k,))
            out.append(conn.execute(POINT_SQL.format("%s"), (k,)).fetchone())
        conn.commit()
        out.append(conn.execute("SELECT id, bal FROM acct ORDER BY id").fetchall())
        repeats = (int(conn.execute("SHOW fedgate.express_repeats").fetchone()[0]) - before
                   if gateway else 0)
    return out, repeats


async def asyncpg_defaults(dsn: str, gateway: bool) -> tuple[list, int]:
    """asyncpg as applications use it: fetchrow (Execute with a row limit of 1) of
    statements it prepared once, outside a transaction block; one of them returns more
    rows than the limit (PortalSuspended)."""
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        before = int(await conn.fetchval("SHOW fedgate.express_repeats")) if gateway else 0
        out: list = []
        for k in KEYS:
            row = await conn.fetchrow(POINT_SQL.format("$1"), k)
            out.append(tuple(row) if row is not None else None)
            out.append(await conn.fetchval(SUSPENDING, k * 997))
        repeats = int(await conn.fetchval("SHOW fedgate.express_repeats")) - before if gateway else 0
        return out, repeats
    finally:
        await conn.close()


def test_driver_defaults_are_repeated(setup: Setup) -> None:
    """psycopg's point queries in its default transaction block and asyncpg's fetchrow are
    taken by the repeats (`SHOW fedgate.express_repeats`, what the driver bench reads) and
    answer as PostgreSQL does."""
    reset(setup)
    psycopg_direct, _ = psycopg_defaults(setup.truth, False)
    reset(setup)
    psycopg_gateway, psycopg_repeats = psycopg_defaults(setup.gateway.dsn, True)
    assert psycopg_gateway == psycopg_direct
    assert "22012" in psycopg_gateway and "INERROR" in psycopg_gateway
    reset(setup)
    asyncpg_direct, _ = asyncio.run(asyncio.wait_for(asyncpg_defaults(setup.truth, False), 60))
    asyncpg_gateway, asyncpg_repeats = asyncio.run(
        asyncio.wait_for(asyncpg_defaults(setup.gateway.dsn, True), 60))
    assert asyncpg_gateway == asyncpg_direct
    # 40 + 12 * 2 statements in blocks, 80 fetchrows: all but their first runs (the lane
    # remembers a run the first time, prepares it on the link, then repeats it)
    assert psycopg_repeats >= 50, psycopg_repeats
    assert asyncpg_repeats >= 70, asyncpg_repeats


def test_cancel_stops_a_repeated_run_in_a_block(setup: Setup) -> None:
    """psycopg's default: prepared runs inside a block. A CancelRequest for one the repeats
    run stops it on the source; the block is failed ('E') until ROLLBACK, and the runs
    are repeated again after it."""
    reset(setup)
    counting = COUNTING.format("$1")

    def run(value: bytes) -> list[tuple[str, bytes]]:
        return exchange(conn, rawpg.bind("", "c", [value]), rawpg.execute(), rawpg.sync())

    with connect(setup, "on") as conn:
        exchange(conn, rawpg.parse(counting, "c", [23]), rawpg.sync())
        exchange(conn, q("BEGIN"))
        for _ in range(3):  # prepared on the link, remembered, then repeated
            assert run(b"20000")[-1] == ("Z", b"T")
        before = show(conn, "fedgate.express_repeats")
        assert run(b"20000")[-1] == ("Z", b"T")  # arms the lane again after SHOW (SHOW disarms)
        cancel_on_the_source(setup, conn, rawpg.bind("", "c", [b"1"]) + rawpg.execute()
                             + rawpg.sync(), "repeat_marker")
        failed = run(b"20000")
        assert [rawpg.parse_fields(p).get("C") for t, p in failed if t == "E"] == ["25P02"]
        assert failed[-1] == ("Z", b"E")
        assert exchange(conn, q("ROLLBACK")) == [("C", b"ROLLBACK\0"), ("Z", b"I")]
        # the cancelled run was the repeats' (the one before it armed them after SHOW)
        assert show(conn, "fedgate.express_repeats") - before == 1
        exchange(conn, q("BEGIN"))
        before = show(conn, "fedgate.express_repeats")
        for _ in range(3):
            answer = run(b"19999")
            assert [rawpg.parse_data_row(p) for t, p in answer if t == "D"] == [[b"40000"]]
            assert answer[-1] == ("Z", b"T")
        assert exchange(conn, q("COMMIT")) == [("C", b"COMMIT\0"), ("Z", b"I")]
        # the second and third runs and COMMIT (the first arms the lane again after SHOW)
        assert show(conn, "fedgate.express_repeats") - before == 3
