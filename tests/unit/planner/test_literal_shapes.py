"""Which lifted parameters may stand for a statement's numbers in one shared plan."""

from __future__ import annotations

import pytest

from planner.literal_shapes import bindable


@pytest.mark.parametrize("sql", [
    "SELECT a.x, f.y FROM pg.t a JOIN files.s f ON f.id = a.k WHERE a.id = $1",
    "SELECT x FROM t WHERE a = $1 AND (b > $2 OR NOT c <= $3)",
    "SELECT x FROM t WHERE $1 < a",
    "SELECT x FROM t JOIN u ON t.a = u.b AND u.c <> $1",
    "SELECT x FROM t WHERE a IN (SELECT b FROM u WHERE c = $1)",
])
def test_filter_constants_are_bound(sql: str) -> None:
    assert bindable(sql)


@pytest.mark.parametrize("sql", [
    "SELECT x + $1 FROM t WHERE a = $2",           # select list: sets the column's type
    "SELECT x FROM t WHERE a + $1 = 3",            # an operand of arithmetic
    "SELECT CASE WHEN a = $1 THEN 1 END FROM t",   # not a filter
    "SELECT x FROM t WHERE f(a, $1)",              # a function's argument
    "SELECT x FROM t WHERE a = $1 UNION SELECT 1",  # not a plain SELECT
    "SELECT x FROM t GROUP BY x HAVING count(*) > $1",
    "SELECT x FROM t WHERE $1 = $2",
    "SELECT x FROM t",                              # nothing lifted
    "SELECT x FROM WHERE a = $1",                   # does not parse: its text reports that
])
def test_other_numbers_keep_the_text_key(sql: str) -> None:
    assert not bindable(sql)
