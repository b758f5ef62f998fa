"""A MySQL/MariaDB table as a move's target: multi-row INSERTs in one transaction
(connectors.bulk).

Each batch becomes INSERT statements of `ROWS_PER_INSERT` rows, built as sqlglot
expressions (values as sqlglot literals, never pasted text). The connection is a
`connectors.writes.MySQLWriter`: the move's own, committed at its end, or the one an
explicit block holds, which the block's COMMIT or ROLLBACK ends.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid
from typing import Any

import pyarrow as pa
from sqlglot import exp

from connectors.bulk import TargetColumn
from connectors.writes import MySQLWriter
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

ROWS_PER_INSERT = 1000
_INTS = {"tinyint": "int2", "smallint": "int2", "mediumint": "int4", "int": "int4",
         "integer": "int4", "bigint": "int8"}
_WIDER = {"int2": "int4", "int4": "int8", "int8": "numeric"}  # an unsigned column's range
_TYPES = {"decimal": "numeric", "float": "float4", "double": "float8", "real": "float8",
          "char": "bpchar", "varchar": "varchar", "tinytext": "text", "text": "text",
          "mediumtext": "text", "longtext": "text", "binary": "bytea", "varbinary": "bytea",
          "tinyblob": "bytea", "blob": "bytea", "mediumblob": "bytea", "longblob": "bytea",
          "date": "date", "datetime": "timestamp", "timestamp": "timestamptz", "json": "json",
          "uuid": "uuid", "time": "interval"}


def target_column(name: str, data_type: str, column_type: str, length: int | None,
                  precision: int | None, scale: int | None, nullable: str) -> TargetColumn:
    t, full = data_type.lower(), column_type.lower()
    if t == "tinyint" and full.startswith("tinyint(1)"):
        pg = "bool"
    elif t in _INTS:
        pg = _WIDER[_INTS[t]] if "unsigned" in full else _INTS[t]
    else:
        pg = _TYPES.get(t, t)
    return TargetColumn(name, pg, length if pg in ("varchar", "bpchar") else None,
                        precision if pg == "numeric" and t == "decimal" else None,
                        scale if pg == "numeric" and t == "decimal" else None,
                        nullable.upper() == "NO")


def mysql_value(value: Any) -> exp.Expression:
    """A value as a MySQL literal: an aware timestamp as its UTC wall clock (the
    gateway's MySQL sessions run in UTC), numerics written out in full."""
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.true() if value else exp.false()
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise PgError(FEATURE_NOT_SUPPORTED, f"mysql has no numeric value {value}")
        return exp.Literal.number(format(value, "f"))
    if isinstance(value, float) and not math.isfinite(value):
        raise PgError(FEATURE_NOT_SUPPORTED, f"mysql has no float value {value}")
    if isinstance(value, (int, float)):
        return exp.Literal.number(repr(value))
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return exp.Literal.string(value.isoformat(sep=" "))
    if isinstance(value, (dt.date, dt.time)):
        return exp.Literal.string(value.isoformat())
    if isinstance(value, (str, uuid.UUID)):
        return exp.Literal.string(str(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return exp.HexString(this=bytes(value).hex())
    raise PgError(FEATURE_NOT_SUPPORTED, f"cannot write a {type(value).__name__} value to mysql")


class MySQLBulkWriter:
    def __init__(self, writer: MySQLWriter, table: str, own: bool) -> None:
        self.writer, self.table, self.own = writer, table, own
        self.created = False  # MySQL committed a CREATE TABLE: undone by DROP on failure

    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        assert ddl is not None
        await self.writer.command(ddl)
        self.created = True

    async def columns(self) -> list[TargetColumn]:
        query = (exp.select("column_name", "data_type", "column_type", "character_maximum_length",
                            "numeric_precision", "numeric_scale", "is_nullable")
                 .from_(exp.table_("columns", db="information_schema"))
                 .where(exp.column("table_schema").eq(exp.func("database")))
                 .where(exp.column("table_name").eq(exp.Literal.string(self.table)))
                 .where(exp.column("extra").like(exp.Literal.string("%GENERATED%")).not_())
                 .order_by("ordinal_position"))
        rows = await self.writer.fetch(query.sql(dialect="mysql"))
        if not rows:
            raise PgError("42P01", f'relation "{self.table}" does not exist')
        return [target_column(*row) for row in rows]

    async def write(self, batch: pa.RecordBatch) -> int:
        columns = [exp.to_identifier(name, quoted=True) for name in batch.schema.names]
        target = exp.Schema(this=exp.table_(self.table, quoted=True), expressions=columns)
        values = [column.to_pylist() for column in batch.columns]
        for start in range(0, batch.num_rows, ROWS_PER_INSERT):
            rows = [exp.Tuple(expressions=[mysql_value(v) for v in row])
                    for row in zip(*(col[start:start + ROWS_PER_INSERT] for col in values))]
            insert = exp.Insert(this=target, expression=exp.Values(expressions=rows))
            await self.writer.command(insert.sql(dialect="mysql"))
        return batch.num_rows

    async def finish(self, commit: bool) -> None:
        if not commit and self.created:
            await self.writer.command("ROLLBACK")  # the rows, then the table
            drop = exp.Drop(tables=[exp.table_(self.table, quoted=True)], kind="TABLE", exists=True)
            await self.writer.command(drop.sql(dialect="mysql"))
        if self.own:
            await self.writer.finish(commit)
