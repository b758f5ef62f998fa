"""The express lane's memory (gateway/relay/express/memory.py and kept.py) reads texts as
the slow path does.

A remembered shape is found again by splitting a Query's text on its numbers; for every
text that split accepts, the statement, shape and numbers must be exactly those of
`split_statements`, `gateway.relay.shapes.scan` and `gateway.relay.literals.lift`, and the Bind it
sends must be the one `gateway.relay.links.lifted_execute` sends. A run's key must ignore the
Bind's values and nothing else.
"""

from __future__ import annotations

import pytest

from connectors.postgres.link import RemoteStatement
from gateway.relay.express.text_split import quick_split
from gateway.relay.express.kept import BOUND_TAIL, KeptQuery, bound_request, parameter_types
from gateway.relay.express.statement_bytes import quick_bind, quick_split_bytes, run_key_of
from gateway.relay.links import lifted_execute
from gateway.relay.literals import lift
from gateway.relay.shapes import scan
from gateway.state.statements import split_statements
from tests.support import rawpg

READ = [
    "SELECT abalance FROM pgbench_accounts WHERE aid = 54321;",
    "UPDATE pgbench_accounts SET abalance = abalance + -4163 WHERE aid = 54321;",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 77, 12, CURRENT_TIMESTAMP);",
    "  SELECT x FROM t WHERE a >= 1.5e3 AND b < 99999999999 ; ",
    "SELECT c1 FROM t2 WHERE v = 2.",
    "SELECT id FROM t WHERE id = 3000000000",
    # Quoted identifiers, kept whole: a digit inside one is no number.
    'SELECT "x" FROM t WHERE id = 1',
    'SELECT abalance FROM "pg"."pgbench_accounts" WHERE aid = 5',
    'SELECT "c1", "2", "a b 3", "x""4" FROM "t5" WHERE "id" = 6',
]
UNREAD = [
    "SELECT 'a' FROM t WHERE id = 1",
    'SELECT x FROM "t WHERE id = 1',  # a quoted identifier left open
    'SELECT x FROM "a;b" WHERE id = 1',
    "SELECT x FROM t WHERE id = 1 -- note",
    "SELECT x FROM t /* c */ WHERE id = 1",
    "SELECT x FROM t WHERE id = $1",
    "SELECT x FROM t WHERE j ? 'k' AND id = 1",
    "SELECT 1; SELECT 2",
    "SELECT x FROM t WHERE id = ١",
    "SELECT x FROM t",  # no numbers: nothing to lift
    "SELECT E'\\n' FROM t WHERE id = 1",
]


@pytest.mark.parametrize("text", READ)
def test_a_read_text_splits_as_the_slow_path(text: str) -> None:
    sql, shape, numbers = quick_split(text)
    assert [sql] == split_statements(text)
    found = scan(sql)
    assert shape == found.shape
    assert numbers == [sql[a:b] for a, b in found.numbers]
    lifted = lift(sql)
    assert lifted is not None
    assert parameter_types(numbers) == lifted.oids
    statement = RemoteStatement("fg_7", lifted.oids, None)
    assert bound_request(statement, numbers) == lifted_execute("fg_7", lifted)


@pytest.mark.parametrize("text", READ)
def test_the_split_of_bytes_is_the_split_of_text(text: str) -> None:
    """The lane splits a Query's bytes (`quick_split_bytes`); `_remember` keys the
    shape from its text: the two must agree, and so must the Binds they send."""
    sql, shape, numbers = quick_split(text)
    assert quick_split_bytes(text.encode()) == (sql.encode(), shape.encode(),
                                                [n.encode() for n in numbers])
    statement = RemoteStatement("fg_7", parameter_types(numbers), None)
    hot = KeptQuery(None, False, "", "", "", 0, False, ("", ()))
    head = hot.bind_head(statement.name, len(numbers))
    assert quick_bind(head, [n.encode() for n in numbers], BOUND_TAIL) == bound_request(
        statement, numbers)
    assert hot.bind_head("fg_8", len(numbers)) != head


@pytest.mark.parametrize("text", UNREAD)
def test_other_texts_take_the_slow_path(text: str) -> None:
    assert quick_split(text) is None
    assert quick_split_bytes(text.encode()) is None


def test_bytes_strip_what_text_strips() -> None:
    """str.strip() also strips the ASCII separators \\x1c-\\x1f; bytes.strip() would not."""
    text = "\x1fSELECT x FROM t WHERE id = 1\x1c ;\x1d"
    sql, shape, _ = quick_split(text)
    assert quick_split_bytes(text.encode())[:2] == (sql.encode(), shape.encode())


def run(values: list[bytes | None], name: str = "s1", formats: list[int] | None = None) -> bytes:
    return (rawpg.bind("", name, values, result_formats=formats or []) + rawpg.describe("P")
            + rawpg.execute() + rawpg.sync())


def key_of(data: bytes) -> bytes:
    end = 1 + int.from_bytes(data[1:5], "big")
    keyed = run_key_of(data, 0, end, len(data))
    assert keyed is not None
    return keyed[0]


def test_a_run_key_ignores_the_values_only() -> None:
    base = key_of(run([b"1", b"abc"]))
    assert key_of(run([b"123456", None])) == base
    assert key_of(run([b"1", b"abc"], name="s2")) != base
    assert key_of(run([b"1", b"abc"], formats=[1])) != base
    assert key_of(run([b"1"])) != base


def test_a_bind_that_does_not_add_up_is_refused() -> None:
    data = run([b"1", b"abc"])
    end = 1 + int.from_bytes(data[1:5], "big")
    assert run_key_of(data, 0, end - 3, len(data)) is None
    assert run_key_of(b"B\0\0\0\x06\0\0", 0, 7, 7) is None
