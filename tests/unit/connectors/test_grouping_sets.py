"""GROUP BY DISTINCT written out for DuckDB as the grouping sets PostgreSQL keeps
(connectors.dialects.grouping_sets). The differential suite (tests/conformance,
"grouping sets") checks the answers against PostgreSQL; this pins the expansion."""

from __future__ import annotations

import pytest
import sqlglot

from connectors.dialects.grouping_sets import distinct_grouping_sets, needs_rewrite

CASES = [
    ("ROLLUP (a, b), ROLLUP (a)", "GROUPING SETS ((a, b), (a), ())"),
    ("a, ROLLUP (b)", "GROUPING SETS ((a, b), (a))"),
    ("CUBE (a, b)", "GROUPING SETS ((a, b), (a), (b), ())"),
    ("CUBE (a), CUBE ((b, c))", "GROUPING SETS ((a, b, c), (a), (b, c), ())"),
    ("GROUPING SETS ((a, b), (b, a), a, (a), ())", "GROUPING SETS ((a, b), (a), ())"),
    ("GROUPING SETS (a, ROLLUP (b))", "GROUPING SETS ((a), (b), ())"),
    ("ROLLUP ((a, b))", "GROUPING SETS ((a, b), ())"),
    ("(a, b)", "GROUPING SETS ((a, b))"),
    ("GROUPING SETS (())", "GROUPING SETS (())"),
]


@pytest.mark.parametrize("group_by, expected", CASES)
def test_distinct_sets_in_postgresql_order(group_by: str, expected: str) -> None:
    tree = sqlglot.parse_one(f"SELECT count(*) FROM t GROUP BY DISTINCT {group_by}", read="postgres")
    assert needs_rewrite(tree)
    rewritten = tree.transform(distinct_grouping_sets)
    assert not needs_rewrite(rewritten)
    assert rewritten.sql("duckdb") == f"SELECT COUNT(*) FROM t GROUP BY {expected}"


def test_a_group_by_without_distinct_is_left_alone() -> None:
    tree = sqlglot.parse_one("SELECT count(*) FROM t GROUP BY ROLLUP (a), ROLLUP (a)", read="postgres")
    assert not needs_rewrite(tree)
    assert tree.transform(distinct_grouping_sets).sql("postgres") == tree.sql("postgres")
