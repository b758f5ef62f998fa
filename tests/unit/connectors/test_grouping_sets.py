"""GROUP BY DISTINCT written out for DuckDB as the grouping sets PostgreSQL keeps, and
positions inside grouping sets as the outputs they name (connectors.dialects.grouping_sets).
The differential suite (tests/conformance, "grouping sets" and "generated findings") checks
the answers against PostgreSQL; this pins the rewrites."""

from __future__ import annotations

import pytest
import sqlglot

from connectors.dialects.grouping_sets import (distinct_grouping_sets, has_set_positions,
                                               named_set_positions, needs_rewrite)

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


POSITIONS = [
    ("SELECT 2, t.d FROM t GROUP BY GROUPING SETS (2, t.d)",
     "SELECT 2, t.d FROM t GROUP BY GROUPING SETS (t.d, t.d)"),
    ("SELECT a + 1 AS x, b FROM t GROUP BY ROLLUP ((1, 2)), CUBE (2)",
     "SELECT a + 1 AS x, b FROM t GROUP BY ROLLUP ((a + 1, b)), CUBE (b)"),
    ("SELECT a, b FROM t GROUP BY GROUPING SETS ((1), ROLLUP (2), GROUPING SETS (1))",
     "SELECT a, b FROM t GROUP BY GROUPING SETS ((a), ROLLUP (b), GROUPING SETS (a))"),
    # a constant stays a position (written out it would be read as one); so does a
    # position at the top of GROUP BY (qualify's) and one inside an expression
    ("SELECT 2, -1, a FROM t GROUP BY GROUPING SETS (1, 2, 3), 1, a + 1",
     "SELECT 2, -1, a FROM t GROUP BY GROUPING SETS (1, 2, a), 1, a + 1"),
]


@pytest.mark.parametrize("sql, expected", POSITIONS)
def test_positions_in_grouping_sets_name_their_outputs(sql: str, expected: str) -> None:
    tree = sqlglot.parse_one(sql, read="postgres")
    assert has_set_positions(tree)
    assert tree.transform(named_set_positions).sql("postgres") == expected


def test_positions_of_a_star_are_left_to_the_engine() -> None:
    tree = sqlglot.parse_one("SELECT *, count(*) FROM u GROUP BY GROUPING SETS (2, u.name)", read="postgres")
    assert tree.transform(named_set_positions).sql("postgres") == tree.sql("postgres")


def test_a_group_by_without_grouping_sets_has_no_set_positions() -> None:
    assert not has_set_positions(sqlglot.parse_one("SELECT a FROM t GROUP BY 1, a + 2", read="postgres"))
