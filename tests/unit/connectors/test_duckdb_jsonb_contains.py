"""jsonb @> and <@ as PostgreSQL's containment (connectors/dialects/duckdb/jsonb_contains.py);
tests/conformance compares the engine's answers with a running PostgreSQL."""

from __future__ import annotations

import pytest

from sqlglot import parse_one
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.dialects.duckdb import to_duckdb
from connectors.dialects.duckdb.jsonb_contains import JSONB_CONTAINS_FUNCTION, jsonb_contains
from connectors.duckdb.runner import DuckDBRunner


@pytest.mark.parametrize(("left", "right", "expected"), [
    ('{"a": 1, "b": [1, 2]}', '{"a": 1}', True),
    ('{"a": 1.0}', '{"a": 1}', True),  # numbers by value
    ('{"a": "1"}', '{"a": 1}', False),
    ('[1, 2, [1, 3]]', '[1, 3]', False),
    ('[1, 2, [1, 3]]', '[[1, 3]]', True),
    ('[3, 1, 1]', '[1, 3, 3]', True),  # order and repeats do not count
    ('["foo", 1]', '"foo"', True),  # an array contains a scalar at the top level only
    ('[["foo"]]', '"foo"', False),
    ('"foo"', '["foo"]', False),
    ('{"a": [1]}', '{"a": 1}', False),
    ('[true]', '[1]', False),  # true is not 1
    ('{}', '[]', False),
    ('{"a": null}', '{}', True),
    (None, '{}', None),
])
def test_containment_as_postgresql_has_it(left: str | None, right: str, expected: bool | None) -> None:
    assert jsonb_contains(left, right) is expected


def test_a_document_postgresql_rejects_is_refused() -> None:
    with pytest.raises(ValueError, match="not supported by fedgate"):
        jsonb_contains('"\\u0000"', "{}")


def test_the_operators_in_the_engine() -> None:
    """On a DuckDB runner's connection, which has the function registered."""
    sql = to_duckdb(annotate_types(parse_one(
        """select '{"a": 1, "b": 2}'::jsonb @> '{"b": 2}', '{"a": 1}' <@ '{"b": 2}'::jsonb""", read="postgres")))
    assert JSONB_CONTAINS_FUNCTION.upper() in sql
    rows = DuckDBRunner.open().query_sync(sql).to_pylist()
    assert [tuple(row.values()) for row in rows] == [(True, False)]
