"""stddev/variance of integers and numerics as numeric.c computes them
(connectors/dialects/duckdb/deviations.py). The expected texts are PostgreSQL 15's; a
run of 1,500 random sets (scales 0-9, up to 30 values of up to 15 digits) against a real
PostgreSQL matched in all four functions when this was written, and the conformance suite
compares the engine's answers with PostgreSQL's."""

from __future__ import annotations

import pytest
from sqlglot import parse_one
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.base import CLIENT_OUTPUTS, NUMERIC_OUTPUTS
from connectors.dialects.duckdb import to_duckdb
from connectors.dialects.duckdb.deviations import DEVIATION_FUNCTION, deviation
from connectors.duckdb.runner import DuckDBRunner
from pgwire.errors import PgError


def of(kind: str, values: list[int], scale: int) -> str | None:
    return deviation(kind, len(values), str(sum(values)), str(sum(v * v for v in values)), scale)


@pytest.mark.parametrize(("kind", "values", "scale", "expected"), [
    # (1.50, 2.25, 3.00)
    ("var_samp", [150, 225, 300], 2, "0.56250000000000000000"),
    ("var_pop", [150, 225, 300], 2, "0.37500000000000000000"),
    ("stddev_samp", [150, 225, 300], 2, "0.75000000000000000000"),
    ("stddev_pop", [150, 225, 300], 2, "0.61237243569579452455"),
    # (1, 2, 3, 4)
    ("var_samp", [1, 2, 3, 4], 0, "1.6666666666666667"),
    ("stddev_samp", [1, 2, 3, 4], 0, "1.2909944487358056"),
    ("stddev_pop", [1, 2, 3, 4], 0, "1.1180339887498948"),
    ("var_samp", [7, 7, 7], 0, "0"),
    ("stddev_pop", [5], 0, "0"),
    ("var_samp", [5], 0, None),
    ("stddev_pop", [], 0, None),
])
def test_deviations_as_postgresql_computes_them(kind: str, values: list[int], scale: int,
                                                expected: str | None) -> None:
    assert of(kind, values, scale) == expected


def render(sql: str, numeric_outputs: frozenset[int]) -> str:
    tree = annotate_types(parse_one(sql, read="postgres"), schema={"t": {"g": "INT", "n": "DECIMAL(10, 2)"}})
    tree.meta[CLIENT_OUTPUTS] = True
    tree.meta[NUMERIC_OUTPUTS] = numeric_outputs
    return to_duckdb(tree)


def test_an_output_runs_in_duckdb_through_the_runners_function() -> None:
    runner = DuckDBRunner.open()
    runner.query_sync("CREATE TABLE t AS SELECT (x % 2)::INT AS g, (x * 0.75)::DECIMAL(10, 2) AS n "
                      "FROM range(5) r(x)")
    sql = render("SELECT t.g AS g, stddev(t.n) FILTER (WHERE t.n > 0) AS s, var_pop(t.n) AS v FROM t "
                 "GROUP BY t.g ORDER BY t.g", frozenset({1, 2}))
    assert DEVIATION_FUNCTION.upper() in sql
    # g = 0: 0.00, 1.50, 3.00; g = 1: 0.75, 2.25
    assert runner.query_sync(sql).to_pylist() == [
        {"g": 0, "s": "1.06066017177982128660", "v": "1.5000000000000000"},
        {"g": 1, "s": "1.06066017177982128660", "v": "0.56250000000000000000"}]


def test_inside_an_expression_it_stays_refused() -> None:
    with pytest.raises(PgError) as caught:
        render("SELECT stddev(t.n) + 1 FROM t", frozenset({0}))
    assert caught.value.sqlstate == "0A000"


@pytest.mark.parametrize("sql", [
    "SELECT t.g, stddev(t.n) AS s FROM t GROUP BY t.g ORDER BY s",
    "SELECT t.g, stddev(t.n) FROM t GROUP BY t.g ORDER BY 2 DESC",
    "SELECT DISTINCT stddev(t.n) FROM t GROUP BY t.g",
])
def test_an_output_the_statement_compares_stays_refused(sql: str) -> None:
    """Its text would sort as text: '10.5' before '9.5'."""
    position = 1 if sql.startswith("SELECT DISTINCT") else 2
    with pytest.raises(PgError) as caught:
        render(sql, frozenset({position - 1}))
    assert caught.value.sqlstate == "0A000"
