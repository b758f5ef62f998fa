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
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import duckdb
from duckdb.sqltypes import BIGINT, BOOLEAN, INTEGER, VARCHAR
import numpy as np
import pyarrow as pa
from sqlglot import exp

from connectors.dialects.duckdb.deviations import DEVIATION_FUNCTION, deviation
from connectors.dialects.duckdb.jsonb_contains import JSONB_CONTAINS_FUNCTION, jsonb_contains
from connectors.dialects.duckdb.numeric_calls import NUMERIC_CALL_FUNCTION, numeric_call
from pgwire.errors import NUMERIC_VALUE_OUT_OF_RANGE, PgError, from_exception

T = TypeVar("T")
log = logging.getLogger("fedgate.duckdb")

# No network here and no surprise downloads in production either: extensions a query
# needs must be installed ahead of time, never fetched mid-query.
DUCKDB_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
# Queries here run in PostgreSQL's name: no DuckDB function may reach a file or the
# network that the connection was not opened for (the planner refuses DuckDB's own
# functions too; this is the second wall). Off is for good: DuckDB refuses to turn
# external access back on while the database runs, and only the paths listed before it
# (a files source's Parquet files) stay readable. `lock_configuration` would be stronger
# still but forbids the per-cursor `SET TimeZone` the engine needs; the SQL run here is
# rendered from a parsed query, never a client's SET.
ALLOWED_PATHS_SETTING = "allowed_paths"


def restrict_access(con: duckdb.DuckDBPyConnection, allowed_paths: Sequence[str] = ()) -> None:
    """Turn `con`'s external access off for good, leaving only `allowed_paths` readable."""
    if allowed_paths:
        listed = ", ".join(exp.Literal.string(p).sql("duckdb") for p in allowed_paths)
        con.execute(f"SET {ALLOWED_PATHS_SETTING} = [{listed}]")
    con.execute("SET enable_external_access = false")


@dataclass(frozen=True)
class DuckDBLimits:
    """What every DuckDB this process opens may use: `memory_bytes` of memory (DuckDB's
    memory_limit: its buffer manager's hash tables, sorts and aggregates, which spill to
    disk beyond it), and a folder of its own inside `temp_parent` to spill into, of at
    most `temp_max_bytes` (None: DuckDB's default, 90 % of the free disk).

    preserve_insertion_order stays on: turning it off lets DuckDB drop the order of rows
    a query without ORDER BY returns (clients and tests see PostgreSQL's scan order
    there), and it saves memory only when whole results are materialized, which the
    engine never does (it streams results out). threads stays DuckDB's default, one per
    core: each thread's share of the limit is what a spilling operator works within."""

    memory_bytes: int
    temp_parent: str
    temp_max_bytes: int | None = None


# Set once at start-up (gateway.server.listener) before any DuckDB is opened; None (a
# unit test, a tool) leaves DuckDB's own defaults.
PROCESS_LIMITS: list[DuckDBLimits] = []


def limit_every_database(limits: DuckDBLimits) -> None:
    """Open every later DuckDB of this process with `limits`."""
    PROCESS_LIMITS[:] = [limits]


def _limited_config(limits: DuckDBLimits | None) -> tuple[dict[str, Any], str | None]:
    """DUCKDB_CONFIG with `limits`' settings, and the spill folder made for them."""
    if limits is None:
        return dict(DUCKDB_CONFIG), None
    folder = tempfile.mkdtemp(prefix="fedgate-duckdb-", dir=limits.temp_parent)
    config: dict[str, Any] = {**DUCKDB_CONFIG, "memory_limit": f"{max(1, limits.memory_bytes >> 10)}KiB",
                              "temp_directory": folder}
    if limits.temp_max_bytes is not None:
        config["max_temp_directory_size"] = f"{max(1, limits.temp_max_bytes >> 10)}KiB"
    return config, folder


# uuid and json come out as Arrow extension types, so they keep their PostgreSQL type.
SESSION_SETUP = ("SET arrow_lossless_conversion = true", "SET TimeZone = 'UTC'")
BATCH_ROWS = 65_536
INTERRUPT_EVERY_S = 0.05  # a cancelled query is interrupted again this often until it stops
# How long a stream that gathers small batches (`stream(gather=True)`) keeps reading more
# before it hands over what it has: rows that come slowly are not held back for long.
GATHER_WITHIN_S = 0.05

_pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="duckdb")


class DuckDBRunner:
    """A DuckDB database plus a pool of idle cursors, each used by one query at a time."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, spill_folder: str | None = None) -> None:
        self._con = connection
        self.spill_folder = spill_folder  # removed when the runner closes
        # What the DuckDB dialect's rewrites call (its cursors share the connection's).
        connection.create_function(DEVIATION_FUNCTION, deviation, [VARCHAR, BIGINT, VARCHAR, VARCHAR, INTEGER],
                                   VARCHAR, null_handling="special")
        connection.create_function(NUMERIC_CALL_FUNCTION, numeric_call, [VARCHAR, VARCHAR, INTEGER, VARCHAR, INTEGER],
                                   VARCHAR, null_handling="special")
        connection.create_function(JSONB_CONTAINS_FUNCTION, jsonb_contains, [VARCHAR, VARCHAR], BOOLEAN)
        for stmt in SESSION_SETUP:
            self._con.execute(stmt)
        self._idle: list[duckdb.DuckDBPyConnection] = []
        # The TimeZone each pooled cursor was last set to (a cursor's settings are its own).
        self._zones: dict[int, str] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str = ":memory:", *, read_only: bool = False,
             allowed_paths: Sequence[str] = ()) -> DuckDBRunner:
        """A runner on database `path` (its own file stays readable) whose queries reach
        no other file but `allowed_paths`."""
        config, folder = _limited_config(PROCESS_LIMITS[0] if PROCESS_LIMITS else None)
        con = duckdb.connect(path, read_only=read_only, config=config)
        restrict_access(con, allowed_paths)
        return cls(con, folder)

    def memory_in_use(self) -> tuple[int, int]:
        """Bytes of memory DuckDB's buffer manager holds now, and bytes spilled to its
        temporary folder (for /metrics and the status page)."""
        row = self.query_sync("SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT, "
                              "coalesce(sum(temporary_storage_bytes), 0)::BIGINT FROM duckdb_memory()")
        return int(row.column(0)[0].as_py()), int(row.column(1)[0].as_py())

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
            return cursor.sql(sql, params=list(params) or None).to_arrow_table()
        finally:
            self._release(cursor)

    async def stream(self, sql: str, params: Sequence[Any] = (), *,
                     register: dict[str, Any] | None = None,
                     timezone: str | None = None, gather: bool = False) -> DuckDBStream:
        """Start `sql` and return a stream whose schema is known and first batch fetched.

        `timezone` (the engine passes the client session's) is what zone-dependent
        expressions are computed in; None keeps the cursor's UTC (sources). `gather`:
        consecutive small batches are handed over as one of up to BATCH_ROWS rows (a
        pyarrow dataset's scan comes out one batch per row group, often a few thousand
        rows, and every batch costs the wire encoder a fixed price); for readers of
        files, whose batches come as fast as they are read."""
        cursor = self._acquire()
        stream = DuckDBStream(self, cursor, gather)
        await stream.start(sql, list(params), register or {}, timezone)
        return stream

    def set_timezone(self, cursor: duckdb.DuckDBPyConnection, zone: str) -> None:
        """Give `cursor` the session's TimeZone (on the worker thread, before the query)."""
        if self._zones.get(id(cursor), "UTC") == zone:
            return
        # The zone is the client's text: quoted as a literal, never pasted into SQL.
        cursor.execute(f"SET TimeZone = {exp.Literal.string(zone).sql('duckdb')}")
        self._zones[id(cursor)] = zone

    def close(self) -> None:
        with self._lock:
            for cursor in self._idle:
                cursor.close()
            self._idle.clear()
            self._zones.clear()
        self._con.close()
        if self.spill_folder is not None:
            try:
                shutil.rmtree(self.spill_folder)
            except FileNotFoundError:
                pass  # DuckDB removed it itself
            except OSError as exc:  # closing goes on; the folder is only disk to reclaim
                log.warning("could not remove DuckDB's spill folder %s: %s", self.spill_folder, exc)
            self.spill_folder = None


class DuckDBStream:
    """Batches of one running DuckDB query; iterate it, or `aclose()` to stop early."""

    def __init__(self, runner: DuckDBRunner, cursor: duckdb.DuckDBPyConnection,
                 gather: bool = False) -> None:
        self._runner = runner
        self._gather = gather
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
            # The worker thread is still inside DuckDB: stop it before giving the cursor
            # back. An interrupt that comes before the query has begun is forgotten when
            # it begins (and the query then runs to its end, minutes for some): so it is
            # repeated until the worker is out.
            while not future.done():
                if self._cursor is not None:
                    self._cursor.interrupt()
                await asyncio.wait([future], timeout=INTERRUPT_EVERY_S)
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
            for name, data in register.items():
                self._cursor.register(name, data)
                self._registered.append(name)
            reader = self._cursor.sql(sql, params=params or None).to_arrow_reader(BATCH_ROWS)
            # Kept at once: a cancel that comes while this thread finishes finds the
            # reader in `aclose`, which closes it before the cursor goes back to the pool
            # (a cursor with an open result refuses every later query).
            self._reader = reader
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
        batch = _read(reader) if not self._gather else gathered_batch(reader)
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


def gathered_batch(reader: pa.RecordBatchReader, rows: int = BATCH_ROWS) -> pa.RecordBatch | None:
    """The next batches of `reader` as one: read until `rows` rows (the last batch read
    may take it past them), the end, or GATHER_WITHIN_S."""
    first = _read(reader)
    if first is None or first.num_rows >= rows:
        return first
    batches, gathered = [first], first.num_rows
    until = time.monotonic() + GATHER_WITHIN_S
    while gathered < rows and time.monotonic() < until:
        batch = _read(reader)
        if batch is None:
            break
        batches.append(batch)
        gathered += batch.num_rows
    return first if len(batches) == 1 else pa.concat_batches(batches)


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
