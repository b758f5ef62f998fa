"""A guard of constants that cannot fail is left out of the DuckDB SQL; any other stays, and
PostgreSQL's error is still raised (connectors.dialects.duckdb.constant_checks)."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.dialects.duckdb import to_duckdb
from tests.support.planning import engine_answer


def rendered(sql: str) -> str:
    return to_duckdb(annotate_types(sqlglot.parse_one(sql, read="postgres")))


@pytest.mark.parametrize("sql", [
    "SELECT substring('apple' FROM 1 FOR 0)",
    "SELECT substring(s FROM 1 FOR 2) FROM t",  # 0 < 0 AND s IS NOT NULL: false whatever s is
    "SELECT substring(s FROM 0 FOR 3) FROM t",
])
def test_a_guard_that_cannot_fail_is_left_out(sql: str) -> None:
    assert "error(" not in rendered(sql).lower()


@pytest.mark.parametrize("sql", [
    "SELECT substring('apple' FROM 1 FOR -1)",  # raises: kept, raised when run
    "SELECT substring(s FROM 1 FOR n) FROM t",  # reads a column whose sign is not known
])
def test_a_guard_that_may_fail_stays(sql: str) -> None:
    assert "error(" in rendered(sql).lower()


def test_the_error_is_still_postgresqls() -> None:
    assert engine_answer("SELECT substring('apple' FROM 1 FOR -1)") == (
        "22011", "negative substring length not allowed")


def test_a_window_partitioned_by_a_constant_call_is_answered() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (f int, s text)")
    con.execute("INSERT INTO t VALUES (1, 'a'), (3, 'b')")
    sql = rendered("SELECT max(t.f) OVER (PARTITION BY substring('apple' FROM 1 FOR 0) "
                   "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t")
    assert sorted(con.sql(sql).fetchall()) == [(1,), (3,)]
