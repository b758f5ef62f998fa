"""The DuckDB macro `fedgate_avg(sum, count, scale)`: PostgreSQL's exact average.

planner.pg_aggregates asks DuckDB (the engine and the sources that run SQL in DuckDB) for
`CAST(fedgate_avg(SUM(x), COUNT(x), scale) AS DECIMAL(38, scale))`. Checked here against
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


async def _averages(rows: list[tuple[str | None, int]], sum_type: str, scale: int) -> list[Decimal | None]:
    table = pa.table({"s": [s for s, _ in rows], "n": pa.array([n for _, n in rows], pa.int64())})
    engine = DuckDBEngine()
    try:
        stream = await engine.execute(
            f"SELECT CAST(fedgate_avg(CAST(s AS {sum_type}), n, {scale}) AS DECIMAL(38, {scale})) AS a "
            "FROM cases", {"cases": table})
        return [row["a"] async for batch in stream for row in batch.to_pylist()]
    finally:
        await engine.close()


@pytest.mark.parametrize(("sum_type", "sum_scale", "scale"), KINDS)
async def test_exact_average_rounds_half_away_from_zero(sum_type: str, sum_scale: int, scale: int) -> None:
    cases = _cases(sum_scale, scale, random.Random(f"{sum_type}/{scale}"))
    if sum_scale < scale:  # then some sums do not fit DECIMAL(38, scale): the point here
        assert any(abs(total) >= Decimal(10) ** (38 - scale) for total, _ in cases)
    got = await _averages([(str(total), count) for total, count in cases], sum_type, scale)
    with decimal.localcontext() as context:
        context.prec = 100
        want = [(total / count).quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP)
                for total, count in cases]
    assert got == want


async def test_no_rows_and_null_sums_give_null() -> None:
    assert await _averages([("1", 0), (None, 0), (None, 3)], "HUGEINT", 16) == [None, None, None]


async def test_the_query_s_own_names_do_not_leak_into_the_macro() -> None:
    """The macro binds its intermediate values with lambdas; a table `x` with a column `a`
    (or columns named like the intermediate values) must not be read in their place."""
    engine = DuckDBEngine()
    try:
        stream = await engine.execute(
            "SELECT CAST(fedgate_avg(SUM(x.a), COUNT(x.a), 16) AS DECIMAL(38, 16)) AS m, "
            "CAST(fedgate_avg(SUM(x.d), COUNT(x.d), 13) AS DECIMAL(38, 13)) AS k FROM (SELECT "
            "CAST(i AS DECIMAL(38, 16)) / 3 AS a, i AS d, i AS t, i AS n, i AS v, i AS k, i AS neg "
            "FROM range(10) AS r(i)) AS x", {})
        rows = [row async for batch in stream for row in batch.to_pylist()]
    finally:
        await engine.close()
    assert rows == [{"m": Decimal("1.5000000000000000"), "k": Decimal("4.5000000000000")}]
