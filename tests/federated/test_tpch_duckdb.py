"""The 22 TPC-H queries through the gateway with the DuckDB engine, on two source splits.

Each split spreads the eight tables over PostgreSQL, SQLite and Parquet (see
tests/federated/tpch_data.py), so the queries' joins cross sources; the answer must equal
DuckDB's over the same data held locally (tests/federated/compare.py says what "equal"
means: numeric tolerance, ORDER BY respected). On split b every query has tables in
several sources, so every one runs through the engine (checked from EXPLAIN), or whole on
PostgreSQL where its other sources' tables are small enough to be sent along
(planner.inline_sides: Q2, Q11 and Q16 with the Parquet nation and region); on split a
the queries over lineitem and orders alone ship whole to PostgreSQL.
"""

from __future__ import annotations

import pytest

from tests.federated import tpch_data
from tests.federated.compare import mismatch, order_columns
from tests.federated.conftest import NUMBERS, gateway_answer, query_text

CASES = [(split, n) for split in tpch_data.SPLITS for n in NUMBERS]


@pytest.mark.parametrize(("split", "number"), CASES, ids=[f"{s}-q{n:02d}" for s, n in CASES])
async def test_tpch_query_matches_local_duckdb(tpch_gateways, tpch_reference, split: str,
                                               number: int) -> None:
    sql = query_text(number)
    names, got, explain = await gateway_answer(tpch_gateways[split].dsn, sql)
    if split == "b":
        assert any(line.startswith(("Engine: ", "  Inlined ")) for line in explain), explain
    want = tpch_reference.answer(number)
    assert want, f"q{number:02d} has no rows at this scale: the comparison would prove little"
    problem = mismatch(got, want, order_columns(sql, names))
    assert problem is None, f"q{number:02d} on split {split}: {problem}"
