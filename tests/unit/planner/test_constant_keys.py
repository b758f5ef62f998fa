"""planner.constant_keys: a constant GROUP BY or ORDER BY item read as PostgreSQL does."""

import pytest
import sqlglot

from pgwire.errors import PgError
from planner.constant_keys import constant_keys


def check(sql: str) -> None:
    constant_keys(sqlglot.parse_one(sql, read="postgres"))


@pytest.mark.parametrize(("sql", "sqlstate", "message"), [
    ("SELECT g, count(*) FROM t GROUP BY 0", "42P10", "GROUP BY position 0 is not in select list"),
    ("SELECT g, count(*) FROM t GROUP BY -1", "42P10", "GROUP BY position -1 is not in select list"),
    ("SELECT g FROM t GROUP BY ROLLUP (1, 9)", "42P10", "GROUP BY position 9 is not in select list"),
    ("SELECT g FROM t GROUP BY GROUPING SETS ((1), (0))", "42P10", "GROUP BY position 0 is not in select list"),
    ("SELECT g, count(*) FROM t GROUP BY true", "42601", "non-integer constant in GROUP BY"),
    ("SELECT g, count(*) FROM t GROUP BY 'x'", "42601", "non-integer constant in GROUP BY"),
    ("SELECT g, count(*) FROM t GROUP BY NULL", "42601", "non-integer constant in GROUP BY"),
    ("SELECT g, count(*) FROM t GROUP BY 1.5", "42601", "non-integer constant in GROUP BY"),
    ("SELECT g, count(*) FROM t GROUP BY 9999999999", "42601", "non-integer constant in GROUP BY"),
    ("SELECT g, count(*) FROM t GROUP BY 2", "42803", "aggregate functions are not allowed in GROUP BY"),
    ("SELECT g, row_number() OVER () FROM t GROUP BY 2", "42P20",
     "window functions are not allowed in GROUP BY"),
    ("SELECT g FROM t ORDER BY 'x'", "42601", "non-integer constant in ORDER BY"),
    ("SELECT g FROM t UNION SELECT g FROM u ORDER BY 2", "42P10", "ORDER BY position 2 is not in select list"),
    ("SELECT * FROM (SELECT g FROM t GROUP BY 0) AS s", "42P10", "GROUP BY position 0 is not in select list"),
])
def test_rejected_as_postgresql_rejects_it(sql: str, sqlstate: str, message: str) -> None:
    with pytest.raises(PgError) as raised:
        check(sql)
    assert (raised.value.sqlstate, str(raised.value)) == (sqlstate, message)


@pytest.mark.parametrize("sql", [
    "SELECT g, count(*) FROM t GROUP BY 1",
    "SELECT g, b, count(*) FROM t GROUP BY ROLLUP (1, 2)",
    "SELECT g, count(*) FROM t GROUP BY 1 + 1",  # an expression, not a constant item
    "SELECT * FROM t GROUP BY 7",  # a `*`: its width is the catalog's
    "SELECT g FROM t ORDER BY 1 DESC",
    "SELECT g, sum(k) OVER () FROM t GROUP BY 1, g",
    "SELECT g FROM t GROUP BY DATE '2024-01-01', g",  # a typed literal is an expression
])
def test_positions_and_expressions_pass(sql: str) -> None:
    check(sql)
