"""Multidimensional array literals on DuckDB: full subscripts are answered, the uses where
DuckDB's list of lists answers otherwise than PostgreSQL's one array are refused (the
answers are compared with PostgreSQL by the conformance suite)."""

import duckdb
import pytest
import sqlglot

from connectors.dialects.duckdb import to_duckdb
from pgwire.errors import PgError


def _render(sql: str) -> str:
    return to_duckdb(sqlglot.parse_one(sql, read="postgres"))


def test_a_full_subscript_is_answered() -> None:
    assert duckdb.sql(_render("SELECT (ARRAY[[1, 2], [3, 4]])[2][1], (ARRAY[3, 1])[1]")).fetchall() == [(3, 3)]


@pytest.mark.parametrize("sql", [
    "SELECT (ARRAY[[1, 2], [3, 4]])[1]",
    "SELECT (ARRAY[[1, 2], [3, 4]])[1:2][1]",
    "SELECT 2 = ANY (ARRAY[[1, 2], [3, 4]])",
    "SELECT 2 < ALL (ARRAY[[1, 2], [3, 4]])",
    "SELECT unnest(ARRAY[[1, 2], [3, 4]])",
])
def test_partial_uses_are_refused(sql: str) -> None:
    with pytest.raises(PgError) as caught:
        _render(sql)
    assert caught.value.sqlstate == "0A000" and "multidimensional array" in caught.value.message


def test_empty_and_null_arrays() -> None:
    sql = "SELECT array_length(ARRAY[]::int[], 1), 2 = ANY (NULL::int[]), 2 <> ALL (NULL::int[])"
    assert duckdb.sql(_render(sql)).fetchall() == [(None, None, None)]


def test_subscripts_outside_the_array_are_null() -> None:
    """PostgreSQL's one-dimensional array is indexed 1..n: 0 and a negative index are NULL
    (DuckDB counts those from the end), a slice's bounds are clamped to 1..n."""
    sql = "SELECT (ARRAY[10, 20, 30])[-1], (ARRAY[10, 20, 30])[0], (ARRAY[10, 20, 30])[x], " \
          "(ARRAY[10, 20, 30])[x - 2:2], (ARRAY[10, 20, 30])[-5:-1], (ARRAY[10, 20, 30])[2:], " \
          "(ARRAY[10, 20, 30])[NULL::int], (ARRAY[10, 20, 30])[3] FROM (VALUES (1), (-1)) v(x) ORDER BY x"
    assert duckdb.sql(_render(sql)).fetchall() == [
        (None, None, None, [10, 20], [], [20, 30], None, 30),
        (None, None, 10, [10, 20], [], [20, 30], None, 30)]
