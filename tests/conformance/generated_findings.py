"""Minimal statements the query generator (tests/conformance/generate) reduced its findings to.

A family of the written suite (tests/conformance/statements.py), kept apart as it grows
with every run of the generator.
"""

from __future__ import annotations

from tests.conformance.statements import Statement


def generated_findings() -> list[Statement]:
    """Minimal statements the query generator (tests/conformance/generate) reduced its
    findings to: each stays here once fixed."""
    return [Statement("generated findings", sql) for sql in [
        # avg() below the top-level SELECT keeps the engine's fixed scale 16 (the per-value
        # scale is computed for the statement's own outputs only): 1.0000000000000000
        # where PostgreSQL shows 1.00000000000000000000
        "WITH c AS (SELECT AVG(t.n) FROM t GROUP BY t.s) SELECT * FROM c",
        "WITH c AS (SELECT AVG(u.g) FROM t RIGHT JOIN u ON t.g = u.g GROUP BY t.d) SELECT * FROM c",
        "SELECT * FROM (SELECT AVG(t.g) FROM t GROUP BY t.d) AS s",
        "WITH c AS (SELECT AVG(t.k) FROM t) SELECT * FROM c",
        # avg() of a product of numerics: the digits of the engine's average were not
        # PostgreSQL's (1.12500000000000000000 where PostgreSQL says 1.12505000000000000000;
        # fixed: planner.pg_aggregates takes the product's scale, not sqlglot's annotation)
        "SELECT AVG(t.n * t.n) FROM t",
        # a window partitioned by a constant call: DuckDB took its guard for volatile
        # (fixed: connectors.dialects.duckdb.constant_checks)
        "SELECT MAX(t.f) OVER (PARTITION BY SUBSTRING('apple' FROM 1 FOR 0) ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t",
        # lead() of an unknown literal: PostgreSQL cannot resolve its anyelement (fixed)
        "SELECT t.id, LEAD('a%b_c') OVER (PARTITION BY LENGTH(t.s) ORDER BY t.id) AS w0 FROM t",
        # a constant as a whole GROUP BY item (fixed: planner.constant_keys)
        "SELECT TRUE AS c0, t.b AS c1, COUNT(*) AS c3 FROM t GROUP BY TRUE, t.b",
        "SELECT 0 AS c0, t.d AS c1, MAX(t.s) AS c2 FROM t GROUP BY 0, t.d",
        # a position inside GROUPING SETS is the output it names: two sets of t.d, each d
        # twice; DuckDB bound the position apart from the output, NULL in its set (fixed:
        # connectors.dialects.grouping_sets.named_set_positions)
        "SELECT 2, t.d FROM t GROUP BY GROUPING SETS (2, t.d)",
        "SELECT t.g AS c, t.d, COUNT(*) FROM t GROUP BY ROLLUP (1, t.g), CUBE (2, t.d)",
        "SELECT 2, t.d, COUNT(*) FROM t GROUP BY DISTINCT GROUPING SETS (2, t.d, (1, 2))",
        # sum(DISTINCT x) is typed as sum(x), and NULLIF as the left operand of its `=`:
        # int4 here, so the sum is int8 (fixed: planner.nullif_type, planner.nullif_casts)
        "SELECT SUM(DISTINCT NULLIF(10, t.k)) FROM t",
        "SELECT MAX(DISTINCT NULLIF(t.g, t.k)), SUM(DISTINCT NULLIF(CAST(t.f AS REAL), t.f)) FROM t",
        "SELECT NULLIF(t.n, t.f), NULLIF(t.g, t.f), NULLIF('1', t.g), NULLIF(NULL, t.g) FROM t",
        "SELECT NULLIF(CAST(t.s AS VARCHAR), CAST(t.s AS VARCHAR)), SUM(NULLIF(t.g, t.f)) FROM t GROUP BY t.s",
        "SELECT NULLIF(t.g, '1.5') FROM t",
        # a window aggregate with DISTINCT or ORDER BY: PostgreSQL's 0A000 (fixed:
        # planner.window_aggregates)
        "SELECT SUM(DISTINCT NULLIF(10, t.k)) OVER () FROM t",
        "SELECT ARRAY_AGG(t.g ORDER BY t.g) OVER (PARTITION BY t.b) FROM t",
    ]]
