"""A client session's state: what the handlers of the session and the relay share.

Settings, prepared statements and portals, the transaction status (in a block, failed,
savepoints), the output buffer and the statement running now (for cancel and
statement_timeout). `gateway.session.session.Session` builds on it with the protocol's
handlers; the relay (`gateway.relay.links`, the express lane) is handed this state and
uses only what is public here.

Output: backend messages are written into a buffer that is flushed to the socket at
Sync, Flush, the end of a simple Query, and every few hundred KB of rows (with
`drain()`, so a slow client slows the query instead of growing our memory).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from gateway.state.access import access_for, read_only_refused
from connectors.query_scope import STATEMENT_LABEL
from gateway.state.activity import activity_of, note_idle
from gateway.state.background import in_background
from gateway.state.context import ServerContext
from gateway.state.memory import StatementMemory
from gateway.config.memory import share_bytes
from gateway.state.portals import CopyIn, Portal, Prepared
from gateway.state.settings import REPORTED, SessionSettings, shown_timeout
from gateway.state.settings import canonical as canonical_name
from gateway.state.block_settings import BlockSettings
from pgwire.errors import (IN_FAILED_SQL_TRANSACTION, INVALID_CURSOR_NAME,
                           INVALID_SQL_STATEMENT_NAME, QUERY_CANCELED, PgError)
from pgwire.protocol import encoder
from planner import QueryPlan
from gateway.state.engine_choice import choose_engine, configured_inlining
from planner.inline_sides import FORCED_INLINING, NO_INLINING, Inlining

FLUSH_BYTES = 256 * 1024
# Statements still allowed in a failed transaction block (PostgreSQL's IsTransactionExitStmt).
ALLOWED_WHEN_FAILED = {"commit", "rollback", "rollback_to"}


class ClientGone(ConnectionResetError):
    """The client closed its connection while we still had something to send it: the
    session ends quietly (gateway.server.connection ends on any ConnectionError), it is
    neither a statement's error nor a bug of ours."""


class LaneHandle(Protocol):
    """The express lane as the session sees it (gateway.relay.express.taking.ExpressLane): it
    cancels the statements it runs, and counts them (SHOW fedgate.express_statements, and
    of those the ones its repeats ran, fedgate.express_repeats)."""

    taken: int

    @property
    def repeated(self) -> int: ...

    def cancel(self) -> bool: ...

    def at_rest(self) -> bool: ...

    def contended(self) -> None: ...


class SessionState:
    def __init__(self, ctx: ServerContext, writer: asyncio.StreamWriter,
                 startup: dict[str, str], pid: int, key: int) -> None:
        self.ctx = ctx
        self.writer = writer
        self.pid, self.key = pid, key
        self.user = startup.get("user", "")
        self.database = startup.get("database") or self.user
        # What this user may see and do ([[users]]); the sources it may not see.
        self.access = access_for(ctx.config, self.user)
        self.hidden = self.access.hidden(s.name for s in ctx.config.sources)
        self.settings = SessionSettings.initial(startup, ctx.config.search_path)
        self.startup_keys = set(startup)
        # An engine named by the client (startup or SET) wins over the size-based choice.
        self.engine_chosen = "fedgate.engine" in startup
        if not self.engine_chosen:
            self.settings.values["fedgate.engine"] = ctx.config.engine.default
        if "fedgate.statement_memory" not in startup:
            self.settings.values["fedgate.statement_memory"] = ctx.config.engine.statement_memory
        if ctx.config.server.statement_timeout_ms and "statement_timeout" not in startup:
            self.settings.values["statement_timeout"] = shown_timeout(
                ctx.config.server.statement_timeout_ms)
        self.initial = dict(self.settings.values)
        # statements, portals and relayed stay the same dicts (the lane's repeats hold them)
        self.statements: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.in_block = False
        self.block_settings = BlockSettings()  # what the block's end restores
        self.failed = False
        self.savepoints: list[str] = []
        self.skipping = False  # after an error in extended protocol, until Sync
        self.closed = False
        self.running: asyncio.Task[Any] | None = None  # the statement cancel interrupts
        self.cancel_reason: str | None = None
        # The session's task is handling a client message (set by the connection): a
        # cancel that comes before its statement reaches `cancellable` (while it is
        # planned, or between Parse and Execute) waits here for it, as PostgreSQL's
        # pending interrupt does, until `forget_cancel`.
        self.handling = False
        self.cancel_pending: str | None = None
        # Part of a client message is received and not yet handled (set by the
        # connection): the task is about to run it, so a cancel now is for it.
        self.unread: Callable[[], bool] = lambda: False
        self.copy_in: CopyIn | None = None  # a COPY FROM STDIN relayed to a source
        # A COPY FROM STDIN the gateway takes in for SQLite/MySQL: its writer
        # (gateway.session.copy_local.CopyWriter, above the state) and the Query's rest.
        self.copy_local: tuple[Any, list[str]] | None = None
        self.copy_error: PgError | None = None
        self.relayed: dict[tuple, Prepared] = {}  # relayed statements by Parse message
        self.lane: LaneHandle | None = None  # set by the connection
        # pg_terminate_backend ended this session; the connection's hook stops its task.
        self.terminating = False
        self.terminate_hook: Callable[[], None] | None = None
        self._out: list[bytes] = []
        self._out_bytes = 0

    # --- output -------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        self._out.append(data)
        self._out_bytes += len(data)

    def unsent(self) -> list[bytes]:
        """What was written and not sent yet: the same list for the session's life (the
        express lane's repeats keep it to ask, at C speed, whether anything waits)."""
        return self._out

    @property
    def has_output(self) -> bool:
        """Something was written that is not sent yet."""
        return bool(self._out)

    @property
    def buffered(self) -> int:
        """Bytes written and not yet sent."""
        return self._out_bytes

    def take_output(self) -> bytes:
        """What is buffered, which the caller sends (the express lane writes it to the
        transport itself)."""
        data = b"".join(self._out)
        self._out.clear()
        self._out_bytes = 0
        return data

    async def flush(self) -> None:
        if self.writer.transport.is_closing():
            self.take_output()  # nobody reads it any more
            raise ClientGone("the client closed its connection")
        if self._out:
            self.writer.write(self.take_output())
        await self.writer.drain()

    async def maybe_flush(self) -> None:
        """Send what is buffered once it is large (the relay calls this between rows)."""
        if self._out_bytes >= FLUSH_BYTES:
            await self.flush()

    def direct(self) -> asyncio.StreamWriter:
        """Send what is buffered and hand out the writer: a relayed result's rows then
        go to the socket as the source sent them (`connectors.postgres.link`), without
        passing through this buffer; its writes keep their order after them."""
        if self._out:
            self.writer.write(self.take_output())
        return self.writer

    def report(self, err: PgError) -> None:
        self.write(encoder.error_from(err))
        if self.in_block:
            self.failed = True

    def query_done(self) -> None:
        """The end of a simple Query: ReadyForQuery, after the implicit transaction's
        portals are closed."""
        if not self.in_block:
            self.close_portals(keep_unnamed=False)
        note_idle(self)
        self.write(encoder.ready_for_query(self.status))

    # --- settings -----------------------------------------------------------------------

    @property
    def dynamic_filtering(self) -> bool:
        return self.settings.values["fedgate.dynamic_filtering"] == "on"

    def statement_memory(self) -> StatementMemory | None:
        """A statement's share of the engine's memory, as `fedgate.statement_memory` says
        now, to hand the executor; None when the process counts no memory."""
        pool = self.ctx.memory
        if pool is None:
            return None
        share = share_bytes(self.settings.values["fedgate.statement_memory"], pool.limit)
        assert share is not None  # validated when set
        return StatementMemory(share, f"pid {self.pid} statement {activity_of(self).statements}")

    @property
    def inlining(self) -> Inlining:
        """How far a PostgreSQL source runs statements whole with other sources' small
        tables inlined (planner.plan.PlanSettings): forced by `fedgate.engine = source`,
        not at all when the session named an engine, else as configured."""
        if self.settings.values["fedgate.engine"] == "source":
            return FORCED_INLINING
        return NO_INLINING if self.engine_chosen else configured_inlining(self.ctx.config.engine)

    def engine_for(self, plan: QueryPlan) -> tuple[str, str]:
        """The residual engine for `plan`, and why (for EXPLAIN)."""
        return choose_engine(self.settings.values["fedgate.engine"], self.engine_chosen,
                             self.ctx.config.engine, plan)

    def startup_messages(self) -> None:
        for name in REPORTED:
            self.write(encoder.parameter_status(name, self.settings.values[name]))
        self.write(encoder.backend_key_data(self.pid, self.key))
        self.write(encoder.ready_for_query(self.status))

    def _before_change(self, name: str, local: bool) -> None:
        if self.in_block:
            self.block_settings.before_change(self.settings.values, name, local)

    def set_setting(self, name: str, value: str, local: bool = False) -> None:
        """SET (or SET LOCAL, `local`: undone at the block's end) `name` to `value`."""
        self._before_change(canonical_name(name), local)
        canonical = self.settings.set(name, value)
        if not local and self.in_block:
            self.block_settings.after_session_change(self.settings.values, canonical)
        if canonical == "fedgate.engine":
            self.engine_chosen = True
        if canonical == "default_transaction_read_only" and not self.in_block:
            self.settings.values["transaction_read_only"] = self.settings.values[canonical]
        if canonical in REPORTED:
            self.write(encoder.parameter_status(canonical, self.settings.values[canonical]))

    def reset_setting(self, name: str, local: bool = False) -> None:
        if name in ("all", "fedgate.engine"):
            self.engine_chosen = "fedgate.engine" in self.startup_keys
        for each in (self.initial if name == "all" else [canonical_name(name)]):
            self._before_change(each, local)
        changed_names = self.settings.reset(name, self.initial)
        if not local and self.in_block:
            for each in (self.initial if name == "all" else [canonical_name(name)]):
                self.block_settings.after_session_change(self.settings.values, each)
        for changed in changed_names:
            if changed in REPORTED:
                self.write(encoder.parameter_status(changed, self.settings.values[changed]))
        if not self.in_block:
            values = self.settings.values
            values["transaction_read_only"] = values["default_transaction_read_only"]

    @property
    def search_path(self) -> tuple[str, ...]:
        """The search path as names resolve through it: sources the user may not see are
        skipped, as PostgreSQL skips schemas without USAGE."""
        path = self.settings.search_path
        return tuple(s for s in path if s not in self.hidden) if self.hidden else path

    # --- read-only transactions -----------------------------------------------------------

    @property
    def writes_refused(self) -> bool:
        """A write now would be refused: the user is read-only, or the transaction is
        (BEGIN READ ONLY, SET TRANSACTION READ ONLY, default_transaction_read_only)."""
        values = self.settings.values
        name = "transaction_read_only" if self.in_block else "default_transaction_read_only"
        return self.access.read_only or values[name] == "on"

    def check_writable(self, sql: str) -> None:
        """25006 when a write (`sql`) is refused now (`writes_refused`)."""
        if self.writes_refused:
            raise read_only_refused(sql)

    # --- transaction status -------------------------------------------------------------

    @property
    def status(self) -> bytes:
        return b"E" if self.failed else b"T" if self.in_block else b"I"

    def begin_block(self, read_only: bool | None = None) -> None:
        """A transaction block starts; `read_only` as BEGIN said it (None: the default)."""
        self.in_block, self.failed, self.savepoints = True, False, []
        values = self.settings.values
        values["transaction_read_only"] = (values["default_transaction_read_only"]
                                           if read_only is None else "on" if read_only else "off")

    def end_block(self, committed: bool = True) -> None:
        """The block ended: by COMMIT (`committed`; a failed block's COMMIT is a
        ROLLBACK) or ROLLBACK, with what that does to the settings it changed."""
        if self.block_settings.changed or self.savepoints:
            committed = committed and not self.failed
            self._restore_settings(lambda values: self.block_settings.end(values, committed))
        self.in_block, self.failed, self.savepoints = False, False, []
        values = self.settings.values
        values["transaction_read_only"] = values["default_transaction_read_only"]
        self.close_portals(keep_unnamed=False)

    def savepoint(self, name: str) -> None:
        self.savepoints.append(name)
        self.block_settings.savepoint(self.settings.values)

    def end_savepoint(self, name: str, rolled_back: bool) -> None:
        """RELEASE the newest savepoint called `name` (and those after it), or ROLLBACK TO
        it (`rolled_back`: it stays, the settings changed since are undone, a failed
        block recovers); 3B001 when there is none."""
        if name not in self.savepoints:
            raise PgError("3B001", f'savepoint "{name}" does not exist')
        depth = len(self.savepoints) - 1 - self.savepoints[::-1].index(name)
        if not rolled_back:
            del self.savepoints[depth:]
            self.block_settings.release(depth)
            return
        del self.savepoints[depth + 1:]
        self._restore_settings(lambda values: self.block_settings.rollback_to(values, depth))
        self.recover_block()

    def _restore_settings(self, restore: Callable[[dict[str, str]], None]) -> None:
        """`restore` puts back what a block or savepoint changed; the reported settings
        that changed are sent."""
        values = self.settings.values
        if not self.block_settings.changed:  # restore has nothing to do but forget
            restore(values)
            return
        before = {name: values[name] for name in REPORTED}
        restore(values)
        self.settings.refresh()
        for name in REPORTED:
            if values[name] != before[name]:
                self.write(encoder.parameter_status(name, values[name]))

    def recover_block(self) -> None:
        self.failed = False

    def check_not_failed(self, prepared: Prepared) -> None:
        if self.failed and not (prepared.utility and prepared.utility.kind in ALLOWED_WHEN_FAILED):
            raise PgError(IN_FAILED_SQL_TRANSACTION,
                          "current transaction is aborted, commands ignored until end of transaction block")

    # --- statements and portals ---------------------------------------------------------

    def statement(self, name: str) -> Prepared:
        prepared = self.statements.get(name)
        if prepared is None:
            raise PgError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{name}" does not exist')
        return prepared

    def run_bound(self, prepared: Prepared, parsed: str | None, portal: Portal | None) -> None:
        """An extended run's Parse named `parsed` (None: it had none) and its Bind of the
        unnamed `portal` (None: not kept, as Sync outside a block closes it with the run)."""
        if parsed is not None:
            self.statements[parsed] = prepared
        if portal is not None:
            self.portals[""] = portal

    def stop_skipping(self) -> None:
        """A Query or Sync came: the extended protocol's error is behind it."""
        self.skipping = False

    def portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            raise PgError(INVALID_CURSOR_NAME, f'portal "{name}" does not exist')
        return portal

    def close_portals(self, keep_unnamed: bool, keep_holdable: bool = True) -> None:
        """Close the portals a transaction's end closes (WITH HOLD cursors stay)."""
        if not self.portals:
            return
        for name, portal in list(self.portals.items()):
            if not ((keep_unnamed and name == "") or (keep_holdable and portal.holdable)):
                self.close_later(self.portals.pop(name))

    @staticmethod
    def close_later(portal: Portal) -> None:
        if portal.stream is not None and not portal.done:
            # Held until done: a close collected mid-way would keep its source
            # connection from the pool for good.
            in_background(portal.close())

    # --- cancellation -------------------------------------------------------------------

    def cancel(self, reason: str = "user request") -> None:
        """A CancelRequest matched this session (or its statement_timeout passed): stop
        the running statement, if any. One that comes while the session's task handles a
        message but runs no statement yet (planning), or has one received and not yet
        handled, stops the statement when it starts; one that comes while the session
        waits for its client is ignored, as in PostgreSQL."""
        if self.running is not None:
            if self.cancel_reason is None:
                self.cancel_reason = reason
                self.running.cancel()
        elif self.lane is not None and self.lane.cancel():
            pass  # a statement on the express lane: the source cancels it
        elif (self.handling or self.unread()) and self.cancel_pending is None:
            self.cancel_pending = reason

    def forget_cancel(self) -> None:
        """ReadyForQuery was sent, or the session waits for its client: a cancel that
        found no statement to stop is forgotten (PostgreSQL ignores one that comes while
        it reads the next command)."""
        self.cancel_pending = None

    def terminate(self) -> None:
        """pg_terminate_backend: end this session (its connection reports 57P01)."""
        self.terminating = True
        if self.terminate_hook is not None:
            self.terminate_hook()

    async def cancellable(self, work: Awaitable[Any]) -> Any:
        """Run `work` in this task, so that a cancel or statement_timeout interrupts it
        (its own cleanup stops the remote queries) and becomes a 57014 error. No task is
        created: this is on every statement's path."""
        task = asyncio.current_task()
        assert task is not None
        pending, self.cancel_pending = self.cancel_pending, None
        if pending is not None:  # cancelled before it started: it does not start
            if asyncio.iscoroutine(work):
                work.close()
            raise PgError(QUERY_CANCELED, f"canceling statement due to {pending}")
        self.running = task
        # Cancels requested of this task before (by shutdown, or one that code inside an
        # earlier statement swallowed): only one more than these is this statement's.
        before = task.cancelling()
        # Work the statement starts elsewhere (Spark jobs) carries who runs it.
        STATEMENT_LABEL.set(f"user {self.user}, pid {self.pid}, "
                            f"statement {activity_of(self).statements}")
        timeout_ms = self.settings.statement_timeout_ms
        timer = asyncio.get_running_loop().call_later(
            timeout_ms / 1000, self.cancel, "statement timeout") if timeout_ms else None
        try:
            return await work
        except asyncio.CancelledError:
            reason, self.cancel_reason = self.cancel_reason, None
            if reason is not None and task.uncancel() <= before:
                raise PgError(QUERY_CANCELED, f"canceling statement due to {reason}") from None
            raise
        finally:
            if timer is not None:
                timer.cancel()
            if self.cancel_reason is not None:
                # Our cancel reached the work, which swallowed it (Python 3.11's
                # asyncio.wait_for does when what it waits for ends at that moment) and
                # ended on its own: the request is taken back, or the next statement's
                # cancel would end the connection instead of that statement.
                task.uncancel()
            self.running = None
            self.cancel_reason = None
