"""A VALUES column of numbers of several scales: refused where a value's scale would show,
answered where only the numbers matter (connectors.dialects.duckdb.scales).

PostgreSQL shows each numeric at its own scale; a DuckDB DECIMAL column has one scale
for all its rows. What reads the column only by value (counts it, compares it, sorts,
groups or partitions by it, casts it to a type of one scale) answers the same either
way, so it runs; anything else is refused with 0A000. The differential suite
(tests/conformance) checks the answers against PostgreSQL; this pins which is which.
"""

from __future__ import annotations

import pytest
import sqlglot

from connectors.dialects.duckdb.scales import refuse_mixed_scales
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

MIXED = "(VALUES (1.5), (NULL), (-2.25), (4)) AS v(x)"

ANSWERED = [
    f"SELECT count(*) FROM {MIXED}",
    f"SELECT count(x), count(DISTINCT x) FROM {MIXED}",
    f"SELECT bool_and(x > 0), bool_or(x IS NULL) FROM {MIXED}",
    f"SELECT count(*) FROM {MIXED} WHERE x BETWEEN 0 AND 2 OR x IN (4, 5)",
    f"SELECT rank() OVER (PARTITION BY x IS NULL ORDER BY x), ntile(2) OVER (ORDER BY v.x) FROM {MIXED}",
    f"SELECT count(*) FROM {MIXED} GROUP BY x ORDER BY x",
    f"SELECT bit_and(x::int), sum(x::float8), max(CAST(x AS numeric(10, 3))) FROM {MIXED}",
    "SELECT count(*) FROM (VALUES (1), (2)) AS v(x)",  # one scale: never refused
    "SELECT max(x) FROM (VALUES (1.5), (2.5)) AS v(x)",
]

REFUSED = [
    "VALUES (1.5), (2.25)",
    f"SELECT * FROM {MIXED}",
    f"SELECT x FROM {MIXED}",
    f"SELECT v FROM {MIXED}",
    f"SELECT max(x), sum(x) FROM {MIXED}",
    f"SELECT x::text FROM {MIXED}",
    f"SELECT lag(x) OVER (ORDER BY x) FROM {MIXED}",
    f"SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM {MIXED}",
    f"SELECT array_agg(1 ORDER BY x) , string_agg(x::text, ',') FROM {MIXED}",
    f"SELECT count(*) FROM {MIXED} JOIN (VALUES (1)) AS w(x) USING (x)",
    f"SELECT count(*) FROM {MIXED} GROUP BY ROLLUP (x)",
    "WITH v(x) AS (VALUES (1.5), (2.25)) SELECT count(*) FROM v",
    f"SELECT x * 2 > 1 FROM {MIXED}",
]


@pytest.mark.parametrize("sql", ANSWERED)
def test_answered_where_the_scale_cannot_show(sql: str) -> None:
    refuse_mixed_scales(sqlglot.parse_one(sql, read="postgres"))


@pytest.mark.parametrize("sql", REFUSED)
def test_refused_where_the_scale_would_show(sql: str) -> None:
    with pytest.raises(PgError) as raised:
        refuse_mixed_scales(sqlglot.parse_one(sql, read="postgres"))
    assert raised.value.sqlstate == FEATURE_NOT_SUPPORTED
    assert "different scales" in str(raised.value)
