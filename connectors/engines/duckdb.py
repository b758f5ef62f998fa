"""The default residual engine: an in-memory DuckDB that reads fragment inputs as Arrow.

Each query runs with DuckDB's TimeZone set to the client session's (ICU is built in), so
zone-dependent expressions (timestamptz to text or date, extract, date_trunc, timestamptz
plus an interval) give PostgreSQL's answers. Every query has a cursor of its own, so
sessions in different zones never see each other's setting.

The residual asks for PostgreSQL's average of integers and numerics as an exact division
(planner.pg_aggregates), which DuckDB lacks: the DuckDB dialect writes it out as 128-bit
integer arithmetic (connectors.dialects.duckdb.exact_average), as it does for the whole
queries shipped to the DuckDB and Parquet/CSV sources with the same aggregates.

Unsigned integer inputs (MySQL's `bigint unsigned` and friends) reach DuckDB as the
signed types the planner gives them (planner.type_names: a uint64 is numeric(20,0)):
DuckDB's own UBIGINT would compute `u + 1` in 64 unsigned bits and overflow, and
`u - 5` below zero, where PostgreSQL's numeric and integers answer. A decimal wider than
DuckDB's 38 digits arrives as its text.
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
    holds_inputs = False  # it scans a fed batch and asks for the next: none is kept

    def __init__(self) -> None:
        self._runner = DuckDBRunner.open(":memory:")

    async def execute(self, sql: str, inputs: Mapping[str, pa.Table | pa.RecordBatchReader],
                      params: Sequence[Any] = ()) -> BatchStream:
        # Read here, on the session's task: the worker thread does not inherit the context.
        return await self._runner.stream(sql, params,
                                         register={n: _signed(i) for n, i in inputs.items()},
                                         timezone=TIMEZONE.get())

    async def describe(self, sql: str, inputs: Mapping[str, pa.Schema],
                       params: Sequence[Any] = ()) -> pa.Schema:
        empty = {name: _signed_schema(schema).empty_table() for name, schema in inputs.items()}
        stream = await self._runner.stream(f"SELECT * FROM ({sql}) AS described LIMIT 0",
                                           params, register=empty, timezone=TIMEZONE.get())
        await stream.aclose()
        return stream.schema

    def memory_in_use(self) -> tuple[int, int]:
        """DuckDB's memory in use and its bytes spilled to disk now (/metrics)."""
        return self._runner.memory_in_use()

    @property
    def spill_folder(self) -> str | None:
        """Where this engine's DuckDB spills (inside `[engine] temp_directory`)."""
        return self._runner.spill_folder

    async def close(self) -> None:
        self._runner.close()


# As planner.type_names.sqlglot_type_of types them.
_SIGNED = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(),
           pa.uint64(): pa.decimal128(20, 0)}


def _signed_field(field: pa.Field) -> pa.Field:
    if pa.types.is_decimal256(field.type):
        # beyond DuckDB's 38 digits (MySQL's decimal(65,30)): its text, which the residual
        # only passes through (planner.kept_texts)
        return field.with_type(pa.string())
    if field.type not in _SIGNED or (field.metadata and b"pg_type" in field.metadata):
        return field  # (an oid is an unsigned 32-bit integer, as PostgreSQL has it)
    return field.with_type(_SIGNED[field.type])


def _signed_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([_signed_field(f) for f in schema], metadata=schema.metadata)


def _signed(data: pa.Table | pa.RecordBatchReader) -> pa.Table | pa.RecordBatchReader:
    """`data` with its unsigned integer columns as the signed types the planner reads."""
    schema = _signed_schema(data.schema)
    if schema.equals(data.schema):
        return data
    if isinstance(data, pa.Table):
        return data.cast(schema)
    batches = (pa.RecordBatch.from_arrays([c.cast(f.type) for c, f in zip(b.columns, schema)],
                                          schema=schema) for b in data)
    return pa.RecordBatchReader.from_batches(schema, batches)
