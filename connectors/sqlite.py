"""A SQLite database file as a federated source (stdlib sqlite3, off the event loop).

Each query opens its own read-only connection on a worker thread and hands rows over in
batches of `BATCH_ROWS`, so memory stays bounded; `aclose()` interrupts the statement.
SQLite values are dynamically typed: a table's Arrow schema comes from the declared
column types (affinity rules; BOOLEAN as bool, DATE/DATETIME/TIMESTAMP text as Arrow
temporal types). A shipped query's result columns have no declared type in Python's
sqlite3, so their type is taken from the first batch's values (and is text when a column
is all NULL there). A value that does not fit its column's type fails the query with
22P02 rather than being coerced.

`statement_log` (a path) appends every statement SQLite runs, via its trace hook: the
tests read it to prove what was shipped.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from sqlglot import exp

from connectors.base import BatchStream, Pushdown, ScanRequest, TableInfo, TableRef
from connectors.dialects import sqlite as sqlite_dialect
from connectors.scan_sql import scan_schema, scan_tree
from gateway.errors import (DIVISION_BY_ZERO, INTERNAL_ERROR, INVALID_TEXT_REPRESENTATION,
                            QUERY_CANCELED, SYNTAX_ERROR, UNDEFINED_TABLE, PgError)

BATCH_ROWS = 65_536


def arrow_type_for_decl(declared: str) -> pa.DataType:
    """SQLite's affinity rules (https://sqlite.org/datatype3.html §3.1), plus temporal names."""
    d = declared.upper()
    if d.startswith("BOOL"):
        return pa.bool_()
    if "INT" in d:
        return pa.int64()
    if "CHAR" in d or "CLOB" in d or "TEXT" in d:
        return pa.string()
    if "BLOB" in d or not d:
        return pa.binary() if d else pa.string()
    if "REAL" in d or "FLOA" in d or "DOUB" in d:
        return pa.float64()
    if d.startswith("DATETIME") or d.startswith("TIMESTAMP"):
        return pa.timestamp("us")
    if d.startswith("DATE"):
        return pa.date32()
    return pa.float64()  # NUMERIC affinity: SQLite stores these as integer or real


def _value_type(value: Any) -> pa.DataType:
    return {int: pa.int64(), float: pa.float64(), str: pa.string(),
            bytes: pa.binary()}.get(type(value), pa.string())


def to_array(values: list[Any], t: pa.DataType) -> pa.Array:
    try:
        if pa.types.is_temporal(t):
            return pa.array(values, pa.string()).cast(t)
        return pa.array(values, t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise PgError(INVALID_TEXT_REPRESENTATION,
                      f"sqlite value does not fit column type {t}: {exc}") from exc


def sqlite_error(exc: BaseException, raised: str | None) -> PgError:
    text = str(exc)
    if raised == sqlite_dialect.DIVISION_BY_ZERO:
        return PgError(DIVISION_BY_ZERO, "division by zero")
    if text == "interrupted":
        return PgError(QUERY_CANCELED, "canceling statement due to user request")
    if text.startswith("no such table"):
        return PgError(UNDEFINED_TABLE, f'relation "{text.split(": ", 1)[-1]}" does not exist')
    if "syntax error" in text:
        return PgError(SYNTAX_ERROR, text)
    return PgError(INTERNAL_ERROR, f"sqlite: {text}")


class SQLiteSource:
    dialect = sqlite_dialect.DIALECT

    def __init__(self, name: str, path: str | Path, *, statement_log: str | Path | None = None):
        self.name = name
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"sqlite database {self.path} does not exist")
        self.statement_log = Path(statement_log) if statement_log else None
        self._log_lock = threading.Lock()

    def connect(self) -> tuple[sqlite3.Connection, dict[str, str | None]]:
        con = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                              check_same_thread=False)
        state: dict[str, str | None] = {"raised": None}

        def fedgate_raise(message: str) -> None:
            state["raised"] = message
            raise ValueError(message)

        con.create_function(sqlite_dialect.RAISE_FUNCTION, 1, fedgate_raise)
        if self.statement_log is not None:
            con.set_trace_callback(self._log)
        return con, state

    def _log(self, statement: str) -> None:
        assert self.statement_log is not None
        with self._log_lock, open(self.statement_log, "a") as f:
            f.write(statement.replace("\n", " ") + "\n")

    async def tables(self) -> list[TableInfo]:
        return await asyncio.to_thread(self._tables)

    def _tables(self) -> list[TableInfo]:
        con, _ = self.connect()
        try:
            names = [r[0] for r in con.execute(
                "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
            infos = []
            for name in names:
                quoted = exp.to_identifier(name, quoted=True).sql("sqlite")
                cols = con.execute(f"PRAGMA table_info({quoted})").fetchall()
                fields = [pa.field(c[1], arrow_type_for_decl(c[2] or ""), nullable=not c[3])
                          for c in cols]
                key = tuple(c[1] for c in sorted((c for c in cols if c[5]), key=lambda c: c[5]))
                ref = TableRef(self.name, name, remote_name=name)
                infos.append(TableInfo(ref, pa.schema(fields), row_estimate=None, primary_key=key))
            return infos
        finally:
            con.close()

    def classify(self, table: TableRef, filters: Sequence[exp.Expression]) -> list[Pushdown]:
        return [self.dialect.classify(f, None).pushdown for f in filters]

    async def run_remote(self, sql: str, params: Sequence[Any] = (),
                         schema: pa.Schema | None = None) -> BatchStream:
        stream = SQLiteStream(self, schema)
        await stream.start(sql, list(params))
        return stream

    async def describe(self, sql: str, params: Sequence[Any] = ()) -> pa.Schema:
        stream = await self.run_remote(sql, params)
        await stream.aclose()
        return stream.schema

    async def scan(self, req: ScanRequest) -> BatchStream:
        schema = scan_schema(await self.tables(), req)
        return await self.run_remote(self.dialect.to_sql(scan_tree(req)), schema=schema)

    async def close(self) -> None:
        return None


class SQLiteStream:
    def __init__(self, source: SQLiteSource, schema: pa.Schema | None) -> None:
        self._source = source
        self._con, self._state = source.connect()
        self._cursor: sqlite3.Cursor | None = None
        self._given = schema
        self.schema = schema or pa.schema([])
        self._first: pa.RecordBatch | None = None
        self._done = False

    async def _call(self, fn):
        try:
            return await asyncio.shield(asyncio.to_thread(fn))
        except asyncio.CancelledError:
            self._con.interrupt()
            await self.aclose()
            raise
        except sqlite3.Error as exc:
            await self.aclose()
            raise sqlite_error(exc, self._state["raised"]) from exc

    async def start(self, sql: str, params: list[Any]) -> None:
        def run() -> list[tuple]:
            self._cursor = self._con.execute(sql, params)
            return self._cursor.fetchmany(BATCH_ROWS)

        rows = await self._call(run)
        assert self._cursor is not None
        names = [d[0] for d in self._cursor.description or ()]
        if self._given is None:
            columns = list(zip(*rows)) if rows else [() for _ in names]
            types = [next((_value_type(v) for v in col if v is not None), pa.string())
                     for col in columns]
            self.schema = pa.schema([pa.field(n, t) for n, t in zip(names, types)])
        self._first = self._batch(rows) if rows else None
        if not rows:
            await self.aclose()

    def _batch(self, rows: list[tuple]) -> pa.RecordBatch:
        columns = list(zip(*rows))
        arrays = [to_array(list(col), f.type) for col, f in zip(columns, self.schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def __aiter__(self) -> SQLiteStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        if self._first is not None:
            batch, self._first = self._first, None
            return batch
        if self._done or self._cursor is None:
            raise StopAsyncIteration
        cursor = self._cursor
        rows = await self._call(lambda: cursor.fetchmany(BATCH_ROWS))
        if not rows:
            await self.aclose()
            raise StopAsyncIteration
        return self._batch(rows)

    async def aclose(self) -> None:
        if self._done:
            return
        self._done = True
        self._con.interrupt()
        self._con.close()
