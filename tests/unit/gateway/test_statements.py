"""Splitting simple-query strings and recognising session-level statements."""

from __future__ import annotations

import pytest

from pgwire.errors import PgError
from gateway.session.cursors import forward_count
from gateway.state.statements import Utility, parse_utility, split_statements


@pytest.mark.parametrize(("sql", "expected"), [
    ("select 1", ["select 1"]),
    ("select 1; select 2;", ["select 1", "select 2"]),
    ("select 'a;b'; select \"x;y\" from t", ["select 'a;b'", 'select "x;y" from t']),
    ("select 'it''s;'", ["select 'it''s;'"]),
    ("select E'\\';' ; select 2", ["select E'\\';'", "select 2"]),
    ("select $$;$$; select $tag$ a;$$ $tag$", ["select $$;$$", "select $tag$ a;$$ $tag$"]),
    ("-- a comment; still a comment\nselect 1", ["select 1"]),
    ("/* nested /* ; */ ; */ select 1", ["select 1"]),
    ("", []),
    (" ; ;; -- nothing\n", []),
    ("select $1; select 2", ["select $1", "select 2"]),
])
def test_split_statements(sql: str, expected: list[str]) -> None:
    assert split_statements(sql) == expected


@pytest.mark.parametrize(("sql", "expected"), [
    ("SET extra_float_digits = 3", Utility("set", "extra_float_digits", "3")),
    ("set application_name to 'my app'", Utility("set", "application_name", "my app")),
    ("SET SESSION search_path TO demo, \"Other\"", Utility("set", "search_path", "demo, Other")),
    ("SET LOCAL statement_timeout = '5s'", Utility("set", "statement_timeout", "5s", local=True)),
    ("SET TIME ZONE 'Europe/Paris'", Utility("set", "timezone", "Europe/Paris")),
    ("SET fedgate.engine = 'spark'", Utility("set", "fedgate.engine", "spark")),
    ("RESET ALL", Utility("reset", "all")),
    ("SHOW ALL", Utility("show", "all")),
    ("show TIME ZONE", Utility("show", "timezone")),
    ("BEGIN", Utility("begin")),
    ("START TRANSACTION ISOLATION LEVEL REPEATABLE READ", Utility("begin")),
    ("commit work", Utility("commit")),
    ("END", Utility("commit")),
    ("ABORT", Utility("rollback")),
    ("ROLLBACK TO SAVEPOINT s1", Utility("rollback_to", "s1")),
    ("SAVEPOINT s1", Utility("savepoint", "s1")),
    ("RELEASE s1", Utility("release", "s1")),
    ("DISCARD ALL", Utility("discard", "ALL")),
    ("DEALLOCATE PREPARE stmt", Utility("deallocate", "stmt")),
    ("EXPLAIN ANALYZE SELECT 1", Utility("explain", value="SELECT 1", analyze=True)),
    ("EXPLAIN (VERBOSE) SELECT 1", Utility("explain", value="SELECT 1")),
])
def test_parse_utility(sql: str, expected: Utility) -> None:
    assert parse_utility(sql) == expected


@pytest.mark.parametrize("sql", ["select 1", "settle_up()", "with x as (select 1) select * from x",
                                 "values (1)", "beginning"])
def test_queries_are_not_utilities(sql: str) -> None:
    assert parse_utility(sql) is None


@pytest.mark.parametrize(("sql", "expected"), [
    ("DECLARE c CURSOR FOR SELECT 1", Utility("declare", "c", "SELECT 1")),
    ('declare "Big C" binary no scroll cursor with hold for select * from t where a = $1',
     Utility("declare", "Big C", "select * from t where a = $1", options=frozenset({"BINARY", "HOLD"}))),
    ("DECLARE c SCROLL CURSOR WITHOUT HOLD FOR SELECT 1",
     Utility("declare", "c", "SELECT 1", options=frozenset({"SCROLL"}))),
    ("FETCH c", Utility("fetch", "c", "NEXT")),
    ("fetch from c", Utility("fetch", "c", "NEXT")),
    ("fetch next c", Utility("fetch", "c", "NEXT")),
    ("FETCH FORWARD 100 FROM \"c\"", Utility("fetch", "c", "FORWARD 100")),
    ("fetch forward  all in c;", Utility("fetch", "c", "FORWARD ALL")),
    ("FETCH BACKWARD 2 FROM c", Utility("fetch", "c", "BACKWARD 2")),
    ("MOVE 5 IN c", Utility("move", "c", "5")),
    ("close c", Utility("close", "c")),
    ("CLOSE ALL", Utility("close", None)),
])
def test_parse_cursor_statements(sql: str, expected: Utility) -> None:
    assert parse_utility(sql) == expected


@pytest.mark.parametrize(("direction", "count"), [
    ("NEXT", 1), ("FORWARD", 1), ("7", 7), ("FORWARD 7", 7), ("ALL", 0), ("FORWARD ALL", 0)])
def test_forward_counts(direction: str, count: int) -> None:
    assert forward_count(direction) == count


@pytest.mark.parametrize(("direction", "sqlstate"), [
    ("PRIOR", "55000"), ("BACKWARD 2", "55000"), ("-1", "55000"), ("ABSOLUTE 1", "55000"),
    ("FORWARD -3", "55000"), ("0", "0A000")])
def test_moves_that_are_refused(direction: str, sqlstate: str) -> None:
    with pytest.raises(PgError) as caught:
        forward_count(direction)
    assert caught.value.sqlstate == sqlstate


@pytest.mark.parametrize(("sql", "expected"), [
    ("PREPARE p AS SELECT 1", Utility("prepare", "p", "SELECT 1")),
    ("prepare p(int, numeric(10,2)) as select (1) as x where a = $1",
     Utility("prepare", "p", "select (1) as x where a = $1", args="int, numeric(10,2)", args_at=10)),
    ('PREPARE "Big P" (text) AS UPDATE t SET a = $1;',
     Utility("prepare", "Big P", "UPDATE t SET a = $1", args="text", args_at=17)),
    ("EXECUTE p", Utility("execute", "p")),
    ("execute P (1, 'a, b')", Utility("execute", "p", args="1, 'a, b'", args_at=11)),
])
def test_parse_prepare_and_execute(sql: str, expected: Utility) -> None:
    assert parse_utility(sql) == expected


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("PREPARE TRANSACTION 'x'", "0A000"), ("PREPARE pAS SELECT 1", "42601"), ("EXECUTE", "42601"),
])
def test_prepare_and_execute_outside_their_grammar(sql: str, sqlstate: str) -> None:
    with pytest.raises(PgError) as caught:
        parse_utility(sql)
    assert caught.value.sqlstate == sqlstate
