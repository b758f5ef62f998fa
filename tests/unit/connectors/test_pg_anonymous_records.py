"""connectors.postgres.anonymous_records: the statement that describes a row
constructor's fields as columns of their own. Whole answers are compared with a real
PostgreSQL in tests/integration/test_postgres_source_types.py."""

from __future__ import annotations

import pytest

from connectors.postgres.anonymous_records import fields_statement, without_records


@pytest.mark.parametrize(("sql", "index", "fields_sql", "unknown"), [
    ("SELECT ROW(1, 'a')", 0, "SELECT 1, CAST(NULL AS TEXT)", [False, True]),
    ("SELECT id, (k, s, NULL) AS r, id FROM t", 1,
     "SELECT id, k, s, CAST(NULL AS TEXT), id FROM t", [False, False, True]),
    ("SELECT ARRAY_AGG(ROW('x', id)) FROM t", 0,
     "SELECT CAST(NULL AS TEXT), (ARRAY_AGG(id))[1] FROM t", [True, False]),
    ("SELECT ARRAY_AGG(ROW(id, s) ORDER BY id) FROM t", 0,
     "SELECT (ARRAY_AGG(id ORDER BY id))[1], (ARRAY_AGG(s ORDER BY id))[1] FROM t", [False, False]),
    ("SELECT k, ARRAY_AGG(DISTINCT (id, s)) FILTER(WHERE id > 1) FROM t GROUP BY k", 1,
     "SELECT k, (ARRAY_AGG(DISTINCT id) FILTER(WHERE id > 1))[1], "
     "(ARRAY_AGG(DISTINCT s) FILTER(WHERE id > 1))[1] FROM t GROUP BY k", [False, False]),
])
def test_fields_become_columns(sql: str, index: int, fields_sql: str, unknown: list) -> None:
    assert fields_statement(sql, index) == (fields_sql, unknown)


@pytest.mark.parametrize(("sql", "index"), [
    ("SELECT ROW(1, ROW(2))", 0),  # a row inside a row
    ("SELECT ROW()", 0),
    ("SELECT (SELECT ROW(1))", 0),  # a record from a subquery
    ("SELECT * FROM (SELECT ROW(1)) AS s", 0),
    ("SELECT ROW(1) UNION ALL SELECT ROW(2)", 0),
    ("SELECT f(x) FROM t", 0),
])
def test_other_records_are_not_read(sql: str, index: int) -> None:
    assert fields_statement(sql, index) is None


def test_records_leave_the_view_that_learns_typmods() -> None:
    assert without_records("SELECT ROW(id), CAST(n AS DECIMAL(5, 2)) FROM t", [0]) == \
        "SELECT CAST(NULL AS INT) AS fedgate_record_0, CAST(n AS DECIMAL(5, 2)) FROM t"
    assert without_records("SELECT ROW(1) UNION SELECT ROW(2)", [0]) is None
