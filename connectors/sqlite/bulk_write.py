"""A SQLite table as a move's target: batched inserts in one transaction (connectors.bulk).

The INSERT is built once by sqlglot with `?` markers and run by `executemany` per batch,
on a `connectors.writes.SqliteWriter` (BEGIN IMMEDIATE): the move's own, committed at
its end, or the one an explicit block holds. SQLite does not check declared types, so
the gateway's conversion (`gateway.executor.assignment`) is what keeps a VARCHAR(n) to
its length and an INTEGER column to integers.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import decimal
import re
import sqlite3
import uuid
from typing import Any

import pyarrow as pa
from sqlglot import exp

from connectors.bulk import TargetColumn
from connectors.dialects.sqlite import to_sqlite
from connectors.sqlite.types import arrow_type_for_decl
from connectors.writes import SqliteWriter, sqlite_error

# A declared length: VARCHAR(n), CHAR(n), and TEXT(n), which is how sqlglot writes a
# varchar(n) of the gateway's CREATE TABLE for SQLite.
_LENGTH = re.compile(r"^\s*(?:VARCHAR|CHARACTER VARYING|NVARCHAR|CHAR|CHARACTER|NCHAR|TEXT)\s*\(\s*(\d+)\s*\)",
                     re.I)
_PG_OF_ARROW = {pa.bool_(): "bool", pa.int64(): "int8", pa.string(): "text", pa.binary(): "bytea",
                pa.float64(): "float8", pa.timestamp("us"): "timestamp", pa.date32(): "date"}


def target_column(name: str, declared: str, not_null: bool) -> TargetColumn:
    arrow = arrow_type_for_decl(declared or "")
    pg = _PG_OF_ARROW.get(arrow, "text")
    if "NUMERIC" in declared.upper() or "DECIMAL" in declared.upper():
        pg = "numeric"  # kept exact: stored as integer or real by SQLite's affinity
    length = _LENGTH.match(declared or "")
    if length is not None:
        fixed = declared.upper().lstrip().startswith(("CHAR", "NCHAR")) and "VARYING" not in declared.upper()
        return TargetColumn(name, "bpchar" if fixed else "varchar",
                            int(length.group(1)), not_null=not_null)
    return TargetColumn(name, pg, not_null=not_null)


def sqlite_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)  # NUMERIC affinity stores it as the number it spells
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bool):
        return int(value)
    return value


class SqliteBulkWriter:
    def __init__(self, writer: SqliteWriter, table: str, own: bool) -> None:
        self.writer, self.table, self.own = writer, table, own

    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        assert ddl is not None
        await self.writer.command(ddl)

    async def columns(self) -> list[TargetColumn]:
        pragma = f"PRAGMA table_info({exp.to_identifier(self.table, quoted=True).sql(dialect='sqlite')})"
        try:
            rows = await asyncio.to_thread(lambda: self.writer.con.execute(pragma).fetchall())
        except sqlite3.Error as exc:
            raise sqlite_error(exc) from exc
        if not rows:
            raise sqlite_error(sqlite3.OperationalError(f"no such table: {self.table}"))
        return [target_column(row[1], row[2], bool(row[3])) for row in rows]

    async def write(self, batch: pa.RecordBatch) -> int:
        if batch.num_rows == 0:
            return 0
        columns = [exp.to_identifier(name, quoted=True) for name in batch.schema.names]
        insert = exp.Insert(this=exp.Schema(this=exp.table_(self.table, quoted=True), expressions=columns),
                            expression=exp.Values(expressions=[exp.Tuple(
                                expressions=[exp.Placeholder() for _ in columns])]))
        sql = to_sqlite(insert)
        rows = list(zip(*([sqlite_value(v) for v in column.to_pylist()] for column in batch.columns)))
        try:
            await asyncio.to_thread(self.writer.con.executemany, sql, rows)
        except sqlite3.Error as exc:
            raise sqlite_error(exc) from exc
        return batch.num_rows

    async def finish(self, commit: bool) -> None:
        if self.own:
            await self.writer.finish(commit)
