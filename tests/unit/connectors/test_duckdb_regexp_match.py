"""regexp_match() and regexp_matches() written out for DuckDB
(connectors/dialects/duckdb/regexp_match.py); tests/conformance compares the engine's
answers with a running PostgreSQL."""

from __future__ import annotations

import pytest
from sqlglot import parse_one
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.dialects.duckdb import to_duckdb
from connectors.dialects.duckdb.regexp_match import capturing_groups
from pgwire.errors import PgError
from tests.support.planning import engine_answer


@pytest.mark.parametrize(("pattern", "groups"), [
    ("b", 0), ("x*", 0), ("[a-c]", 0), ("(b)(c)?", 2), ("(A),", 1), (r"(\d+)-(\w)", 2),
    ("([)])", 1), ("((a)b)", 2), ("([[:alpha:]]+)", 1),
    # a group that may match nothing, or a construct not read: None
    ("(c*)", None), ("(a|b)", None), ("(?:a)", None), (r"(a)\1", None), (r"(\y)", None), ("(a", None),
])
def test_groups_that_surely_match_a_character(pattern: str, groups: int | None) -> None:
    assert capturing_groups(pattern) == groups


@pytest.mark.parametrize(("sql", "answer"), [
    ("select regexp_match('abc', '(b)(c)?')", [(["b", "c"],)]),
    ("select regexp_match('abd', '(b)(c)?')", [(["b", None],)]),
    ("select regexp_match('xyz', '(b)(c)?')", [(None,)]),
    ("select regexp_match('abc', 'x*')", [([""],)]),
    ("select regexp_match('aBc', 'b', 'i')", [(["B"],)]),
    ("select regexp_matches(s, 'b', 'g') from (select 'abcb' as s) as x", [(["b"],), (["b"],)]),
    ("select regexp_matches(s, '(b)(c)?') from (select 'abd' as s) as x", [(["b", None],)]),
    ("select regexp_matches(s, 'b') from (select 'xyz' as s) as x", []),
])
def test_answers(sql: str, answer: list) -> None:
    assert engine_answer(sql) == answer


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("select regexp_match('abc', 'b', 'g')", "22023"),
    ("select regexp_match('abc', '(c*)')", "0A000"),
    ("select regexp_match('abc', 'é', 'i')", "0A000"),
    ("select regexp_matches(s, 'x*', 'g') from (select 'abc' as s) as x", "0A000"),
    ("select regexp_matches(s, '(a)(b)', 'g') from (select 'abc' as s) as x", "0A000"),
    ("select regexp_matches(s, 'a') is null from (select 'abc' as s) as x", "0A000"),
    ("select count(regexp_matches(s, 'a')) from (select 'abc' as s) as x", "0A000"),
])
def test_refusals_and_errors(sql: str, sqlstate: str) -> None:
    with pytest.raises(PgError) as raised:
        to_duckdb(annotate_types(parse_one(sql, read="postgres")))
    assert raised.value.sqlstate == sqlstate
