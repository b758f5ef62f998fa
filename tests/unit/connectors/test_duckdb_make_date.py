"""make_date() of literal years rendered for DuckDB as PostgreSQL counts years (no year 0);
the answers are checked against PostgreSQL by the conformance suite (make_date(-44, 3, 15))."""

import duckdb
import pytest
import sqlglot

from connectors.dialects.duckdb import to_duckdb
from pgwire.errors import PgError


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT make_date(-44, 3, 15)::text", "0044-03-15 (BC)"),  # DuckDB's own BC text
    ("SELECT make_date(-1, 2, 29)::text", "0001-02-29 (BC)"),  # 1 BC is a leap year
    ("SELECT make_date(2024, 2, 29)::text", "2024-02-29"),
])
def test_bc_years_are_postgresql_years(sql: str, expected: str) -> None:
    assert duckdb.sql(to_duckdb(sqlglot.parse_one(sql, read="postgres"))).fetchall() == [(expected,)]


@pytest.mark.parametrize(("sql", "message"), [
    ("SELECT make_date(2023, 2, 29)", "date field value out of range: 2023-02-29"),
    ("SELECT make_date(0, 3, 15)", "date field value out of range: 0-03-15"),
    ("SELECT to_date('2023-02-29', 'YYYY-MM-DD')", 'date/time field value out of range: "2023-02-29"'),
])
def test_a_day_beyond_its_month_is_postgresqls_error(sql: str, message: str) -> None:
    with pytest.raises(PgError) as caught:
        to_duckdb(sqlglot.parse_one(sql, read="postgres"))
    assert (caught.value.sqlstate, caught.value.message) == ("22008", message)
