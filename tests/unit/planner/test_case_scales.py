"""planner.case_scales: a shown CASE or coalesce() joining numerics of different display
scales is refused (tests/integration/test_engine_answers_vs_postgres.py runs it against
PostgreSQL); where only its number counts it is left alone."""

from __future__ import annotations

import pytest
from sqlglot import parse_one
from sqlglot.schema import MappingSchema

from pgwire.errors import PgError
from planner.case_scales import case_scales

SCHEMA = MappingSchema({"s": {"t": {"id": "INT", "k": "BIGINT", "n": "DECIMAL(10, 2)",
                                    "m": "DECIMAL(12, 2)", "f": "DOUBLE", "b": "BOOLEAN"}}})


@pytest.mark.parametrize("sql", [
    "SELECT CASE WHEN b THEN n ELSE 0 END FROM s.t",
    "SELECT CASE WHEN b THEN 1 ELSE 2.5 END FROM s.t",
    "SELECT coalesce(n, 0) FROM s.t",
    "SELECT sum(CASE WHEN b THEN n ELSE 0 END) FROM s.t",
    "SELECT CASE WHEN b THEN n ELSE 0 END + 1 FROM s.t",
    "SELECT (CASE WHEN b THEN n ELSE 0 END)::text FROM s.t",
    "SELECT max(coalesce(n, 1)) FROM s.t",
])
def test_shown_mixed_scales_are_refused(sql: str) -> None:
    with pytest.raises(PgError) as caught:
        case_scales(parse_one(sql, read="postgres"), SCHEMA)
    assert caught.value.sqlstate == "0A000" and "own scale" in str(caught.value)


@pytest.mark.parametrize("sql", [
    "SELECT CASE WHEN b THEN n ELSE m END FROM s.t",  # one scale
    "SELECT CASE WHEN b THEN id ELSE k END FROM s.t",  # integers alone
    "SELECT CASE WHEN b THEN n END, coalesce(n, 0.00) FROM s.t",  # NULL has no scale
    "SELECT CASE WHEN b THEN f ELSE 0 END FROM s.t",  # float8
    "SELECT sum(CASE WHEN b THEN n ELSE 0 END) / count(*) FROM s.t",  # a quotient's own scale
    "SELECT count(*) FROM s.t WHERE CASE WHEN b THEN n ELSE 0 END > 1",
    "SELECT CASE WHEN b THEN n ELSE 0 END > 1, avg(coalesce(n, 0)) FROM s.t",
    "SELECT CASE WHEN b THEN n ELSE 0 END::numeric(10, 2), coalesce(n, 0)::int FROM s.t",
    "SELECT CASE WHEN coalesce(n, 0) > 1 THEN 'x' END FROM s.t",  # a condition
])
def test_numbers_that_only_count_are_left_alone(sql: str) -> None:
    case_scales(parse_one(sql, read="postgres"), SCHEMA)
