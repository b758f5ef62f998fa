"""Numeric arithmetic of constants computed when the statement is planned
(connectors/dialects/duckdb/constant_numerics.py): PostgreSQL's values and display scales
(tests/conformance compares the engine's answers with PostgreSQL's)."""

from __future__ import annotations

import pytest
from sqlglot import parse_one
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.base import CLIENT_OUTPUTS, NUMERIC_OUTPUTS
from connectors.dialects.duckdb import to_duckdb
from connectors.dialects.duckdb.constant_numerics import numeric_text, value_of
from planner.parse import parse_query


def value(sql: str) -> str | None:
    found = value_of(parse_one(f"SELECT {sql}", read="postgres").expressions[0])
    return None if found is None else f"{numeric_text(found)} {found[2]}"


@pytest.mark.parametrize(("sql", "expected"), [
    ("12345678901234567890 / 123", "100371373180768845 numeric"),
    ("div(999999999999999999999::numeric, 1e21)", "0 numeric"),
    ("div(-7.5, 2)", "-3 numeric"),
    ("-7.5 % 2", "-1.5 numeric"),
    ("mod(-7.5, 2.25)", "-0.75 numeric"),
    ("1.5 * 2.25 + 1", "4.375 numeric"),
    ("1 / 3.0", "0.33333333333333333333 numeric"),
    ("10.0 / 4", "2.5000000000000000 numeric"),
    ("0.001 / 7", "0.00014285714285714286 numeric"),
    ("1.49 / 2", "0.74500000000000000000 numeric"),
    ("-1.49 / 2", "-0.74500000000000000000 numeric"),
    ("0.0 * -1", "0.0 numeric"),
    ("1e21 + 0", "1000000000000000000000 numeric"),
    ("1.5e-3 * 2", "0.0030 numeric"),
    ("7 / 2", "3 int4"),
    ("-7 % 2", "-1 int4"),
    ("2147483647 + 1::int8", None),  # a cast to int8: the engine's
    ("3000000000 * 2", "6000000000 int8"),
])
def test_values_as_postgresql_computes_them(sql: str, expected: str | None) -> None:
    assert value(sql) == expected


@pytest.mark.parametrize("sql", ["(2147483647 + 1) * 1.5", "9223372036854775807 * 2 + 0.5",
                                 "1 / 0.0", "mod(1.5, 0)", "(-2147483648) / -1 * 1.0", "1.5::numeric(3, 1) * 2"])
def test_errors_and_typmods_are_left_to_the_engine(sql: str) -> None:
    assert value(sql) is None


def render(sql: str, numeric_outputs: frozenset[int] = frozenset()) -> str:
    tree = annotate_types(parse_one(sql, read="postgres"))
    tree.meta[CLIENT_OUTPUTS] = True
    tree.meta[NUMERIC_OUTPUTS] = numeric_outputs
    return to_duckdb(tree)


def test_a_constant_within_the_engine_is_a_decimal_of_its_digits() -> None:
    assert render("SELECT 12345678901234567890 / 123") == \
        "SELECT CAST('100371373180768845' AS DECIMAL(18, 0))"


def test_a_wider_client_output_is_its_numeric_text() -> None:
    product = 4790999999999999999999999999999999 * 9999999999999999999999999
    assert render("SELECT 4790999999999999999999999999999999 * 9999999999999999999999999 AS p",
                  frozenset({0})) == f"SELECT '{product}' AS p"


def planned(sql: str) -> str:
    """As `render`, parsed as the planner parses (which marks log10(x), read as log(10, x))."""
    tree = annotate_types(parse_query(sql))
    tree.meta[CLIENT_OUTPUTS] = True
    tree.meta[NUMERIC_OUTPUTS] = frozenset()
    return to_duckdb(tree)


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT ln(2.5)", "SELECT CAST('0.9162907318741551' AS DECIMAL(16, 16))"),
    ("SELECT log10(2.5), log(2, 8)", "SELECT CAST('0.3979400086720376' AS DECIMAL(16, 16)), "
                                     "CAST('3.0000000000000000' AS DECIMAL(17, 16))"),
    ("SELECT ln(2.5) * 2", "SELECT CAST('1.8325814637483102' AS DECIMAL(17, 16))"),
    ("SELECT power(2, NULL::numeric)", "SELECT CAST(NULL AS DECIMAL(38, 10))"),
])
def test_numeric_functions_of_constants_are_computed(sql: str, expected: str) -> None:
    assert planned(sql) == expected


@pytest.mark.parametrize("sql", ["SELECT ln(2)", "SELECT sqrt(2)", "SELECT log10(100)"])
def test_functions_of_integers_stay_float8_in_the_engine(sql: str) -> None:
    assert "CAST(" not in planned(sql)  # DuckDB's double, PostgreSQL's float8 answer
