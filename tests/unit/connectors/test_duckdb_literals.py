"""What the DuckDB renderer makes of numeric constants beyond its 38 digits, float4
arithmetic and float constants cast to numeric, and least()/greatest() of mixed scales
(tests/integration/test_result_types_vs_postgres.py compares the answers with PostgreSQL)."""

from __future__ import annotations

import pytest
from sqlglot import parse_one
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.dialects.duckdb import to_duckdb
from pgwire.errors import PgError


def render(sql: str) -> str:
    return to_duckdb(annotate_types(parse_one(sql, read="postgres"), schema={"t": {"f": "DOUBLE", "r": "REAL"}}))


@pytest.mark.parametrize(("sql", "piece"), [
    ("SELECT 1e308::float8", "1e308"),  # PostgreSQL's float8 too
    ("SELECT 1e308 * CAST('Infinity' AS float8)", "1e308"),
    ("SELECT 1e300 + t.f FROM t", "1e300"),
    ("SELECT sin(1e300)", "1e300"),
    ("SELECT 1e308::text", "'1" + "0" * 308 + "'"),
    ("SELECT 1.5e2::text", "'150'"),
    ("SELECT 2.5e0::int4", "CAST('2.5' AS DECIMAL(2, 1))"),
    ("SELECT 1e3::numeric", "CAST(1000 AS DECIMAL(4, 0))"),
    ("SELECT 1.5::float4 / 3", "CAST(CAST(1.5 AS REAL) AS DOUBLE)"),
    ("SELECT t.r * 2 FROM t", "CAST(t.r AS DOUBLE) * 2"),
    ("SELECT 1.5::float4::numeric", "CAST('1.5' AS DECIMAL(2, 1))"),
    ("SELECT 0.1::float4::float8::numeric", "CAST('0.100000001490116' AS DECIMAL(15, 15))"),
    ("SELECT least(1, 2.5)", "CAST('1' AS DECIMAL(1, 0))"),
    ("SELECT greatest(1.50, 1, NULL)", "CAST('1.50' AS DECIMAL(3, 2))"),
])
def test_rendered(sql: str, piece: str) -> None:
    assert piece in render(sql)


@pytest.mark.parametrize(("sql", "words"), [
    # computed when planned (connectors.dialects.duckdb.constant_numerics): too wide for
    # the engine where no client output may carry it as text
    ("SELECT 1e308 / -1", "the numeric constant 1" + "0" * 308 + " "),  # -(that)
    ("SELECT 1e308::numeric + 1", "the numeric constant 1" + "0" * 307 + "1 "),
    ("SELECT 1e308 + t.f::numeric FROM t", "the numeric constant 1e308"),
    ("SELECT 12345678901234567890123456789012345678901234567890", "more than 38 digits"),
    ("SELECT t.r::numeric FROM t", "real (float4) value to numeric"),
    ("SELECT least(t.r::numeric(5, 2), 2.5, 1) FROM t", "least() of numbers of different scales"),
])
def test_refused(sql: str, words: str) -> None:
    with pytest.raises(PgError) as caught:
        render(sql)
    assert caught.value.sqlstate == "0A000" and words in str(caught.value)


def test_a_huge_constant_over_zero_divides_by_zero() -> None:
    assert "1e308" not in render("SELECT 1e308 % 0")
