"""planner.nullif_type: NULLIF's type as PostgreSQL resolves its `=`.

Each expected type is what PostgreSQL 16 answers for pg_typeof(NULLIF(a, b)) with a and b
of the types given; the differential suite (tests/conformance, "generated findings")
checks whole statements against a real server.
"""

from __future__ import annotations

import pytest

from planner.nullif_type import nullif_result

CASES = [
    ("int4", "int8", "int4"), ("int8", "int4", "int8"), ("int2", "int4", "int2"),
    ("int4", "numeric(1000,1)", "numeric(1000,0)"), ("numeric(1000,2)", "int4", "numeric(1000,2)"),
    ("int4", "float4", "float8"), ("int4", "float8", "float8"), ("numeric(1000,1)", "float4", "float8"),
    ("numeric(1000,1)", "float8", "float8"), ("float4", "numeric(1000,1)", "float4"),
    ("float4", "float8", "float4"), ("float8", "float4", "float8"), ("float8", "int4", "float8"),
    ("varchar", "varchar", "text"), ("varchar(5)", "text", "text"), ("text", "varchar", "text"),
    ("bpchar(3)", "bpchar(3)", "bpchar(3)"), ("bpchar(3)", "text", "text"),
    ("name", "text", "name"), ("text", "name", "text"), ("name", "unknown", "name"),
    ("unknown", "unknown", "text"), ("unknown", "int4", "int4"), ("int4", "unknown", "int4"),
    ("varchar", "unknown", "text"), ("bool", "unknown", "bool"),
    ("date", "timestamp", "date"), ("timestamp", "date", "timestamp"), ("date", "timestamptz", "date"),
    ("timestamptz", "date", "timestamptz"), ("timestamp", "timestamptz", "timestamp"),
    # no `=` of these: PostgreSQL's error, not a type
    ("int4", "text", None), ("json", "json", None), ("int4", None, None),
]


@pytest.mark.parametrize(("first", "second", "expected"), CASES)
def test_nullif_is_of_its_operators_left_operand(first: str, second: str | None, expected: str | None) -> None:
    assert nullif_result(first, second) == expected
