"""planner.pass_through: a SELECT that only passes on one derived table's or CTE's rows,
merged into it; any other wrapper left alone (SQL in, SQL out)."""

from __future__ import annotations

import pytest
import sqlglot

from planner.pass_through import pass_through

MERGED = [
    ('SELECT * FROM (SELECT AVG(t.g) AS "avg" FROM t GROUP BY t.d) AS s',
     'SELECT AVG(t.g) AS "avg" FROM t GROUP BY t.d'),
    ('WITH c AS (SELECT AVG(t.k) AS "avg" FROM t) SELECT * FROM c',
     'SELECT AVG(t.k) AS "avg" FROM t'),
    ('WITH c AS (SELECT AVG(t.k) AS a, t.d FROM t GROUP BY t.d) SELECT c.a, c.d FROM c',
     'SELECT AVG(t.k) AS a, t.d FROM t GROUP BY t.d'),
    ('SELECT * FROM (SELECT t.n / 3 AS q FROM t ORDER BY 1 DESC LIMIT 2) AS s',
     'SELECT t.n / 3 AS q FROM t ORDER BY 1 DESC LIMIT 2'),
    ('WITH c AS (SELECT AVG(t.k) AS a FROM t), e AS (SELECT 1 AS x) SELECT * FROM c',
     'WITH e AS (SELECT 1 AS x) SELECT AVG(t.k) AS a FROM t'),
    # count(*) beside the average (its `*` is no star of columns), grouping sets
    ('WITH c AS (SELECT t.s AS c0, AVG(ABS(t.n)) AS c2, COUNT(*) AS c3 FROM t '
     'GROUP BY GROUPING SETS ((t.s), ())) SELECT c.c0 AS c0, c.c2 AS c2, c.c3 AS c3 FROM c AS c',
     'SELECT t.s AS c0, AVG(ABS(t.n)) AS c2, COUNT(*) AS c3 FROM t GROUP BY GROUPING SETS ((t.s), ())'),
    # unnamed outputs under `*`: the same names either way (avg, count)
    ('WITH c AS (SELECT AVG(t.n), COUNT(*) FROM t GROUP BY t.s) SELECT * FROM c',
     'SELECT AVG(t.n), COUNT(*) FROM t GROUP BY t.s'),
]

KEPT = [
    # the outer SELECT does work of its own
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t GROUP BY t.d) AS s WHERE s.a > 1',
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t GROUP BY t.d) AS s ORDER BY s.a',
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t GROUP BY t.d) AS s LIMIT 1',
    'SELECT DISTINCT * FROM (SELECT AVG(t.g) AS a FROM t GROUP BY t.d) AS s',
    'SELECT count(*) FROM (SELECT AVG(t.g) AS a FROM t GROUP BY t.d) AS s',
    'SELECT s.a + 1 AS a FROM (SELECT AVG(t.g) AS a FROM t) AS s',
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t) AS s, u',
    # not every output, not in order, or renamed
    'SELECT s.a FROM (SELECT AVG(t.g) AS a, t.d FROM t GROUP BY t.d) AS s',
    'SELECT s.d, s.a FROM (SELECT AVG(t.g) AS a, t.d FROM t GROUP BY t.d) AS s',
    'SELECT s.a AS b FROM (SELECT AVG(t.g) AS a FROM t) AS s',
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t) AS s(b)',
    # unnamed outputs read one by one; a star of the inner table's columns
    'SELECT s.avg FROM (SELECT AVG(t.g) FROM t) AS s',
    'SELECT * FROM (SELECT t.*, AVG(t.g) OVER () AS a FROM t) AS s',
    # a CTE read twice, or recursive; an inner set operation; nothing to gain
    'WITH c AS (SELECT AVG(t.k) AS a FROM t) SELECT * FROM c WHERE EXISTS (SELECT 1 FROM c)',
    'WITH RECURSIVE c AS (SELECT AVG(t.k) AS a FROM t) SELECT * FROM c',
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t UNION ALL SELECT 1) AS s',
    'SELECT * FROM (SELECT t.g AS a FROM t) AS s',
    # two WITH lists
    'WITH c AS (WITH i AS (SELECT 1 AS x) SELECT AVG(i.x) AS a FROM i), e AS (SELECT 1 AS y) '
    'SELECT * FROM c',
]


@pytest.mark.parametrize(("sql", "merged"), MERGED)
def test_a_pure_pass_through_is_merged_into_its_inner_select(sql: str, merged: str) -> None:
    tree = sqlglot.parse_one(sql, read="postgres")
    assert pass_through(tree) is tree  # in place: references to the tree stay valid
    assert tree.sql("postgres") == sqlglot.parse_one(merged, read="postgres").sql("postgres")


@pytest.mark.parametrize("sql", KEPT)
def test_any_other_wrapper_is_left_alone(sql: str) -> None:
    tree = sqlglot.parse_one(sql, read="postgres")
    before = tree.sql("postgres")
    assert pass_through(tree).sql("postgres") == before
