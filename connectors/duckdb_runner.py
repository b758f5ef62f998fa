"""Run DuckDB queries off the event loop and stream their Arrow batches.

Shared by the DuckDB source (a database file) and the DuckDB engine (in-memory residual
work). DuckDB releases the GIL while it executes, so each query runs on a worker thread
with a cursor of its own (a cursor is a separate connection to the same database; one
connection must not run two queries at once). Cancelling the asyncio task that awaits a
batch interrupts DuckDB, waits for the worker to stop, and only then re-raises, so a
cancelled query never keeps running behind the client's back.

Lossless Arrow export (needed so uuid and json keep their types) hands 128-bit integers
over as opaque 16-byte values, which no consumer understands; DuckDB makes them for
`sum()` of any integer column. They are re-labelled, without copying, as Arrow
decimal128(38, 0) (the same 16-byte two's complement layout): PostgreSQL's `numeric`,
which is what PostgreSQL's own sum of bigints returns.

PostgreSQL's average of integers and numerics is asked for as `fedgate_avg(sum, count,
scale)` (planner.pg_aggregates), by the DuckDB engine's residual and by queries shipped
whole to a DuckDB file or to Parquet/CSV files: an exact division, rounded half away from
zero at `scale`, NULL for no rows. DuckDB divides decimals only in DOUBLE, so `PG_MACROS`
defines it over 128-bit integers: the sum's digits without its point (its text keeps every
digit of its scale) are divided by the count, the quotient and the remainder scaled up
apart (so a sum of 10^25 at scale 13 needs no 38-digit intermediate), rounded, and written
back with `scale` digits as text, which the query casts to its DECIMAL. Any sum DuckDB
holds can be averaged this way. `try_divide(a, b)` (Spark's name) divides at the
dividend's scale the same way, for a dividend with |a| < 10^(38 - scale). They are TEMP macros (a
database file is opened read-only), which belong to one cursor; defining them costs tens
of milliseconds, so a cursor defines them the first time it runs a query that calls
one, not when it is created.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import duckdb
import numpy as np
import pyarrow as pa
from sqlglot import exp

from gateway.errors import NUMERIC_VALUE_OUT_OF_RANGE, PgError, from_exception

T = TypeVar("T")

# No network here and no surprise downloads in production either: extensions a query
# needs must be installed ahead of time, never fetched mid-query.
DUCKDB_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
# uuid and json come out as Arrow extension types, so they keep their PostgreSQL type.
SESSION_SETUP = ("SET arrow_lossless_conversion = true", "SET TimeZone = 'UTC'")
BATCH_ROWS = 65_536

PG_MACROS = (
    # Digits after the point of a decimal's text.
    ("CREATE TEMP MACRO fedgate_scale_of(digits) AS "
     "CASE WHEN strpos(digits, '.') = 0 THEN 0 ELSE length(digits) - strpos(digits, '.') END"),
    # t / n rounded half away from zero (// and % truncate toward zero); NULL for n = 0.
    ("CREATE TEMP MACRO fedgate_round_div(t, n) AS t // nullif(n, 0) + "
     "CASE WHEN 2 * abs(t % nullif(n, 0)) >= abs(n) THEN sign(t) * sign(n) ELSE 0 END"),
    # The digits of |r|, at least s + 1 of them (lpad would cut a longer text).
    ("CREATE TEMP MACRO fedgate_digits(r, s) AS lpad(CAST(abs(r) AS VARCHAR), "
     "CAST(greatest(length(CAST(abs(r) AS VARCHAR)), s + 1) AS INTEGER), '0')"),
    # The integer r read as r / 10^s, as text.
    ("CREATE TEMP MACRO fedgate_with_scale(r, s) AS "
     "CASE WHEN r < 0 THEN '-' ELSE '' END || CASE WHEN s = 0 THEN CAST(abs(r) AS VARCHAR) ELSE "
     "substr(fedgate_digits(r, s), 1, length(fedgate_digits(r, s)) - s) || '.' || "
     "right(fedgate_digits(r, s), CAST(s AS INTEGER)) END"),
    ("CREATE TEMP MACRO try_divide(a, b) AS CASE WHEN b = 0 THEN NULL ELSE fedgate_with_scale("
     "fedgate_round_div(CAST(replace(CAST(a AS VARCHAR), '.', '') AS HUGEINT), CAST(b AS HUGEINT)), "
     "fedgate_scale_of(CAST(a AS VARCHAR))) END"),
    # 10^k as a 128-bit integer (DuckDB's pow is a DOUBLE).
    "CREATE TEMP MACRO fedgate_pow10(k) AS CAST('1' || repeat('0', CAST(k AS INTEGER)) AS HUGEINT)",
    # The integer r read as r / 10^s, as text. A macro's argument is copied wherever it is
    # used, and DuckDB's planning time grows with the copies, so values used more than
    # once are bound once, as the element of a one-item list a lambda reads. The lambdas'
    # names are the macros' own: the query's columns are in scope too (`x.a` would be a
    # table x's column a).
    ("CREATE TEMP MACRO fedgate_int_text(r, s) AS list_transform([struct_pack("
     "neg := r < 0, a := CAST(abs(r) AS VARCHAR))], lambda fedgate_int_v: list_transform("
     "[lpad(fedgate_int_v.a, CAST(greatest(length(fedgate_int_v.a), s + 1) AS INTEGER), '0')], "
     "lambda fedgate_int_d: CASE WHEN fedgate_int_v.neg THEN '-' ELSE '' END || CASE WHEN s = 0 "
     "THEN fedgate_int_d ELSE substr(fedgate_int_d, 1, length(fedgate_int_d) - s) || '.' || "
     "right(fedgate_int_d, CAST(s AS INTEGER)) END)[1])[1]"),
    # An average: total / count at `scale` digits, as text (see the module docstring): v is
    # the sum's digits, k how many digits the result has beyond them; the quotient and
    # the remainder are scaled apart, so no step holds more digits than the result.
    ("CREATE TEMP MACRO fedgate_avg(total, count, scale) AS list_transform([struct_pack("
     "t := CAST(total AS VARCHAR), n := CAST(count AS HUGEINT))], lambda fedgate_avg_in: "
     "list_transform([struct_pack(v := CAST(replace(fedgate_avg_in.t, '.', '') AS HUGEINT), "
     "n := nullif(fedgate_avg_in.n, 0), k := scale - fedgate_scale_of(fedgate_avg_in.t))], "
     "lambda fedgate_avg_p: fedgate_int_text(CASE WHEN fedgate_avg_p.k >= 0 "
     "THEN fedgate_avg_p.v // fedgate_avg_p.n * fedgate_pow10(fedgate_avg_p.k) + fedgate_round_div("
     "fedgate_avg_p.v % fedgate_avg_p.n * fedgate_pow10(fedgate_avg_p.k), fedgate_avg_p.n) "
     "ELSE fedgate_round_div(fedgate_avg_p.v, fedgate_avg_p.n * fedgate_pow10(-fedgate_avg_p.k)) END, "
     "scale))[1])[1]"),
)
# A query that may call a macro of PG_MACROS (a false positive only costs their definition).
_CALLS_MACROS = re.compile(r"\b(?:try_divide|fedgate_avg)\s*\(", re.IGNORECASE)

_pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="duckdb")


class DuckDBRunner:
    """A DuckDB database plus a pool of idle cursors, each used by one query at a time."""

    def __init__(self, connection: duckdb.DuckDBPyConnection) -> None:
        self._con = connection
        for stmt in SESSION_SETUP:
            self._con.execute(stmt)
        self._idle: list[duckdb.DuckDBPyConnection] = []
        # The TimeZone each pooled cursor was last set to (a cursor's settings are its own).
        self._zones: dict[int, str] = {}
        # The pooled cursors that have PG_MACROS defined (a TEMP macro is its cursor's own).
        self._with_macros: set[int] = set()
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str = ":memory:", *, read_only: bool = False) -> DuckDBRunner:
        return cls(duckdb.connect(path, read_only=read_only, config=DUCKDB_CONFIG))

    def _acquire(self) -> duckdb.DuckDBPyConnection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        cursor = self._con.cursor()
        for stmt in SESSION_SETUP:
            cursor.execute(stmt)
        return cursor

    def _release(self, cursor: duckdb.DuckDBPyConnection) -> None:
        with self._lock:
            self._idle.append(cursor)

    def query_sync(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        """Run a small query to completion on the calling thread (catalog discovery)."""
        cursor = self._acquire()
        try:
            self.define_macros(cursor, sql)
            return cursor.sql(sql, params=list(params) or None).to_arrow_table()
        finally:
            self._release(cursor)

    async def stream(self, sql: str, params: Sequence[Any] = (), *,
                     register: dict[str, Any] | None = None,
                     timezone: str | None = None) -> DuckDBStream:
        """Start `sql` and return a stream whose schema is known and first batch fetched.

        `timezone` (the engine passes the client session's) is what zone-dependent
        expressions are computed in; None keeps the cursor's UTC (sources)."""
        cursor = self._acquire()
        stream = DuckDBStream(self, cursor)
        await stream.start(sql, list(params), register or {}, timezone)
        return stream

    def set_timezone(self, cursor: duckdb.DuckDBPyConnection, zone: str) -> None:
        """Give `cursor` the session's TimeZone (on the worker thread, before the query)."""
        if self._zones.get(id(cursor), "UTC") == zone:
            return
        # The zone is the client's text: quoted as a literal, never pasted into SQL.
        cursor.execute(f"SET TimeZone = {exp.Literal.string(zone).sql('duckdb')}")
        self._zones[id(cursor)] = zone

    def define_macros(self, cursor: duckdb.DuckDBPyConnection, sql: str) -> None:
        """Give `cursor` PG_MACROS if `sql` calls them and it has not got them yet (on
        the thread that then runs `sql`)."""
        if id(cursor) in self._with_macros or not _CALLS_MACROS.search(sql):
            return
        for statement in PG_MACROS:
            cursor.execute(statement)
        self._with_macros.add(id(cursor))

    def close(self) -> None:
        with self._lock:
            for cursor in self._idle:
                cursor.close()
            self._idle.clear()
            self._zones.clear()
            self._with_macros.clear()
        self._con.close()


class DuckDBStream:
    """Batches of one running DuckDB query; iterate it, or `aclose()` to stop early."""

    def __init__(self, runner: DuckDBRunner, cursor: duckdb.DuckDBPyConnection) -> None:
        self._runner = runner
        self._cursor: duckdb.DuckDBPyConnection | None = cursor
        self._reader: pa.RecordBatchReader | None = None
        self._registered: list[str] = []
        self._pending: list[pa.RecordBatch] = []
        self._done = False
        self.schema: pa.Schema = pa.schema([])

    async def _call(self, fn: Callable[[], T]) -> T:
        future = asyncio.get_running_loop().run_in_executor(_pool, fn)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # The worker thread is still inside DuckDB: stop it before giving the cursor back.
            if self._cursor is not None:
                self._cursor.interrupt()
            await asyncio.wait([future])
            if not future.cancelled():
                future.exception()  # the expected InterruptException: mark it retrieved
            await self.aclose()
            raise
        except Exception as exc:
            await self.aclose()
            raise from_exception(exc) from exc

    async def start(self, sql: str, params: list[Any], register: dict[str, Any],
                    timezone: str | None = None) -> None:
        def run() -> tuple[pa.RecordBatchReader, pa.RecordBatch | None]:
            assert self._cursor is not None
            if timezone is not None:
                self._runner.set_timezone(self._cursor, timezone)
            self._runner.define_macros(self._cursor, sql)
            for name, data in register.items():
                self._cursor.register(name, data)
                self._registered.append(name)
            reader = self._cursor.sql(sql, params=params or None).to_arrow_reader(BATCH_ROWS)
            self.schema = plain_schema(reader.schema)
            # Fetch the first batch in the same hop: most queries are small and finish here.
            return reader, self._next(reader)

        self._reader, first = await self._call(run)
        if first is None:
            await self._finish()
        else:
            self._pending.append(first)

    def __aiter__(self) -> DuckDBStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        if self._pending:
            return self._pending.pop()
        if self._done or self._reader is None:
            raise StopAsyncIteration
        reader = self._reader
        batch = await self._call(lambda: self._next(reader))
        if batch is None:
            await self._finish()
            raise StopAsyncIteration
        return batch

    def _next(self, reader: pa.RecordBatchReader) -> pa.RecordBatch | None:
        """The next batch, in the stream's schema (on the worker thread)."""
        batch = _read(reader)
        if batch is None or self.schema is reader.schema:
            return batch
        return plain_batch(batch, self.schema)

    async def _finish(self) -> None:
        self._done = True
        await self.aclose()

    async def aclose(self) -> None:
        """Give the cursor back; an unfinished reader is closed first (stops the query)."""
        self._done = True
        cursor, self._cursor = self._cursor, None
        if cursor is None:
            return
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()
        for name in self._registered:
            cursor.unregister(name)
        self._registered.clear()
        self._runner._release(cursor)


def _read(reader: pa.RecordBatchReader) -> pa.RecordBatch | None:
    try:
        return reader.read_next_batch()
    except StopIteration:
        return None


HUGEINT_AS = pa.decimal128(38, 0)


def _is_hugeint(t: pa.DataType) -> bool:
    return isinstance(t, pa.OpaqueType) and t.vendor_name == "DuckDB" and \
        t.type_name in ("hugeint", "uhugeint")


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` with 128-bit integers as decimal128(38, 0); the same object if it has none."""
    if not any(_is_hugeint(f.type) for f in schema):
        return schema
    return pa.schema([f.with_type(HUGEINT_AS) if _is_hugeint(f.type) else f for f in schema],
                     metadata=schema.metadata)


def plain_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    columns = [_as_decimal(c) if _is_hugeint(c.type) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _as_decimal(column: pa.Array) -> pa.Array:
    storage = column.storage
    validity, data = storage.buffers()
    if column.type.type_name == "uhugeint" and len(storage):
        # Above 2**127 an unsigned value would read as negative: refuse it instead.
        raw = np.frombuffer(data, dtype=np.uint8)[storage.offset * 16:(storage.offset + len(storage)) * 16]
        high = raw.reshape(-1, 16)[:, 15] >= 0x80
        if storage.null_count:
            high &= np.asarray(storage.is_valid())
        if high.any():
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow")
    return pa.Array.from_buffers(HUGEINT_AS, len(storage), [validity, data],
                                 storage.null_count, storage.offset)
