"""connectors.postgres.column_stats: pg_stats rows as ColumnStats, and a refusal to read
them that leaves the catalog whole."""

from __future__ import annotations

import logging

import asyncpg
import pytest

from connectors.postgres.column_stats import column_stats


class _Conn:
    def __init__(self, rows=None, error: Exception | None = None) -> None:
        self.rows, self.error = rows or [], error

    async def fetch(self, sql: str, *args):
        if self.error is not None:
            raise self.error
        return self.rows


async def test_a_negative_distinct_count_is_a_fraction_of_the_rows() -> None:
    row = {"oid": 7, "attname": "id", "null_frac": 0.0, "n_distinct": -0.5, "reltuples": 1000.0,
           "mcv": None, "mcf": None, "bounds": ["1", "500", "1000"]}
    common = {"oid": 7, "attname": "s", "null_frac": 0.25, "n_distinct": 2.0, "reltuples": 1000.0,
              "mcv": ["a", "b"], "mcf": [0.5, 0.25], "bounds": None}
    found = await column_stats(_Conn([row, common]), "public")
    (name, ident), (_, text) = found[7]
    assert name == "id" and ident.n_distinct == 500 and ident.histogram == ("1", "500", "1000")
    assert text.most_common == (("a", 0.5), ("b", 0.25)) and text.null_frac == 0.25


async def test_a_refusal_leaves_no_statistics_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    error = asyncpg.exceptions.InsufficientPrivilegeError("permission denied for view pg_stats")
    with caplog.at_level(logging.WARNING, logger="fedgate.postgres"):
        assert await column_stats(_Conn(error=error), "locked") == {}
        assert await column_stats(_Conn(error=error), "locked") == {}
    warnings = [r.getMessage() for r in caplog.records if "locked" in r.getMessage()]
    assert len(warnings) == 1 and "a third of the rows" in warnings[0]  # once, not every refresh
