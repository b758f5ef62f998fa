"""The DuckDB engine's `try_divide`: PostgreSQL's exact numeric division of an average.

planner.pg_aggregates asks both engines for `try_divide(sum, count)`; Spark has it, and the
DuckDB engine defines it over 128-bit integers (connectors/engines/duckdb.py). Checked
here against Python's decimal arithmetic, rounded half away from zero as PostgreSQL
rounds: random dividends of up to 38 digits at the scales an average uses, random
divisors up to 10^18, signs, halves, and a zero divisor (NULL, as avg of no rows).
"""

from __future__ import annotations

import decimal
import random
from decimal import ROUND_HALF_UP, Decimal

import pyarrow as pa
import pytest

from connectors.engines.duckdb import DuckDBEngine


def _cases(scale: int, rng: random.Random) -> list[tuple[str, int]]:
    cases = [("0.5", 1), ("-0.5", 1), ("2.5", 2), ("-2.5", 2), ("1", 3), ("-1", 3), ("7", -2),
             ("-7", 2), ("0", 5), ("73.40", 40)]
    for _ in range(200):
        digits = rng.randint(1, 38)
        value = Decimal(rng.randint(-10**digits + 1, 10**digits - 1)).scaleb(-scale)
        cases.append((str(value), rng.randint(1, 10 ** rng.randint(0, 18)) * rng.choice((1, -1))))
    unit = Decimal(1).scaleb(-scale)
    with decimal.localcontext() as context:
        context.prec = 100
        held = [(Decimal(v).quantize(unit, ROUND_HALF_UP), n) for v, n in cases]
    # Only values the column holds: at the scale, within 38 digits.
    return [(str(v), n) for v, n in held if len(v.as_tuple().digits) <= 38]


@pytest.mark.parametrize("scale", [0, 2, 6, 13, 16, 20])
async def test_exact_division_rounds_half_away_from_zero(scale: int) -> None:
    cases = _cases(scale, random.Random(scale))
    table = pa.table({"v": [v for v, _ in cases], "n": pa.array([n for _, n in cases], pa.int64())})
    numeric = f"DECIMAL(38, {scale})"
    engine = DuckDBEngine()
    try:
        stream = await engine.execute(
            f"SELECT CAST(try_divide(CAST(v AS {numeric}), CAST(n AS DECIMAL(19, 0))) AS {numeric}) AS q "
            "FROM cases", {"cases": table})
        got = [row["q"] async for batch in stream for row in batch.to_pylist()]
    finally:
        await engine.close()
    with decimal.localcontext() as context:
        context.prec = 100
        want = [(Decimal(v) / n).quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP) for v, n in cases]
    assert got == want


async def test_zero_divisor_and_null_give_null() -> None:
    engine = DuckDBEngine()
    try:
        stream = await engine.execute(
            "SELECT CAST(try_divide(CAST(1 AS DECIMAL(38, 16)), CAST(0 AS DECIMAL(19, 0))) AS DECIMAL(38, 16)) AS a, "
            "CAST(try_divide(CAST(NULL AS DECIMAL(38, 16)), CAST(3 AS DECIMAL(19, 0))) AS DECIMAL(38, 16)) AS b", {})
        rows = [row async for batch in stream for row in batch.to_pylist()]
    finally:
        await engine.close()
    assert rows == [{"a": None, "b": None}]
    assert stream.schema.field("a").type == pa.decimal128(38, 16)
