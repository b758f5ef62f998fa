"""json_build_array()/json_build_object() and the jsonb forms written as PostgreSQL's text
(connectors/dialects/duckdb/json_build.py); tests/conformance compares the engine's
answers with a running PostgreSQL."""

from __future__ import annotations

import pytest

from tests.support.planning import engine_answer


@pytest.mark.parametrize(("sql", "text"), [
    ("select json_build_array(1, 'a', NULL)", '[1, "a", null]'),
    ("select json_build_object('a', 1, 'b', NULL)", '{"a" : 1, "b" : null}'),
    ("select json_build_object('é\"', 'ü', 't', true)", '{"é\\"" : "ü", "t" : true}'),
    ("select json_build_array(1.50, false)", "[1.50, false]"),
    ("select json_build_array()", "[]"),
    ("select json_build_object()", "{}"),
])
def test_the_text_postgresql_writes(sql: str, text: str) -> None:
    assert engine_answer(sql) == [(text,)]


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("select json_build_object('a')", "22023"),
    ("select json_build_object(1, 2)", "0A000"),  # a key that is not a string constant
    ("select json_build_array(1.5::float8)", "0A000"),
])
def test_errors_and_refusals(sql: str, sqlstate: str) -> None:
    answer = engine_answer(sql)
    assert isinstance(answer, tuple) and answer[0] == sqlstate, answer
