"""A SQLite database file as a federated source (stdlib sqlite3, off the event loop).

Each query opens its own read-only connection on a worker thread and hands rows over in
batches of `BATCH_ROWS`, so memory stays bounded; `aclose()` interrupts the statement and
closes the connection only after the worker thread has left it.
SQLite values are dynamically typed; connectors.sqlite.types gives tables and shipped
queries their Arrow types (a schema the planner passes wins).

`statement_log` (a path) appends every statement SQLite runs, via its trace hook: the
tests read it to prove what was shipped.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
from sqlglot import exp

from connectors.base import BatchStream, Pushdown, ScanRequest, TableInfo, TableRef
from connectors.dialects import sqlite as sqlite_dialect
from connectors.scan_sql import scan_schema, scan_tree
from connectors.sqlite.column_stats import distinct_counts
from connectors.sqlite.types import ResultTypes, arrow_type_for_decl, to_array, value_type
from connectors.statement_log import StatementLog
from pgwire.errors import (DIVISION_BY_ZERO, INTERNAL_ERROR, QUERY_CANCELED, SYNTAX_ERROR,
                            UNDEFINED_COLUMN, UNDEFINED_TABLE, PgError)

BATCH_ROWS = 65_536
UNDEFINED_FILE = "58P01"  # PostgreSQL's "could not open file": the database file is gone
PROGRESS_STEPS = 10_000
T = TypeVar("T")


def _estimate(con: sqlite3.Connection, table: str) -> int | None:
    """Rows in `table` as ANALYZE counted them, else the largest rowid (an upper bound
    read from the b-tree's last page, not a scan); None for a view or a WITHOUT ROWID table."""
    try:
        stat = con.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = ? LIMIT 1",
                           [table]).fetchone()
    except sqlite3.OperationalError:
        stat = None  # never analyzed: sqlite_stat1 does not exist
    if stat is not None and stat[0]:
        return int(str(stat[0]).split()[0])
    quoted = exp.to_identifier(table, quoted=True).sql("sqlite")
    try:
        row = con.execute(f"SELECT max(rowid) FROM {quoted}").fetchone()
    except sqlite3.OperationalError:
        return None  # no rowid
    return int(row[0]) if row and row[0] is not None else 0


def sqlite_error(exc: BaseException, raised: str | None) -> PgError:
    text = str(exc)
    if raised == sqlite_dialect.DIVISION_BY_ZERO:
        return PgError(DIVISION_BY_ZERO, "division by zero")
    if text == "interrupted":
        return PgError(QUERY_CANCELED, "canceling statement due to user request")
    if text == "unable to open database file":
        return PgError(UNDEFINED_FILE, f"sqlite: could not open the database file: {text}")
    if text.startswith("no such table"):
        return PgError(UNDEFINED_TABLE, f'relation "{text.split(": ", 1)[-1]}" does not exist')
    if text.startswith("no such column"):
        return PgError(UNDEFINED_COLUMN, f'column "{text.split(": ", 1)[-1]}" does not exist')
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
        self.statement_log = StatementLog(statement_log)
        self._types: ResultTypes | None = None  # from the tables' declared types

    def connect(self) -> tuple[sqlite3.Connection, dict[str, str | None]]:
        con = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                              check_same_thread=False)
        state: dict[str, str | None] = {"raised": None}

        def fedgate_raise(message: str) -> None:
            state["raised"] = message
            raise ValueError(message)

        con.create_function(sqlite_dialect.RAISE_FUNCTION, 1, fedgate_raise)
        if self.statement_log.path is not None:
            con.set_trace_callback(self.statement_log.write)
        return con, state

    async def tables(self) -> list[TableInfo]:
        try:
            return await asyncio.to_thread(self._tables)
        except sqlite3.Error as exc:
            raise sqlite_error(exc, None) from exc

    def _tables(self) -> list[TableInfo]:
        con, _ = self.connect()
        try:
            names = [r[0] for r in con.execute(
                "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
            infos = []
            stats = distinct_counts(con, self.name)
            for name in names:
                quoted = exp.to_identifier(name, quoted=True).sql("sqlite")
                cols = con.execute(f"PRAGMA table_info({quoted})").fetchall()
                fields = [pa.field(c[1], arrow_type_for_decl(c[2] or ""), nullable=not c[3])
                          for c in cols]
                key = tuple(c[1] for c in sorted((c for c in cols if c[5]), key=lambda c: c[5]))
                ref = TableRef(self.name, name, remote_name=name)
                infos.append(TableInfo(ref, pa.schema(fields), row_estimate=_estimate(con, name),
                                       column_stats=stats.get(name, ()), primary_key=key))
            self._types = ResultTypes({info.ref.name: info.schema for info in infos})
            return infos
        finally:
            con.close()

    def classify(self, table: TableRef, filters: Sequence[exp.Expression]) -> list[Pushdown]:
        return [self.dialect.classify(f, None).pushdown for f in filters]

    async def run_remote(self, sql: str, params: Sequence[Any] = (),
                         schema: pa.Schema | None = None) -> BatchStream:
        types: list[pa.DataType | None] = []
        if schema is None:
            if self._types is None:
                await self.tables()
            assert self._types is not None
            types = self._types.of(sql)
        try:
            stream = SQLiteStream(self, schema, types)
        except sqlite3.Error as exc:
            raise sqlite_error(exc, None) from exc
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
    """Batches of one SQLite query. Every call into sqlite3 runs on a worker thread; the
    connection is closed only once no worker is inside it (closing it under a running
    statement is undefined behaviour in SQLite's C API)."""

    def __init__(self, source: SQLiteSource, schema: pa.Schema | None,
                 types: list[pa.DataType | None]) -> None:
        self._source = source
        self._types = types
        self._con, self._state = source.connect()
        # Checked by SQLite every PROGRESS_STEPS VM steps: a non-zero answer stops the
        # statement with "interrupted", even one that started after interrupt() was sent.
        self._stop = False
        self._con.set_progress_handler(lambda: 1 if self._stop else 0, PROGRESS_STEPS)
        self._cursor: sqlite3.Cursor | None = None
        self._worker: asyncio.Future | None = None
        self._given = schema
        self.schema = schema or pa.schema([])
        self._first: pa.RecordBatch | None = None
        self._done = False

    async def _call(self, fn: Callable[[], T]) -> T:
        if self._done:
            raise PgError(QUERY_CANCELED, "canceling statement due to user request")
        worker = asyncio.get_running_loop().run_in_executor(None, fn)
        self._worker = worker
        try:
            return await asyncio.shield(worker)
        except asyncio.CancelledError:
            await self.aclose()  # stops the worker, then closes
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
            known = self._types if len(self._types) == len(names) else [None] * len(names)
            types = [t or next((value_type(v) for v in col if v is not None), pa.string())
                     for t, col in zip(known, columns)]
            self.schema = pa.schema([pa.field(n, t) for n, t in zip(names, types)])
        self._first = self._batch(rows) if rows else None
        if not rows:
            await self.aclose()

    def _batch(self, rows: list[tuple]) -> pa.RecordBatch:
        # One column at a time: zip(*rows) makes an iterator per row, and that churn of
        # 65,536 tracked objects per batch sets off the garbage collector (~5x slower).
        columns = [list(map(itemgetter(i), rows)) for i in range(len(self.schema))]
        arrays = [to_array(col, f.type) for col, f in zip(columns, self.schema)]
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
        """Stop the statement and close the connection once no worker is inside it."""
        if self._done:
            return
        self._done = True
        self._first = None
        worker, con = self._worker, self._con
        if worker is None or worker.done():
            con.close()
            return
        self._stop = True
        con.interrupt()
        # The close runs when the worker returns, even if this task is cancelled while
        # waiting for it below.
        worker.add_done_callback(lambda done: (_retrieve(done), con.close()))
        await asyncio.wait([worker])


def _retrieve(future: asyncio.Future) -> None:
    """Mark a stopped worker's outcome as seen (its "interrupted" error is expected)."""
    if not future.cancelled():
        future.exception()
