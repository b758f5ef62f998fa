"""sqrt/exp/ln/log of a numeric column as PostgreSQL computes them
(connectors/dialects/duckdb/numeric_calls.py); tests/conformance compares the engine's
answers with a running PostgreSQL."""

from __future__ import annotations

import pytest
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.base import CLIENT_OUTPUTS, NUMERIC_OUTPUTS
from connectors.dialects.duckdb import to_duckdb
from connectors.dialects.duckdb.numeric_calls import NUMERIC_CALL_FUNCTION, numeric_call
from pgwire.errors import PgError
from planner.parse import parse_query

CALLED = NUMERIC_CALL_FUNCTION.upper()  # as DuckDB's SQL spells a function
SCHEMA = {"t": {"n": "DECIMAL(10, 2)", "i": "INT", "f": "DOUBLE"}}


def render(sql: str, numeric_outputs: frozenset[int] = frozenset({0})) -> str:
    tree = annotate_types(parse_query(sql), schema=SCHEMA)
    tree.meta[CLIENT_OUTPUTS] = True
    tree.meta[NUMERIC_OUTPUTS] = numeric_outputs
    return to_duckdb(tree)


@pytest.mark.parametrize(("args", "expected"), [
    (("sqrt", "200", 2, None, 0), "1.414213562373095"),
    (("exp", "250", 2, None, 0), "12.182493960703473"),
    (("ln", "250", 2, None, 0), "0.9162907318741551"),
    (("log", "8", 0, "2", 0), "3.0000000000000000"),
    (("log", "1234", 2, "10", 0), "1.0913151596972229"),
    (("sqrt", None, 2, None, 0), None),
    (("log", "8", 0, None, 0), None),
    (("power", "250", 2, "3", 0), "15.6250000000000000"),
    (("power", "2", 0, "25", 1), "5.6568542494923802"),
])

def test_the_registered_function_answers_postgresql_s_text(args: tuple, expected: str | None) -> None:
    assert numeric_call(*args) == expected


def test_a_value_it_cannot_compute_as_postgresql_raises_0a000() -> None:
    with pytest.raises(ValueError, match="not supported by fedgate outside PostgreSQL sources"):
        numeric_call("power", "5", 1, "17", 0)  # 0.5 ^ 17 lies exactly between two values


def test_power_of_a_numeric_column_and_of_an_integer_one() -> None:
    assert CALLED in render("SELECT power(t.n, 2) FROM t")
    assert CALLED in render("SELECT power(2, t.n) FROM t")
    assert CALLED not in render("SELECT power(t.i, 2) FROM t")  # the float8 function


def test_an_output_becomes_the_checked_call() -> None:
    sql = render("SELECT sqrt(t.n) FROM t")
    assert CALLED in sql
    assert "cannot take square root of a negative number" in sql


def test_log_of_an_integer_column_is_numeric_with_a_constant_base() -> None:
    assert CALLED in render("SELECT log(2, t.i) FROM t")


@pytest.mark.parametrize("sql", ["SELECT sqrt(t.f) FROM t", "SELECT sqrt(t.i) FROM t"])
def test_float8_calls_are_not_rewritten(sql: str) -> None:
    assert CALLED not in render(sql)


def test_an_output_not_typed_numeric_stays_refused() -> None:
    with pytest.raises(PgError, match="not supported by fedgate"):
        render("SELECT ln(t.n) FROM t", frozenset())


@pytest.mark.parametrize("sql", ["SELECT log(t.i, t.n) FROM t",  # a base that is not a constant
                                 "SELECT log(1, t.n) FROM t",  # base 1: division by zero
                                 "SELECT sqrt(t.n) AS r FROM t ORDER BY r",  # compared
                                 "SELECT sqrt(t.n) + 1 FROM t"])  # inside an expression
def test_the_others_stay_refused(sql: str) -> None:
    with pytest.raises(PgError, match="not supported by fedgate"):
        render(sql)
