"""The contract of a move's target: a table that takes rows in bulk (docs/design.md §5).

`INSERT INTO src.t <query>` and `CREATE TABLE src.t AS <query>` whose query reads other
sources run the query on the engine and hand its batches to the target's bulk writer
(`connectors/<kind>/bulk_write.py`): PostgreSQL's binary COPY, MySQL's multi-row INSERT,
SQLite's batched inserts, a Parquet or CSV file linked into place. A writer holds one
transaction from `open` to `finish`, so a move is all or nothing. The target's columns are
described in PostgreSQL's terms, which is what the gateway converts the rows to
(`gateway.executor.assignment`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

# The kinds whose tables are files (folders of them, or table formats over them): any
# INSERT or CREATE TABLE AS into one is a move, its rows written from the engine.
FILE_KINDS = frozenset({"parquet", "csv", "delta", "iceberg"})


@dataclass(frozen=True)
class TargetColumn:
    name: str
    # PostgreSQL's name of the type the target holds: int2, int4, int8, float4, float8,
    # numeric, text, varchar, bpchar, bool, date, timestamp, timestamptz, bytea; any other
    # name takes the value as the engine gives it, for the target to check.
    pg_type: str
    length: int | None = None     # varchar(n) / bpchar(n)
    precision: int | None = None  # numeric(p, s)
    scale: int | None = None
    not_null: bool = False

    @property
    def type_text(self) -> str:
        """The type as PostgreSQL's messages spell it (format_type)."""
        spelled = {"int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real",
                   "float8": "double precision", "varchar": "character varying",
                   "bpchar": "character", "bool": "boolean",
                   "timestamp": "timestamp without time zone",
                   "timestamptz": "timestamp with time zone"}.get(self.pg_type, self.pg_type)
        if self.length is not None:
            return f"{spelled}({self.length})"
        if self.precision is not None:
            return f"{spelled}({self.precision},{self.scale or 0})"
        return spelled


class BulkWriter(Protocol):
    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        """Make the table of a CREATE TABLE AS: run `ddl` in the writer's transaction (a
        file target, which has none, makes its file of `schema`)."""

    async def columns(self) -> list[TargetColumn]:
        """The target table's columns, in order (42P01 when it does not exist)."""

    async def write(self, batch: pa.RecordBatch) -> int:
        """Append `batch` (columns named as the target's, values already converted to
        their types); returns the rows written."""

    async def finish(self, commit: bool) -> None:
        """Commit or roll back, and give the connection back. A writer that cannot roll
        back (its connection broke) drops the connection, which the target rolls back."""
