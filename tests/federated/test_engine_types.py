"""Types the DuckDB engine hands the gateway: 128-bit integers become numeric.

DuckDB sums integers into HUGEINT, which its lossless Arrow export hands over as opaque
16-byte values; found by TPC-H Q12 on split b (`sum(case ... then 1 else 0 end)` computed
in the engine came back to the client as raw bytes). The engine now reports them as
decimal128(38, 0), PostgreSQL's numeric, with the values intact.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pyarrow as pa
import pytest

from connectors.duckdb.runner import DuckDBRunner
from pgwire.errors import PgError


async def _rows(runner: DuckDBRunner, sql: str) -> tuple[pa.Schema, list[dict]]:
    stream = await runner.stream(sql)
    rows = [row async for batch in stream for row in batch.to_pylist()]
    return stream.schema, rows


async def test_integer_sums_are_numeric() -> None:
    runner = DuckDBRunner.open()
    try:
        schema, rows = await _rows(runner, "SELECT x % 2 AS k, sum(x) AS s, sum(x::BIGINT * 1000000000000) AS big "
                                           "FROM range(-3, 200000) t(x) GROUP BY 1 ORDER BY 1")
    finally:
        runner.close()
    assert schema.field("s").type == pa.decimal128(38, 0)
    assert schema.field("big").type == pa.decimal128(38, 0)
    # DuckDB's % truncates toward zero, as PostgreSQL's does: -3 % 2 is -1.
    want = {k: sum(x for x in range(-3, 200000) if int(math.fmod(x, 2)) == k) for k in (-1, 0, 1)}
    assert [(r["k"], r["s"]) for r in rows] == [(k, Decimal(want[k])) for k in (-1, 0, 1)]
    assert rows[1]["big"] == Decimal(want[0]) * 1000000000000


async def test_nulls_survive_and_unsigned_overflow_is_an_error() -> None:
    runner = DuckDBRunner.open()
    try:
        _, rows = await _rows(runner, "SELECT CAST(v AS HUGEINT) AS h FROM (VALUES (1), (NULL), (-5)) t(v)")
        assert [r["h"] for r in rows] == [Decimal(1), None, Decimal(-5)]
        with pytest.raises(PgError) as failure:
            await _rows(runner, "SELECT CAST(1 AS UHUGEINT) << 127 AS u")
        assert failure.value.sqlstate == "22003"
    finally:
        runner.close()
