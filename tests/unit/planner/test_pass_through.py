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
    # a filter on the outputs: into HAVING of a grouping, WHERE of anything else
    ('SELECT * FROM (SELECT AVG(t.g) AS a FROM t GROUP BY t.d) AS s WHERE s.a > 1',
     'SELECT AVG(t.g) AS a FROM t GROUP BY t.d HAVING (AVG(t.g)) > 1'),
    ('WITH c AS (SELECT 2 AS c0, AVG(t.k) AS c1 FROM t HAVING COUNT(*) > 0) '
     'SELECT * FROM c WHERE NOT c.c0 IS NULL',
     'SELECT 2 AS c0, AVG(t.k) AS c1 FROM t HAVING COUNT(*) > 0 AND NOT (2) IS NULL'),
    ('SELECT * FROM (SELECT t.d + 1 AS d, t.n / 3 AS q FROM t WHERE t.k > 0) AS s WHERE s.d > 2',
     'SELECT t.d + 1 AS d, t.n / 3 AS q FROM t WHERE t.k > 0 AND (t.d + 1) > 2'),
    # an order by the outputs' names replaces the inner one
    ('SELECT * FROM (SELECT t.d AS d, AVG(t.g) AS a FROM t GROUP BY t.d ORDER BY 1) AS s '
     'WHERE s.d > 1 ORDER BY s.a DESC',
     'SELECT t.d AS d, AVG(t.g) AS a FROM t GROUP BY t.d HAVING (t.d) > 1 ORDER BY a DESC'),
    ('WITH c AS (SELECT AVG(t.k) AS a, t.d FROM t GROUP BY t.d) SELECT * FROM c ORDER BY 2, c.a',
     'SELECT AVG(t.k) AS a, t.d FROM t GROUP BY t.d ORDER BY 2, a'),
    # unnamed outputs under `*`: the same names either way (avg, count)
    ('WITH c AS (SELECT AVG(t.n), COUNT(*) FROM t GROUP BY t.s) SELECT * FROM c',
     'SELECT AVG(t.n), COUNT(*) FROM t GROUP BY t.s'),
]

KEPT = [
    # the outer SELECT does work of its own
    # a filter that cannot move into the inner SELECT
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t GROUP BY t.d LIMIT 2) AS s WHERE s.a > 1',
    'SELECT * FROM (SELECT t.n / 2 AS q, rank() OVER (ORDER BY t.n) AS r FROM t) AS s WHERE s.r = 1',
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t) AS s WHERE s.a IN (SELECT 1)',
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t) AS s WHERE s.b > 1',
    'SELECT * FROM (SELECT DISTINCT t.n / 2 AS q FROM t) AS s WHERE s.q > 1',
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t GROUP BY t.d LIMIT 3) AS s ORDER BY s.a',
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t GROUP BY t.d) AS s ORDER BY s.a + 1',
    'SELECT * FROM (SELECT AVG(t.g) AS a FROM t GROUP BY t.d) AS s ORDER BY 2',
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
