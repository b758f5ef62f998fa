"""Apache Spark (PySpark) as the residual engine, for work that outgrows one process.

One SparkSession per gateway process, started on first use (a JVM start costs seconds)
and reused: `local[*]` by default, a cluster through `spark_master`, or Spark Connect
through `spark_remote`. Each query runs in its own child session (`newSession()`), so the
fragment views of concurrent queries never collide, and carries a tag so a cancel
interrupts exactly its jobs. Fragments arrive as Arrow and become DataFrames; results
come back as Arrow batches. (On a cluster, large PostgreSQL/MySQL/Parquet fragments are
better read by Spark itself through JDBC or `spark.read`: the JDBC path is not built yet.)
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from connectors.base import BatchStream, TableStream
from gateway.errors import QUERY_CANCELED, PgError, from_exception

_tags = itertools.count(1)


def _sparkable(table: pa.Table) -> pa.Table:
    """Arrow types Spark cannot take (uuid/json extensions, views) as plain ones."""
    columns, fields = [], []
    for field, column in zip(table.schema, table.columns):
        t = field.type
        if isinstance(t, pa.BaseExtensionType):
            column = column.cast(t.storage_type) if t.extension_name != "arrow.uuid" else \
                pa.chunked_array([pa.array([None if v is None else str(v) for v in column.to_pylist()],
                                           pa.string())])
            if t.extension_name == "arrow.bool8":
                column = column.cast(pa.bool_())
        elif pa.types.is_string_view(t) or pa.types.is_large_string(t):
            column = column.cast(pa.string())
        columns.append(column)
        fields.append(pa.field(field.name, column.type))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


class SparkEngine:
    name = "spark"

    def __init__(self, master: str = "local[*]", remote: str | None = None) -> None:
        self.master = master
        self.remote = remote
        self._spark: Any = None
        self._lock = threading.Lock()

    def _session(self) -> Any:
        with self._lock:
            if self._spark is None:
                from pyspark.sql import SparkSession  # imported on first use: a heavy import

                builder = SparkSession.builder.appName("fedgate")
                builder = builder.remote(self.remote) if self.remote else builder.master(self.master)
                for key, value in {
                    "spark.sql.ansi.enabled": "true",  # division by zero raises, as in PostgreSQL
                    "spark.sql.session.timeZone": "UTC",
                    "spark.sql.execution.arrow.pyspark.enabled": "true",
                    "spark.ui.enabled": "false",
                    "spark.sql.shuffle.partitions": "8",
                }.items():
                    builder = builder.config(key, value)
                self._spark = builder.getOrCreate()
                # Query errors reach the client as ErrorResponses; Spark would also print
                # each one with a full JVM stack trace.
                self._spark.sparkContext.setLogLevel("ERROR")
                logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
            return self._spark

    def _run(self, sql: str, tables: Mapping[str, pa.Table], params: Sequence[Any], tag: str) -> pa.Table:
        session = self._session().newSession()
        session.addTag(tag)
        try:
            for name, table in tables.items():
                session.createDataFrame(_sparkable(table)).createOrReplaceTempView(name)
            args = {f"p{i}": value for i, value in enumerate(params, 1)}
            frame = session.sql(sql, args=args) if args else session.sql(sql)
            return frame.toArrow()
        finally:
            session.removeTag(tag)

    async def execute(self, sql: str, inputs: Mapping[str, pa.Table | pa.RecordBatchReader],
                      params: Sequence[Any] = ()) -> BatchStream:
        tag = f"fedgate-{next(_tags)}"
        tables = {}
        for name, data in inputs.items():
            # Fragments are read whole before Spark starts: Spark plans over complete inputs.
            tables[name] = await asyncio.to_thread(data.read_all) if isinstance(data, pa.RecordBatchReader) else data
        task = asyncio.ensure_future(asyncio.to_thread(self._run, sql, tables, params, tag))
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            self._session().interruptTag(tag)
            await asyncio.wait([task])
            raise
        except Exception as exc:
            raise _error(exc) from exc
        return TableStream(result)

    async def describe(self, sql: str, inputs: Mapping[str, pa.Schema],
                       params: Sequence[Any] = ()) -> pa.Schema:
        empty = {name: schema.empty_table() for name, schema in inputs.items()}
        stream = await self.execute(f"SELECT * FROM ({sql}) AS described LIMIT 0", empty, params)
        return stream.schema

    async def close(self) -> None:
        if self._spark is not None:
            await asyncio.to_thread(self._spark.stop)
            self._spark = None


def _error(exc: Exception) -> PgError:
    """Spark's error classes to SQLSTATEs (Spark reports the SQLSTATE of ANSI errors)."""
    state = getattr(exc, "getSqlState", lambda: None)()
    text = str(exc).split("\n")[0]
    if state and len(state) == 5:
        if state == "22012":
            return PgError(state, "division by zero")
        return PgError(state, text)
    if "cancel" in text.lower() or "interrupt" in text.lower():
        return PgError(QUERY_CANCELED, "canceling statement due to user request")
    return from_exception(exc)
