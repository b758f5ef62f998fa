"""The default residual engine: an in-memory DuckDB that reads fragment inputs as Arrow.

Each query runs with DuckDB's TimeZone set to the client session's (ICU is built in), so
zone-dependent expressions (timestamptz to text or date, extract, date_trunc, timestamptz
plus an interval) give PostgreSQL's answers. Every query has a cursor of its own, so
sessions in different zones never see each other's setting.

The residual asks for PostgreSQL's average of integers and numerics as an exact division
(planner.pg_aggregates), which DuckDB lacks: the DuckDB dialect writes it out as 128-bit
integer arithmetic (connectors.dialects.duckdb.exact_average), as it does for the whole
queries shipped to the DuckDB and Parquet/CSV sources with the same aggregates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from connectors.base import BatchStream
from connectors.dialects.duckdb import DIALECT
from connectors.duckdb.runner import DuckDBRunner
from connectors.time_zone import TIMEZONE


class DuckDBEngine:
    name = "duckdb"
    dialect = DIALECT
    start_pending = None  # in-process: nothing to wait for

    def __init__(self) -> None:
        self._runner = DuckDBRunner.open(":memory:")

    async def execute(self, sql: str, inputs: Mapping[str, pa.Table | pa.RecordBatchReader],
                      params: Sequence[Any] = ()) -> BatchStream:
        # Read here, on the session's task: the worker thread does not inherit the context.
        return await self._runner.stream(sql, params, register=dict(inputs),
                                         timezone=TIMEZONE.get())

    async def describe(self, sql: str, inputs: Mapping[str, pa.Schema],
                       params: Sequence[Any] = ()) -> pa.Schema:
        empty = {name: schema.empty_table() for name, schema in inputs.items()}
        stream = await self._runner.stream(f"SELECT * FROM ({sql}) AS described LIMIT 0",
                                           params, register=empty, timezone=TIMEZONE.get())
        await stream.aclose()
        return stream.schema

    async def close(self) -> None:
        self._runner.close()
