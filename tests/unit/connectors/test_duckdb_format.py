"""format() as PostgreSQL's text_format answers it, written for DuckDB
(connectors.dialects.duckdb.quoting) and run there: argument positions, the `-` flag
and widths. The differential suite (tests/conformance) compares with PostgreSQL."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.dialects.duckdb.quoting import postgres_quoting
from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

ANSWERS = [
    ("format('%5s|%-5s|', 'ab', 'cd')", "   ab|cd   |"),
    ("format('%3s|', 'longer')", "longer|"),  # never cut
    ("format('%2$s %s %1$s', 'a', 'b', 'c')", "b c a"),
    ("format('%-6L|%6I|', NULL, 'Ab')", 'NULL  |  "Ab"|'),
    ("format('%4s|', NULL::text)", "    |"),
    ("format('%-s|%%', 'a')", "a|%"),
]


def _run(call: str) -> object:
    tree = annotate_types(sqlglot.parse_one(f"SELECT {call}", read="postgres"))
    return duckdb.sql(tree.transform(postgres_quoting).sql("duckdb")).fetchall()[0][0]


@pytest.mark.parametrize("call, expected", ANSWERS)
def test_positions_flags_and_widths(call: str, expected: str) -> None:
    assert _run(call) == expected


@pytest.mark.parametrize("call, sqlstate, message", [
    ("format('%0$s', 'a')", INVALID_PARAMETER_VALUE, "arguments are numbered from 1"),
    ("format('%3$s', 'a')", INVALID_PARAMETER_VALUE, "too few arguments"),
    ("format('%*s', 3, 'a')", FEATURE_NOT_SUPPORTED, "format() with a format other than a literal"),
])
def test_what_is_raised_or_refused(call: str, sqlstate: str, message: str) -> None:
    with pytest.raises(PgError) as raised:
        _run(call)
    assert raised.value.sqlstate == sqlstate and message in str(raised.value)
