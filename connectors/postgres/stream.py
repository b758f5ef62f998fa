"""A shipped query's rows from PostgreSQL: `COPY (query) TO STDOUT (FORMAT csv)` as Arrow.

asyncpg hands us the bytes, we cut them at record boundaries into segments of a few MB, and
pyarrow's CSV reader turns each segment into Arrow batches on a worker thread
(connectors.postgres.types has the type rules). A bounded queue between the two keeps memory
flat: when the consumer stops reading, the COPY stops reading the socket and the server
waits. `aclose()` stops the COPY on the server too: see `PostgresStream.aclose` for the two
ways.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg
import pyarrow as pa
import pyarrow.csv as pacsv

from connectors.postgres import snapshot as pg_snapshot
from connectors.postgres.roles import set_role_sql
from connectors.postgres.bound_text import Template, bound_text
from connectors.postgres.csv_text import read_csv
from connectors.postgres.failures import pg_error
from connectors.postgres.types import ColumnType

log = logging.getLogger("fedgate.postgres")

# The name the source's sessions carry: a backend is cancelled only when it carries it
# (`_cancel_backend`), so a recycled pid of someone else's session is never hit.
APPLICATION_NAME = "fedgate"
SEGMENT_BYTES = 4 << 20  # parse unit: big enough for pyarrow's speed, small for memory
QUEUE_SEGMENTS = 2
# A segment this small is parsed on the event loop: a thread's hand-over costs more. (Its
# reader keeps use_threads: without, the loop waits on pyarrow's I/O pool, 2-3x longer.)
LOOP_PARSE_BYTES = 32 << 10
BATCH_ROWS = 65_536
# A stopped COPY's connection gets back to idle this fast, or is dropped. PostgreSQL
# ignores a CancelRequest that reaches the backend before the COPY does, and the COPY
# then runs on (minutes, for a count over billions): waiting for its end would leave the
# client's session without an answer.
RECOVER_WITHIN_S = 2.0


class PostgresStream:
    """Batches of one COPY; `aclose()` cancels it on the server and frees the connection."""

    def __init__(self, pool: asyncpg.Pool, conn: asyncpg.Connection,
                 columns: list[ColumnType], template: Template | None = None) -> None:
        self._pool = pool
        self._template = template  # how the COPY's parameters are bound (bound_text)
        self._conn: asyncpg.Connection | None = conn
        self._columns = columns
        self.schema = pa.schema([c.field for c in columns])
        self._queue: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue(QUEUE_SEGMENTS)
        self._task: asyncio.Task | None = None
        self._pending: list[pa.RecordBatch] = []
        self._done = False
        self._share: pg_snapshot.SharedSnapshot | None = None
        self._exporter = False
        self._putting = False  # the COPY task waits in our queue, not in asyncpg
        self._read = pacsv.ReadOptions(column_names=[f"c{i}" for i in range(len(columns))],
                                       block_size=SEGMENT_BYTES * 2)
        # A one-column NULL is an empty line: a record, not a blank to skip.
        self._parse_options = pacsv.ParseOptions(ignore_empty_lines=False)
        self._convert = pacsv.ConvertOptions(
            column_types={f"c{i}": c.parse_as for i, c in enumerate(columns)},
            true_values=["t"], false_values=["f"], null_values=[""],
            strings_can_be_null=True, quoted_strings_can_be_null=False)

    async def start(self, sql: str, params: list[Any],
                    share: pg_snapshot.SharedSnapshot | None = None, role: str | None = None,
                    settings: str | None = None) -> None:
        """Open the read-only transaction (on the query's shared snapshot, if any), under
        `role` and with `settings` (SET LOCAL commands) for this transaction only
        (connectors.postgres.roles), and start the COPY."""
        assert self._conn is not None
        self._transaction = self._conn.transaction(isolation="repeatable_read", readonly=True)
        self._share = share
        try:
            self._exporter = await pg_snapshot.begin(self._conn, self._transaction, share)
            if role is not None:
                await self._conn.execute(set_role_sql(role, local=True))
            if settings is not None:
                await self._conn.execute(settings)
        except BaseException as exc:
            # A cancel too: else the connection, mid-transaction, never goes back to the
            # pool, and a few such cancels leave every later statement waiting for one.
            await self.aclose()
            if isinstance(exc, Exception):
                raise pg_error(exc) from exc
            raise
        self._task = asyncio.create_task(self._copy(sql, params))

    async def _copy(self, sql: str, params: list[Any]) -> None:
        assert self._conn is not None
        buffer = bytearray()

        async def sink(chunk: bytes) -> None:
            buffer.extend(chunk)
            if len(buffer) >= SEGMENT_BYTES:
                cut = _record_boundary(buffer)
                if cut > 0:
                    with memoryview(buffer) as view:  # one copy, not two
                        segment = bytes(view[:cut])
                    del buffer[:cut]
                    await self._put(segment)

        try:
            # Rows of no columns (`SELECT FROM t`) are empty lines, one a row.
            text = await bound_text(self._conn, sql, params, self._template)
            await self._conn.copy_from_query(text, output=sink, format="csv")
            if buffer:
                await self._put(bytes(buffer))
            await self._put(None)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._put(pg_error(exc))

    async def _put(self, item: bytes | BaseException | None) -> None:
        if self._done:  # closed: nobody reads any more (see _settle)
            return
        self._putting = True
        try:
            await self._queue.put(item)
        finally:
            self._putting = False

    def __aiter__(self) -> PostgresStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        while not self._pending:
            if self._done:
                raise StopAsyncIteration
            item = await self._queue.get()
            if item is None:
                await self._finish()
                raise StopAsyncIteration
            if isinstance(item, BaseException):
                await self.aclose()
                raise item
            parsed = self._parse(item) if len(item) <= LOOP_PARSE_BYTES else \
                await asyncio.to_thread(self._parse, item)
            self._pending = list(reversed(parsed))
        return self._pending.pop()

    def _parse(self, segment: bytes) -> list[pa.RecordBatch]:
        if not self._columns:  # rows of no columns: one empty line each, only a count
            rows = pa.array([{}] * segment.count(b"\n"), type=pa.struct([]))
            return [pa.RecordBatch.from_struct_array(rows)]
        table = read_csv(pa.py_buffer(segment), self._read, self._parse_options, self._convert,
                         self.schema.names)
        arrays = []
        for column, ctype in zip(table.columns, self._columns):
            array = column.combine_chunks()
            arrays.append(ctype.convert(array) if ctype.convert else array)
        whole = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        return [whole.slice(i, BATCH_ROWS) for i in range(0, whole.num_rows, BATCH_ROWS)]

    async def _finish(self) -> None:
        self._done = True
        conn, self._conn = self._conn, None
        if conn is None:
            return
        self._end_export()
        try:
            await self._transaction.commit()
        finally:
            await self._pool.release(conn)

    def _end_export(self) -> None:
        # Late importers must not ask for a snapshot whose transaction is ending.
        if self._exporter and self._share is not None:
            self._share.exporter_open = False

    async def aclose(self) -> None:
        """Stop the COPY on the server and give the connection back (or drop it).

        A COPY task waiting in our queue is cancelled there: asyncpg sees the error in
        its output callback, sends a CancelRequest and drops the rest up to
        ReadyForQuery, and the connection is rolled back and reused. A task waiting for
        the server inside asyncpg is not cancelled: a result that arrives in the same
        turn of the event loop as the cancel takes asyncpg's place of the awaited result,
        no CancelRequest is sent, and the next result breaks its protocol state (the
        AttributeError of MagicStack/asyncpg#240, in data_received, logged by the event
        loop). That connection is dropped instead, and the query is cancelled from
        another connection.
        """
        self._done = True
        self._pending.clear()
        conn, self._conn = self._conn, None
        if conn is None:
            return
        task, self._task = self._task, None
        self._end_export()
        if task is not None and not task.done() and not self._putting:
            await self._abandon(conn, task)
            return
        if task is not None and not task.done():
            task.cancel()
            await self._settle(task)
        try:
            if not conn.is_closed():
                async with asyncio.timeout(RECOVER_WITHIN_S):
                    await self._transaction.rollback()
        except TimeoutError:
            log.info("dropping postgres connection: its cancelled query went on")
            conn.terminate()
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            # The cancelled COPY left the connection unusable: drop it, not the error.
            # A connection the server dropped is already back in the pool (asyncpg
            # releases it when it sees the loss), and the proxy refuses every call.
            log.info("dropping postgres connection after cancel: %s", exc)
            with contextlib.suppress(asyncpg.InterfaceError):
                conn.terminate()
        finally:
            await self._pool.release(conn)

    async def _settle(self, task: asyncio.Task) -> None:
        """Wait for the cancelled COPY task to end. It may not see the cancel: asyncpg can
        replace the CancelledError with an error of its own, which the task then hands
        to a queue nobody reads. Emptying the queue lets a waiting put finish; a later
        one returns at once (`_put`)."""
        while not self._queue.empty():
            self._queue.get_nowait()
        await asyncio.gather(task, return_exceptions=True)

    async def _abandon(self, conn: asyncpg.Connection, task: asyncio.Task) -> None:
        """Drop the connection of a COPY that waits for the server, then cancel its query.

        terminate() closes the socket at once, so no byte of the COPY reaches asyncpg
        after it (the awaited result fails with "connection closed"). The backend may be
        computing rather than sending and would not notice the closed socket until it
        sends, so the query is cancelled by its pid (same login: no privilege needed).
        """
        pid = conn.get_server_pid()
        conn.terminate()  # the pool's holder takes the connection back, to reconnect
        task.cancel()
        await self._settle(task)
        await self._pool.release(conn)  # (a no-op for a terminated connection)
        # A task of its own: aclose() often runs in a task that is being cancelled.
        canceller = asyncio.create_task(_cancel_backend(self._pool, pid))
        _CANCELLERS.add(canceller)
        canceller.add_done_callback(_CANCELLERS.discard)


_CANCELLERS: set[asyncio.Task] = set()  # (the loop keeps only weak references to tasks)


# Only a backend of the gateway's own: behind a pooler (PgBouncer), the pid a connection
# was told is the pooler's, not a backend's.
_CANCEL_BACKEND = ("SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
                   "WHERE pid = $1 AND application_name = $2")


async def _cancel_backend(pool: asyncpg.Pool, pid: int) -> None:
    try:
        async with asyncio.timeout(RECOVER_WITHIN_S):
            await pool.execute(_CANCEL_BACKEND, pid, APPLICATION_NAME)
    except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        log.warning("could not cancel the query of dropped postgres backend %s: %s", pid, exc)


def _record_boundary(buffer: bytearray) -> int:
    """Length of the longest prefix of whole CSV records (a newline outside quotes).

    CSV doubles quotes inside quoted values, so a newline ends a record exactly when the
    count of quote characters before it is even.
    """
    end = len(buffer)
    while True:
        newline = buffer.rfind(b"\n", 0, end)
        if newline < 0:
            return 0
        if buffer.count(b'"', 0, newline) % 2 == 0:
            return newline + 1
        end = newline
