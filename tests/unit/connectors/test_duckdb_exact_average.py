"""PostgreSQL's exact average on DuckDB: `FEDGATE_AVG(sum, count, scale, sum's scale)`.

planner.pg_aggregates asks DuckDB (the engine and the sources that run SQL in DuckDB) for
`CAST(FEDGATE_AVG(SUM(x), COUNT(x), scale, s) AS DECIMAL(38, scale))`, which the DuckDB
dialect (connectors.dialects.duckdb.to_duckdb) writes out as 128-bit integer arithmetic.
Run by the DuckDB engine and checked here against
Python's decimal arithmetic, rounded half away from zero as PostgreSQL rounds: random sums
at the scales DuckDB gives them (HUGEINT for integers, DECIMAL(38, s) for numerics),
counts up to 10^18, averages that fit the result column, ties, signs, and sums far beyond
10^(38 - scale), which a division of the sum scaled to the result's digits cannot hold
(a million int8 values near their maximum).
"""

from __future__ import annotations

import decimal
import random
from decimal import ROUND_HALF_UP, Decimal

import pyarrow as pa
import pytest

import sqlglot

from connectors.dialects.duckdb import to_duckdb
from connectors.engines.duckdb import DuckDBEngine

# (DuckDB type of the sum, its scale, the average's scale), as pg_aggregates pairs them.
KINDS = [("HUGEINT", 0, 13), ("HUGEINT", 0, 16), ("DECIMAL(38, 2)", 2, 16),
         ("DECIMAL(38, 4)", 4, 16), ("DECIMAL(38, 8)", 8, 16), ("DECIMAL(38, 18)", 18, 18)]


def _cases(sum_scale: int, scale: int, rng: random.Random) -> list[tuple[Decimal, int]]:
    unit = Decimal(1).scaleb(-sum_scale)
    limit = Decimal(10) ** (38 - scale) / 2  # averages the result column holds
    cases: list[tuple[Decimal, int]] = []
    while len(cases) < 300:
        count = rng.randint(1, 10 ** rng.randint(0, 18))
        digits = rng.randint(1, 38 - sum_scale)
        total = Decimal(rng.randint(-10 ** digits + 1, 10 ** digits - 1)) * unit
        if abs(total / count) < limit:
            cases.append((total, count))
    # Ties at the result's last digit, both signs, with sums beyond 10^(38 - scale).
    for total in (Decimal(2 * 10 ** 25 + 1), Decimal(-2 * 10 ** 25 - 1), Decimal(5), Decimal(-5)):
        if len(total.as_tuple().digits) + sum_scale <= 38:
            cases.append((total, 2 * 10 ** scale))
    cases += [(Decimal(0), 3), (Decimal(7), 1)]
    return cases


def _rendered(sql: str) -> str:
    return to_duckdb(sqlglot.parse_one(sql, read="duckdb"))


async def _averages(rows: list[tuple[str | None, int]], sum_type: str, scale: int,
                    sum_scale: int) -> list[Decimal | None]:
    table = pa.table({"s": [s for s, _ in rows], "n": pa.array([n for _, n in rows], pa.int64())})
    engine = DuckDBEngine()
    try:
        stream = await engine.execute(_rendered(
            f"SELECT CAST(FEDGATE_AVG(CAST(s AS {sum_type}), n, {scale}, {sum_scale}) "
            f"AS DECIMAL(38, {scale})) AS a FROM cases"), {"cases": table})
        return [row["a"] async for batch in stream for row in batch.to_pylist()]
    finally:
        await engine.close()


@pytest.mark.parametrize(("sum_type", "sum_scale", "scale"), KINDS)
async def test_exact_average_rounds_half_away_from_zero(sum_type: str, sum_scale: int, scale: int) -> None:
    cases = _cases(sum_scale, scale, random.Random(f"{sum_type}/{scale}"))
    if sum_scale < scale:  # then some sums do not fit DECIMAL(38, scale): the point here
        assert any(abs(total) >= Decimal(10) ** (38 - scale) for total, _ in cases)
    got = await _averages([(str(total), count) for total, count in cases], sum_type, scale, sum_scale)
    with decimal.localcontext() as context:
        context.prec = 100
        want = [(total / count).quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP)
                for total, count in cases]
    assert got == want


async def test_no_rows_and_null_sums_give_null() -> None:
    assert await _averages([("1", 0), (None, 0), (None, 3)], "HUGEINT", 16, 0) == [None, None, None]


async def test_aggregates_inside_the_average_are_the_query_s() -> None:
    """Averages of a qualified column and of a wider decimal, over a derived table whose
    columns are named like the arithmetic's parts."""
    engine = DuckDBEngine()
    try:
        stream = await engine.execute(_rendered(
            "SELECT CAST(FEDGATE_AVG(SUM(x.a), COUNT(x.a), 16, 16) AS DECIMAL(38, 16)) AS m, "
            "CAST(FEDGATE_AVG(SUM(x.d), COUNT(x.d), 13, 0) AS DECIMAL(38, 13)) AS k FROM (SELECT "
            "CAST(CAST(i AS DECIMAL(38, 16)) / 3 AS DECIMAL(38, 16)) AS a, i AS d, i AS t, i AS n, "
            "i AS v, i AS k, i AS neg FROM range(10) AS r(i)) AS x"), {})
        rows = [row async for batch in stream for row in batch.to_pylist()]
    finally:
        await engine.close()
    assert rows == [{"m": Decimal("1.5000000000000000"), "k": Decimal("4.5000000000000")}]
