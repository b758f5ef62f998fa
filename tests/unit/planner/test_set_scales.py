"""planner.set_scales: a set operation column joining numerics of different display scales
is refused, or, in a top-level UNION ALL, written as each value's text at its own scale
(tests/integration/test_result_types_vs_postgres.py runs it against PostgreSQL)."""

from __future__ import annotations

import pytest
from sqlglot import parse_one
from sqlglot.schema import MappingSchema

from pgwire.errors import PgError
from planner.set_scales import set_scales

SCHEMA = MappingSchema({"s": {"t": {"id": "INT", "k": "BIGINT", "n": "DECIMAL(10, 2)", "m": "DECIMAL(12, 2)",
                                    "f": "DOUBLE"}}})


@pytest.mark.parametrize(("sql", "words"), [
    ("SELECT n FROM s.t UNION ALL SELECT id FROM s.t ORDER BY 1", "UNION ALL of a numeric of scale 2 and an "
                                                                  "integer in column 1"),
    ("SELECT x FROM (SELECT n AS x FROM s.t UNION ALL SELECT id FROM s.t) q", "UNION ALL of a numeric of scale 2"),
    ("SELECT round(n, 1) FROM s.t UNION ALL SELECT id FROM s.t", "UNION ALL of a numeric of scale 1"),
    ("SELECT id, n FROM s.t INTERSECT SELECT id, 1.5 FROM s.t", "INTERSECT of a numeric of scale 2 and a numeric "
                                                              "of scale 1 in column 2"),
    ("SELECT 1 EXCEPT SELECT 2.5", "EXCEPT of an integer and a numeric of scale 1"),
    ("SELECT id FROM s.t EXCEPT ALL SELECT n FROM s.t", "EXCEPT ALL of an integer and a numeric of scale 2"),
    ("SELECT count(*) FROM (SELECT n / 3 FROM s.t UNION SELECT n / 7 FROM s.t) AS q", "per-value scale"),
])
def test_mixed_scales_are_refused(sql: str, words: str) -> None:
    with pytest.raises(PgError) as caught:
        set_scales(parse_one(sql, read="postgres"), SCHEMA)
    assert caught.value.sqlstate == "0A000" and words in str(caught.value)


@pytest.mark.parametrize("sql", [
    "SELECT id FROM s.t UNION SELECT k FROM s.t",  # integers alone
    "SELECT n FROM s.t UNION ALL SELECT m FROM s.t",  # one scale
    "SELECT f FROM s.t UNION SELECT n FROM s.t",  # float8
    "SELECT 'a' UNION SELECT 'b'",
    "SELECT n FROM s.t EXCEPT SELECT id FROM s.t",  # left rows only, at the larger scale
])
def test_one_scale_is_left_alone(sql: str) -> None:
    set_scales(parse_one(sql, read="postgres"), SCHEMA)


def test_a_top_level_union_all_shows_each_value_at_its_own_scale() -> None:
    tree = parse_one("SELECT 'a', sum(n) AS total FROM s.t UNION ALL SELECT 'b', count(*) FROM s.t "
                     "UNION ALL SELECT 'c', 1.5 ORDER BY 1", read="postgres")
    set_scales(tree, SCHEMA)
    assert tree.sql("postgres") == (
        "SELECT 'a', CAST(CAST(SUM(n) AS DECIMAL(38, 2)) AS TEXT) AS total FROM s.t UNION ALL "
        "SELECT 'b', CAST(CAST(COUNT(*) AS DECIMAL(38, 0)) AS TEXT) FROM s.t UNION ALL "
        "SELECT 'c', CAST(CAST(1.5 AS DECIMAL(38, 1)) AS TEXT) ORDER BY 1")
