"""Relayed statements whose numbers go as parameters (gateway/relay/literals.py) answer as PostgreSQL.

Each simple Query below runs directly on PostgreSQL, through the gateway with
`fedgate.parameterize` on (the default: the statement's shape is prepared once on the
session's link and the numbers are bound) and with it off (the text is sent as written).
Every statement runs three times, so the first execution (which prepares the shape), the
second (the express lane binding the prepared statement) and the later ones (the lane
recalling the shape it lifted, gateway/relay/express/memory.py) are all compared. Answers
must agree message by message: column names and types, rows, command tags, and errors
with their SQLSTATE, message, detail and position in the client's text. A table that
changes shape between two runs of one statement still answers (a Query has no cached
plan, so neither may the gateway's prepared shape show one). A recalled shape follows
the session: a new search_path, a number of another type, a transaction block.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.support import rawpg
from tests.support.gateway_proc import PgSourceGateway, gateway_on_new_database
from tests.support.postgres import PostgresServer

STATEMENTS = [
    "SELECT id, bal FROM acct WHERE id = 2",
    "SELECT id, bal * 2.5, bal - 1 FROM acct WHERE id >= 2 AND bal < 3000000000 ORDER BY id",
    "SELECT id FROM acct WHERE id = 99999999999",
    "SELECT id FROM acct WHERE id = 1.5 OR bal = 300",
    "SELECT nope FROM acct WHERE id = 12345",
    "SELECT bal / 0 FROM acct WHERE id = 1",
    "UPDATE acct SET bal = bal + -5 WHERE id = 1 RETURNING bal",
    "UPDATE acct SET bal = bal * 2 WHERE id = 77",
    "INSERT INTO acct VALUES (10, 1000, NULL)",
    "INSERT INTO acct (id, bal) VALUES (11, 2147483648)",
    "DELETE FROM acct WHERE id = 10",
    "SELECT id, bal FROM acct WHERE bal > 150 AND id < 4 ORDER BY bal",
]


Setup = PgSourceGateway


@pytest.fixture(scope="module")
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with gateway_on_new_database(postgres_server.dsn, tmp_path_factory.mktemp("lifted-gateway"),
                                 "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL, note text)") as found:
        yield found


def reset(setup: Setup) -> None:
    with psycopg.connect(setup.truth, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS acct")
        conn.execute("CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL, note text)")
        conn.execute("INSERT INTO acct VALUES (1, 100, 'one'), (2, 200, 'two'), (3, 300, NULL)")


def normalized(messages: list[rawpg.Message]) -> list:
    """What a client sees, without what legitimately differs: the gateway zeroes the
    table references of RowDescription and sends the main fields of an error."""
    out: list = []
    for message in messages:
        if message.type == "T":
            out.append(("T", [{k: v for k, v in column.items() if k not in ("table_oid", "attnum")}
                              for column in rawpg.parse_row_description(message.payload)]))
        elif message.type == "E":
            fields = message.fields
            out.append(("E", {k: fields.get(k) for k in "CMDHP"}))
        elif message.type != "S":
            out.append((message.type, message.payload))
    return out


def run(conn: rawpg.RawPG, sql: str) -> list:
    conn.send(rawpg.query(sql))
    return normalized(conn.read_until_ready())


def connections(setup: Setup) -> dict[str, rawpg.RawPG]:
    url = urlsplit(setup.truth)
    return {
        "direct": rawpg.RawPG.connect(url.hostname, url.port, user=url.username or "postgres",
                                      database=url.path.lstrip("/")),
        "lifted": rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port),
        "as written": rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port,
                                          options="-c fedgate.parameterize=off"),
    }


def test_lifted_statements_answer_as_postgresql(setup: Setup) -> None:
    answers: dict[str, list] = {}
    for target in ("direct", "lifted", "as written"):
        reset(setup)
        conns = connections(setup)
        try:
            conn = conns[target]
            run(conn, "SELECT id FROM acct WHERE id = 1")  # opens the gateway's link
            answers[target] = [(sql, run(conn, sql), run(conn, sql), run(conn, sql))
                               for sql in STATEMENTS]
        finally:
            for c in conns.values():
                c.close()
    for direct, lifted, written in zip(answers["direct"], answers["lifted"], answers["as written"]):
        assert lifted == direct, direct[0]
        assert written == direct, direct[0]
    codes = {e[1]["C"] for _, *runs in answers["lifted"] for run_ in runs for e in run_ if e[0] == "E"}
    assert {"42703", "22012", "23505", "22003"} <= codes, codes


def test_a_table_that_changes_shape_still_answers(setup: Setup) -> None:
    reset(setup)
    with rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port) as conn:
        for _ in range(3):  # prepared by the task, then bound by the lane
            assert [m[0] for m in run(conn, "SELECT * FROM acct WHERE id = 1")] == ["T", "D", "C", "Z"]
        with psycopg.connect(setup.truth, autocommit=True) as admin:
            admin.execute("ALTER TABLE acct ADD COLUMN extra int DEFAULT 7")
        for _ in range(2):
            answer = run(conn, "SELECT * FROM acct WHERE id = 1")
            assert [m[0] for m in answer] == ["T", "D", "C", "Z"], answer
            assert [c["name"] for c in answer[0][1]] == ["id", "bal", "note", "extra"]
            assert rawpg.parse_data_row(answer[1][1])[-1] == b"7"


def express_taken(conn: rawpg.RawPG) -> int:
    conn.send(rawpg.query("SHOW fedgate.express_statements"))
    rows = [m for m in conn.read_until_ready() if m.type == "D"]
    return int(rawpg.parse_data_row(rows[0].payload)[0])


def test_a_recalled_shape_follows_the_session(setup: Setup) -> None:
    """Statements of one shape, with what their route and parameters depend on changing
    in between, answer as PostgreSQL does."""
    script = [
        *(f"SELECT id, bal FROM acct WHERE id = {n}" for n in (1, 2, 3, 4)),
        "SELECT id, bal FROM acct WHERE id = 3000000000",  # int8: another prepared statement
        "SELECT id, bal FROM acct WHERE id = 2.0",  # numeric
        "SELECT id, bal FROM acct WHERE id = 2",
        "BEGIN",
        "UPDATE acct SET bal = bal + 1 WHERE id = 2",
        "UPDATE acct SET bal = bal + 1 WHERE id = 2",
        "SELECT id, bal FROM acct WHERE id = 2",
        "SELECT id, bal FROM acct WHERE id = 1 / 0",  # fails the block
        "SELECT id, bal FROM acct WHERE id = 2",  # 25P02
        "ROLLBACK",
        "SELECT id, bal FROM acct WHERE id = 2;",
        "  SELECT id, bal FROM acct WHERE id = 3 ; ",
    ]
    answers: dict[str, list] = {}
    for target in ("direct", "lifted"):
        reset(setup)
        conns = connections(setup)
        try:
            conn = conns[target]
            answers[target] = [run(conn, sql) for sql in script]
            if target == "lifted":
                taken = express_taken(conn)
        finally:
            for c in conns.values():
                c.close()
    for sql, lifted, direct in zip(script, answers["lifted"], answers["direct"]):
        assert lifted == direct, sql
    assert taken >= 8, taken  # the repeats ran on the lane, not on the session's task
    with rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port) as conn:
        for n in (1, 2, 3):
            assert [m[0] for m in run(conn, f"SELECT bal FROM acct WHERE id = {n}")] == ["T", "D", "C", "Z"]
        run(conn, "SET search_path = pg_catalog")  # acct is no longer on the path
        answer = run(conn, "SELECT bal FROM acct WHERE id = 1")
        assert answer[0][0] == "E" and answer[0][1]["C"] == "42P01", answer
        run(conn, "SET search_path = pg")
        assert [m[0] for m in run(conn, "SELECT bal FROM acct WHERE id = 1")] == ["T", "D", "C", "Z"]
