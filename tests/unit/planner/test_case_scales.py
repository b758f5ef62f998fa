"""planner.case_scales: a shown CASE or coalesce() joining numerics of different display
scales is refused, or, as an output of the statement, shown as its values' texts
(tests/integration/test_engine_answers_vs_postgres.py runs it against PostgreSQL); where
only its number counts it is left alone."""

from __future__ import annotations

import pytest
from sqlglot import parse_one
from sqlglot.schema import MappingSchema

from pgwire.errors import PgError
from planner.case_scales import case_scales

SCHEMA = MappingSchema({"s": {"t": {"id": "INT", "k": "BIGINT", "n": "DECIMAL(10, 2)",
                                    "m": "DECIMAL(12, 2)", "f": "DOUBLE", "b": "BOOLEAN"}}})


@pytest.mark.parametrize("sql", [
    "SELECT CASE WHEN b THEN n ELSE 0 END AS c FROM s.t ORDER BY c",  # sorted by: text would
    "SELECT DISTINCT coalesce(n, 0) FROM s.t",
    "SELECT coalesce(n, 0) FROM s.t GROUP BY coalesce(n, 0)",
    "SELECT coalesce(round(n, 1), 0) FROM s.t",  # a function: the engine may compute a double
    "SELECT coalesce(n / 3, 0) FROM s.t",  # a quotient's scale is per value
    "SELECT x FROM (SELECT coalesce(n, 0) AS x FROM s.t) q",
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
    tree = parse_one(sql, read="postgres")
    case_scales(tree, SCHEMA)
    assert tree == parse_one(sql, read="postgres")


@pytest.mark.parametrize(("sql", "shown"), [
    ("SELECT CASE WHEN b THEN n ELSE 0 END FROM s.t",
     "SELECT CASE WHEN b THEN CAST(CAST(n AS DECIMAL(38, 2)) AS TEXT) "
     "ELSE CAST(CAST(0 AS DECIMAL(38, 0)) AS TEXT) END FROM s.t"),
    ("SELECT CASE WHEN b THEN 1 ELSE 2.5 END FROM s.t",
     "SELECT CASE WHEN b THEN CAST(CAST(1 AS DECIMAL(38, 0)) AS TEXT) "
     "ELSE CAST(CAST(2.5 AS DECIMAL(38, 1)) AS TEXT) END FROM s.t"),
    ("SELECT id, coalesce(sum(n), 0) AS total FROM s.t GROUP BY id ORDER BY id",
     "SELECT id, COALESCE(CAST(CAST(SUM(n) AS DECIMAL(38, 2)) AS TEXT), "
     "CAST(CAST(0 AS DECIMAL(38, 0)) AS TEXT)) AS total FROM s.t GROUP BY id ORDER BY id"),
    ("SELECT coalesce(NULLIF(n, 0) * 2, k, NULL) FROM s.t",
     "SELECT COALESCE(CAST(CAST(NULLIF(n, 0) * 2 AS DECIMAL(38, 2)) AS TEXT), "
     "CAST(CAST(k AS DECIMAL(38, 0)) AS TEXT), NULL) FROM s.t"),
])
def test_an_output_of_mixed_scales_is_shown_at_each_values_scale(sql: str, shown: str) -> None:
    tree = parse_one(sql, read="postgres")
    case_scales(tree, SCHEMA)
    assert tree.sql("postgres") == parse_one(shown, read="postgres").sql("postgres")
