"""VALUES columns of string constants and integers typed as PostgreSQL types them
(connectors.dialects.duckdb.values); the differential suite compares the answers with
PostgreSQL."""

from __future__ import annotations

import pytest
import sqlglot

from connectors.dialects.duckdb.values import needs_rewrite, typed_values
from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError


@pytest.mark.parametrize("sql, expected", [
    ("VALUES ('1'), (2)", "VALUES (CAST('1' AS INT)), (2)"),
    ("VALUES (' -7 '), (NULL), (-2)", "VALUES (CAST(' -7 ' AS INT)), (NULL), (-2)"),
    ("VALUES ('5', 'a'), (3000000000, 'b')", "VALUES (CAST('5' AS BIGINT), 'a'), (3000000000, 'b')"),
])
def test_strings_take_the_integers_type(sql: str, expected: str) -> None:
    tree = sqlglot.parse_one(sql, read="postgres")
    assert needs_rewrite(tree)
    assert tree.transform(typed_values).sql("postgres") == expected


@pytest.mark.parametrize("sql", ["VALUES ('a'), ('b')", "VALUES (1), (2.5)", "VALUES ('1'), (2.5)",
                                 "VALUES ('1'), (2::int8)", "VALUES (NULL), ('x')"])
def test_other_columns_are_left_as_written(sql: str) -> None:
    assert not needs_rewrite(sqlglot.parse_one(sql, read="postgres"))


def test_the_first_unreadable_string_in_postgresql_order_is_named() -> None:
    tree = sqlglot.parse_one("VALUES ('x', 1), (2, 'y')", read="postgres")
    with pytest.raises(PgError) as raised:
        tree.transform(typed_values)
    assert raised.value.sqlstate == INVALID_TEXT_REPRESENTATION
    assert str(raised.value).endswith('invalid input syntax for type integer: "x"')
