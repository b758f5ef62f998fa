"""The default residual engine: an in-memory DuckDB that reads fragment inputs as Arrow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from connectors.base import BatchStream
from connectors.duckdb_runner import DuckDBRunner


class DuckDBEngine:
    name = "duckdb"

    def __init__(self) -> None:
        self._runner = DuckDBRunner.open(":memory:")

    async def execute(self, sql: str, inputs: Mapping[str, pa.Table | pa.RecordBatchReader],
                      params: Sequence[Any] = ()) -> BatchStream:
        return await self._runner.stream(sql, params, register=dict(inputs))

    async def describe(self, sql: str, inputs: Mapping[str, pa.Schema],
                       params: Sequence[Any] = ()) -> pa.Schema:
        empty = {name: schema.empty_table() for name, schema in inputs.items()}
        stream = await self._runner.stream(f"SELECT * FROM ({sql}) AS described LIMIT 0",
                                           params, register=empty)
        await stream.aclose()
        return stream.schema

    async def close(self) -> None:
        self._runner.close()
