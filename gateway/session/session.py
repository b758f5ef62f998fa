"""One client session: settings, transaction status, prepared statements and portals.

The connection feeds it decoded frontend messages (`handle`); the session answers by
writing backend messages into a buffer that is flushed to the socket at Sync, Flush, the
end of a simple Query, and every few hundred KB of rows (with `drain()`, so a slow client
slows the query instead of growing our memory).

Statements that go to one PostgreSQL source as written, and writes to other sources, are
handled by `session_relay.RelayMixin`; COPY FROM STDIN by `session_copy.CopyInMixin`;
SET/SHOW/EXPLAIN/transaction control by `session_utility.UtilityMixin`; SQL cursors by
`session_cursors.CursorMixin`; the extended protocol's Parse/Bind/Describe/Execute/Close
by `session_extended.ExtendedMixin`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from connectors.query_scope import STATEMENT_LABEL
from connectors.time_zone import TIMEZONE
from gateway.session import utility_results as util
from gateway import pg_catalog
from gateway.session import copy_local as copying
from gateway.relay.links import SessionLinks
from pgwire.errors import (IN_FAILED_SQL_TRANSACTION, INVALID_CURSOR_NAME,
                            INVALID_SQL_STATEMENT_NAME, PROTOCOL_VIOLATION, QUERY_CANCELED,
                            UNDEFINED_TABLE, PgError, from_exception)
from pgwire.types.table import pg_type_by_name, pg_type_by_oid
from pgwire.protocol import encoder
from pgwire.protocol import messages as m
from pgwire.types.rows import encode_rows, resolve_formats, row_description
from gateway.session.portals import CopyIn, Portal, Prepared
from gateway.session.copy_in import CopyInMixin
from gateway.session.cursors import CursorMixin
from gateway.session.extended import ExtendedMixin
from gateway.session.relay import RelayMixin, implicit_transaction
from gateway.session.utility import UtilityMixin
from gateway.session.settings import REPORTED, SessionSettings
from gateway.session.statements import parse_utility, split_statements
from planner import PlanSettings, QueryPlan

if TYPE_CHECKING:
    from gateway.relay.express import ExpressLane
    from gateway.server.listener import ServerContext

log = logging.getLogger("fedgate.session")

FLUSH_BYTES = 256 * 1024
# Result batches above this many rows are encoded on a worker thread (pyarrow releases
# the GIL), so one large result does not stall every other session on the event loop.
OFFLOAD_ROWS = 8192


class Session(ExtendedMixin, RelayMixin, CopyInMixin, UtilityMixin, CursorMixin):
    def __init__(self, ctx: ServerContext, writer: asyncio.StreamWriter,
                 startup: dict[str, str], pid: int, key: int) -> None:
        self.ctx = ctx
        self.writer = writer
        self.pid, self.key = pid, key
        self._statement_count = 0  # for the statement label work elsewhere carries
        self.user = startup.get("user", "")
        self.database = startup.get("database") or self.user
        self.settings = SessionSettings.initial(startup, ctx.config.search_path)
        self._startup_keys = set(startup)
        # An engine named by the client (startup or SET) wins over the size-based choice.
        self.engine_chosen = "fedgate.engine" in startup
        if not self.engine_chosen:
            self.settings.values["fedgate.engine"] = ctx.config.engine.default
        if ctx.config.server.statement_timeout_ms and "statement_timeout" not in startup:
            self.settings.values["statement_timeout"] = str(ctx.config.server.statement_timeout_ms)
        self._initial = dict(self.settings.values)
        self.statements: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.in_block = False
        self.failed = False
        self.savepoints: list[str] = []
        self.skipping = False  # after an error in extended protocol, until Sync
        self.closed = False
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._running: asyncio.Task[Any] | None = None
        self._cancel_reason: str | None = None
        self._handlers: dict[type, Callable[[Any], Awaitable[None]]] = {
            m.Query: self._on_query, m.Parse: self._on_parse, m.Bind: self._on_bind,
            m.Describe: self._on_describe, m.Execute: self._on_execute, m.Close: self._on_close,
            m.Sync: self._on_sync, m.Flush: self._on_flush, m.Terminate: self._on_terminate,
            m.CopyData: self._on_copy_data, m.CopyDone: self._on_copy_done,
            m.CopyFail: self._on_copy_fail,
            m.FunctionCall: self._on_function_call,
        }
        self.links = SessionLinks(self)
        self.copy_in: CopyIn | None = None
        self._relayed: dict[tuple, Prepared] = {}  # relayed statements by Parse message
        self.copy_local: tuple[copying.CopyWriter, list[str]] | None = None
        self.copy_error: PgError | None = None
        self.lane: ExpressLane | None = None  # set by the connection (gateway.relay.express)
        pg_catalog.bind_session(self)  # catalog queries of this connection answer for us

    # --- output -------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        self._out.append(data)
        self._out_bytes += len(data)

    async def flush(self) -> None:
        if self._out:
            self.writer.write(b"".join(self._out))
            self._out.clear()
            self._out_bytes = 0
        await self.writer.drain()

    async def maybe_flush(self) -> None:
        """Send what is buffered once it is large (the relay calls this between rows)."""
        if self._out_bytes >= FLUSH_BYTES:
            await self.flush()

    @property
    def dynamic_filtering(self) -> bool:
        return self.settings.values["fedgate.dynamic_filtering"] == "on"

    def engine_for(self, plan: QueryPlan) -> tuple[str, str]:
        """The residual engine for `plan`, and why (for EXPLAIN): the session's choice
        (`SET fedgate.engine`), else Spark above the configured size, else the default."""
        chosen = self.settings.values["fedgate.engine"]
        if self.engine_chosen:
            return chosen, "SET fedgate.engine"
        threshold = self.ctx.config.engine.spark_threshold_rows
        if threshold and plan.estimated_rows is not None and plan.estimated_rows > threshold:
            return "spark", f"about {plan.estimated_rows} rows to combine, over spark_threshold_rows"
        return chosen, "" if chosen == "duckdb" else "the configured default"

    @property
    def status(self) -> bytes:
        return b"E" if self.failed else b"T" if self.in_block else b"I"

    def startup_messages(self) -> None:
        for name in REPORTED:
            self.write(encoder.parameter_status(name, self.settings.values[name]))
        self.write(encoder.backend_key_data(self.pid, self.key))
        self.write(encoder.ready_for_query(self.status))

    # --- settings and transaction state, used by gateway.session.utility_results -------------------------

    def set_setting(self, name: str, value: str) -> None:
        canonical = self.settings.set(name, value)
        if canonical == "fedgate.engine":
            self.engine_chosen = True
        if canonical in REPORTED:
            self.write(encoder.parameter_status(canonical, self.settings.values[canonical]))

    def reset_setting(self, name: str) -> None:
        if name in ("all", "fedgate.engine"):
            self.engine_chosen = "fedgate.engine" in self._startup_keys
        for changed in self.settings.reset(name, self._initial):
            if changed in REPORTED:
                self.write(encoder.parameter_status(changed, self.settings.values[changed]))

    def begin_block(self) -> None:
        self.in_block, self.failed, self.savepoints = True, False, []

    def end_block(self) -> None:
        self.in_block, self.failed, self.savepoints = False, False, []
        self._close_portals_sync(keep_unnamed=False)

    def recover_block(self) -> None:
        self.failed = False

    def discard_all(self) -> None:
        self._close_portals_sync(keep_unnamed=False, keep_holdable=False)
        self.links.reset()
        self._relayed.clear()
        self.statements.clear()
        self.reset_setting("all")

    def _close_portals_sync(self, keep_unnamed: bool, keep_holdable: bool = True) -> None:
        """Close the portals a transaction's end closes (WITH HOLD cursors stay)."""
        for name, portal in list(self.portals.items()):
            if not ((keep_unnamed and name == "") or (keep_holdable and portal.holdable)):
                self._close_later(self.portals.pop(name))

    @staticmethod
    def _close_later(portal: Portal) -> None:
        if portal.stream is not None and not portal.done:
            asyncio.ensure_future(portal.close())

    # --- cancellation ---------------------------------------------------------------------

    def cancel(self, reason: str = "user request") -> None:
        """A CancelRequest matched this session (or its statement_timeout passed): stop
        the running statement, if any."""
        if self._running is not None and self._cancel_reason is None:
            self._cancel_reason = reason
            self._running.cancel()
        elif self.lane is not None:
            self.lane.cancel()  # a statement on the express lane: the source cancels it

    async def _cancellable(self, work: Awaitable[Any]) -> Any:
        """Run `work` in this task, so that a cancel or statement_timeout interrupts it
        (its own cleanup stops the remote queries) and becomes a 57014 error. No task is
        created: this is on every statement's path."""
        task = asyncio.current_task()
        assert task is not None
        self._running = task
        self._statement_count += 1
        STATEMENT_LABEL.set(f"user {self.user}, pid {self.pid}, statement {self._statement_count}")
        timeout_ms = self.settings.statement_timeout_ms
        timer = asyncio.get_running_loop().call_later(
            timeout_ms / 1000, self.cancel, "statement timeout") if timeout_ms else None
        try:
            return await work
        except asyncio.CancelledError:
            reason = self._cancel_reason
            if reason is not None and task.uncancel() == 0:
                raise PgError(QUERY_CANCELED, f"canceling statement due to {reason}") from None
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self._running = None
            self._cancel_reason = None

    # --- dispatch -------------------------------------------------------------------------

    async def handle(self, message: m.FrontendMessage) -> None:
        handler = self._handlers.get(type(message))
        if handler is None:
            raise PgError(PROTOCOL_VIOLATION, f"unexpected message {type(message).__name__}",
                          severity="FATAL")
        if self.skipping and not isinstance(message, (m.Sync, m.Terminate, m.Query)):
            return
        try:
            await handler(message)
        except PgError as err:
            if err.is_fatal:
                raise
            await self._fail_extended(err, message)
        except Exception as exc:  # a bug of ours: report it, keep the session usable
            log.exception("internal error while handling %s", type(message).__name__)
            await self._fail_extended(from_exception(exc), message)

    async def _fail_extended(self, err: PgError, message: m.FrontendMessage) -> None:
        """Report an error and skip to Sync; like PostgreSQL, send it now, not at Sync
        (a client that sent Flush instead of Sync is waiting for it)."""
        self._report(err)
        if not isinstance(message, m.Query):
            self.skipping = True
            await self.flush()

    def _report(self, err: PgError) -> None:
        self.write(encoder.error_from(err))
        if self.in_block:
            self.failed = True

    async def _ignore(self, message: Any) -> None:
        return None

    async def _on_function_call(self, message: m.FunctionCall) -> None:
        raise util.unsupported("the function call protocol message")

    async def _on_terminate(self, message: m.Terminate) -> None:
        self.closed = True

    async def _on_flush(self, message: m.Flush) -> None:
        await self.flush()

    async def _on_sync(self, message: m.Sync) -> None:
        self.skipping = False
        pg_catalog.note_idle(self)
        if not self.in_block:
            self._close_portals_sync(keep_unnamed=False)  # the implicit transaction ends
        self.write(encoder.ready_for_query(self.status))
        await self.flush()

    # --- simple query ---------------------------------------------------------------------

    async def _on_query(self, message: m.Query) -> None:
        self.skipping = False
        statements = split_statements(message.sql)
        if not statements:
            self.write(encoder.empty_query_response())
        if implicit_transaction(statements) and not self.in_block:
            await self._run_implicit(statements)
        elif await self._run_statements(statements):
            self._query_done()
            await self.flush()

    async def _run_implicit(self, statements: list[str]) -> None:
        """Several statements in one Query run as one transaction, as in PostgreSQL: a
        failure undoes the earlier ones. The client sees no transaction block."""
        self.begin_block()
        try:
            await self._run_statements(statements)
            try:
                await self.links.end(commit=True)
            except PgError as err:
                self._report(err)
        finally:
            self.end_block()
        self._query_done()
        await self.flush()

    def _query_done(self) -> None:
        if not self.in_block:
            self._close_portals_sync(keep_unnamed=False)
        pg_catalog.note_idle(self)
        self.write(encoder.ready_for_query(self.status))

    async def _run_statements(self, statements: list[str]) -> bool:
        """Run a simple Query's statements; False when a COPY FROM STDIN now waits for the
        client's data (the rest runs when it ends)."""
        for i, sql in enumerate(statements):
            pg_catalog.note_query(self, sql)  # for pg_stat_activity
            try:
                route = await self._route_fresh(sql)
                if route is not None and route.kind != "postgres" and route.copy_in:
                    await self._start_local_copy(route, sql, statements[i + 1:])
                    return False
                if route is not None and route.kind != "postgres":
                    await self._cancellable(self._write_elsewhere(route, [], describe=True))
                    continue
                if route is not None:
                    link = await self._cancellable(self.links.simple(route, sql))
                    if link is not None:
                        self.copy_in = CopyIn(route, link, statements[i + 1:])
                        await self.flush()
                        return False
                    continue
                prepared = await self._prepare(sql, ())
                portal = Portal(prepared, [], ())
                await self._cancellable(self._execute(portal, 0, describe=True))
            except Exception as exc:  # PgError, or a bug of ours: either way the client hears
                err = from_exception(exc)
                if err.sqlstate == "XX000":
                    log.exception("internal error in %r", sql[:200])
                if err.is_fatal:
                    raise err from exc
                self._report(err)
                break
        return True

    # --- shared machinery -----------------------------------------------------------------

    def _statement(self, name: str) -> Prepared:
        prepared = self.statements.get(name)
        if prepared is None:
            raise PgError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{name}" does not exist')
        return prepared

    def _portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            raise PgError(INVALID_CURSOR_NAME, f'portal "{name}" does not exist')
        return portal

    def _check_not_failed(self, prepared: Prepared) -> None:
        if self.failed and not (prepared.utility and prepared.utility.kind in util.ALLOWED_WHEN_FAILED):
            raise PgError(IN_FAILED_SQL_TRANSACTION,
                          "current transaction is aborted, commands ignored until end of transaction block")

    def plan_settings(self, declared: tuple[str | None, ...] = ()) -> PlanSettings:
        # PostgreSQL searches pg_catalog implicitly. It goes last here rather than first:
        # the planner takes current_schema() from the path's head.
        path = self.settings.search_path
        if "pg_catalog" not in path:
            path = (*path, "pg_catalog")
        # The zone is part of the plan (zone-dependent expressions stay off the sources)
        # and of what the engine computes in; setting it here too covers paths that run a
        # plan without _start (COPY ... TO, EXPLAIN ANALYZE) on this session's task.
        TIMEZONE.set(self.settings.timezone)
        return PlanSettings(search_path=path, user=self.user,
                            database=self.database, version=self.ctx.version_string,
                            declared_param_types=declared, timezone=self.settings.timezone,
                            pre_aggregate=self.settings.values["fedgate.pre_aggregate"] == "on")

    async def _prepare(self, sql: str, declared_oids: tuple[int, ...]) -> Prepared:
        if not sql:
            return Prepared(sql, None, None, tuple(declared_oids))
        utility = parse_utility(sql)
        declared = tuple(self._type_name(oid) for oid in declared_oids)
        if utility is not None:
            if utility.value and (utility.kind == "declare" or (
                    utility.kind == "explain" and self._route(utility.value) is None)):
                # Planning errors show at Parse time; EXPLAIN and DECLARE take the query's
                # parameters.
                inner = await self.plan_query(utility.value, declared)
                return Prepared(sql, utility, None, self._param_oids(inner, declared_oids))
            return Prepared(sql, utility, None, tuple(declared_oids))
        self._check_not_failed(Prepared(sql, None, None, ()))
        plan = await self.plan_query(sql, declared)
        return Prepared(sql, None, plan, self._param_oids(plan, declared_oids))

    def _param_oids(self, plan: QueryPlan, declared_oids: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(declared_oids[i] if i < len(declared_oids) and declared_oids[i]
                     else self._type_oid(name) for i, name in enumerate(plan.param_types))

    async def plan_query(self, sql: str, declared: tuple[str | None, ...] = ()) -> QueryPlan:
        await self.ctx.refresh_if_stale()
        try:
            return self.ctx.plans.get(sql, self.ctx.catalog, self.plan_settings(declared))
        except PgError as err:
            # A table created in a source since the last refresh: look again, once.
            if err.sqlstate != UNDEFINED_TABLE or not await self.ctx.refresh_catalog():
                raise
            return self.ctx.plans.get(sql, self.ctx.catalog, self.plan_settings(declared))

    @staticmethod
    def _type_name(oid: int) -> str | None:
        found = pg_type_by_oid(oid) if oid else None
        return found.name if found else None

    @staticmethod
    def _type_oid(name: str) -> int:
        found = pg_type_by_name(name)
        return found.oid if found else 25  # text

    async def _describe(self, prepared: Prepared) -> pa.Schema | None:
        if prepared.utility is not None:
            if prepared.utility.kind == "fetch":
                return await self._fetch_schema(prepared)
            return util.result_schema(prepared.utility)
        if prepared.plan is None:
            return None
        if prepared.row_schema is None:
            TIMEZONE.set(self.settings.timezone)  # the engine computes in the client's zone
            executor = self.links.executor_for(prepared.plan) or self.ctx.executor
            prepared.row_schema = await executor.describe(prepared.plan, self.engine_for(prepared.plan)[0])
        return prepared.row_schema

    async def _start(self, portal: Portal) -> None:
        if portal.stream is None and not portal.done and portal.statement.plan is not None:
            plan = portal.statement.plan
            TIMEZONE.set(self.settings.timezone)  # the engine computes in the client's zone
            executor = self.links.executor_for(plan) or self.ctx.executor
            portal.stream = await executor.run(plan, portal.params, self.engine_for(plan)[0],
                                               self.dynamic_filtering)

    async def _execute(self, portal: Portal, max_rows: int, *, describe: bool) -> None:
        prepared = portal.statement
        if prepared.empty:
            self.write(encoder.empty_query_response())
            return
        self._check_not_failed(prepared)
        if prepared.utility is not None:
            await self._execute_utility(portal, describe)
            return
        if portal.done:
            self.write(encoder.command_complete("SELECT 0"))
            return
        try:
            await self._start(portal)
            assert portal.stream is not None
            if describe:
                self.write(row_description(portal.stream.schema, portal.formats))
            await self._send_rows(portal, max_rows)
        except BaseException:
            await portal.close()
            raise

    async def _send_rows(self, portal: Portal, max_rows: int) -> None:
        formats = resolve_formats(portal.formats, len(portal.stream.schema))
        sent, exhausted = await self._write_rows(portal, max_rows, formats)
        self.write(encoder.command_complete(f"SELECT {sent}") if exhausted
                   else encoder.portal_suspended())

    async def _write_rows(self, portal: Portal, max_rows: int, formats: list[int],
                          discard: bool = False) -> tuple[int, bool]:
        """DataRows of up to `max_rows` rows (0: all) of the portal's stream: how many were
        sent, and whether the stream ended (the portal is then closed). `discard` counts
        them without sending (MOVE)."""
        stream = portal.stream
        assert stream is not None
        timezone = self.settings.timezone
        loop = asyncio.get_running_loop()
        batches = aiter(stream)
        ahead: asyncio.Future[pa.RecordBatch | None] | None = None
        sent = 0
        try:
            while True:
                if portal.pending:
                    batch = portal.pending.pop()
                elif ahead is not None:
                    batch, ahead = await ahead, None
                else:
                    batch = await anext(batches, None)
                if batch is None:
                    await portal.close()
                    return sent, True
                if max_rows and sent + batch.num_rows > max_rows:
                    keep = max_rows - sent
                    portal.pending.append(batch.slice(keep))
                    batch = batch.slice(0, keep)
                if batch.num_rows > OFFLOAD_ROWS and not discard:
                    if not max_rows:
                        # The source produces the next batch while this one is encoded.
                        ahead = asyncio.ensure_future(anext(batches, None))
                    self.write(await loop.run_in_executor(
                        None, functools.partial(encode_rows, batch, formats, timezone=timezone)))
                elif not discard:
                    self.write(encode_rows(batch, formats, timezone=timezone))
                sent += batch.num_rows
                if self._out_bytes >= FLUSH_BYTES:
                    await self.flush()
                if max_rows and sent >= max_rows:
                    return sent, False
        finally:
            if ahead is not None and not ahead.done():
                ahead.cancel()
                await asyncio.wait([ahead])

    async def close(self) -> None:
        for portal in list(self.portals.values()):
            await portal.close()
        self.portals.clear()
        await self.links.aclose()
        if self.copy_local is not None:  # the client left mid-COPY: nothing of it stays
            writer, self.copy_local = self.copy_local[0], None
            await writer.finish(commit=False)
