"""One client session: the protocol's messages, dispatched to their handlers.

The connection feeds it decoded frontend messages (`handle`); the session answers by
writing backend messages into its buffer (`gateway.state.session.SessionState`), flushed
at Sync, Flush and the end of a simple Query. The state and the machinery every road
shares (planning, running a portal) are `gateway.session.core.SessionCore`; this class
adds the simple Query, Sync and error recovery, and mixes in the handlers:
`gateway.session.relay.RelayMixin` (statements relayed to one PostgreSQL source, writes
to other sources), `copy_in.CopyInMixin` (COPY FROM STDIN), `moves.MoveMixin` (INSERT ...
SELECT and CREATE TABLE AS reading other sources than their target), `utility.UtilityMixin`
(SET/SHOW/EXPLAIN/transaction control) with `cursors.CursorMixin` (SQL cursors), and
`extended.ExtendedMixin` (Parse/Bind/Describe/Execute/Close).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from gateway import pg_catalog
from gateway.session import observe
from gateway.session import utility_results as util
from gateway.session.copy_in import CopyInMixin
from gateway.session.error_positions import positioned
from gateway.session.extended import ExtendedMixin
from gateway.session.moves import MoveMixin
from gateway.session.relay import implicit_transaction
from gateway.session.utility import UtilityMixin
from gateway.state import logs
from gateway.state.activity import note_done
from gateway.state.context import ServerContext
from gateway.state.portals import CopyIn, Portal
from gateway.state.session import ClientGone
from gateway.state.statements import split_statements
from pgwire.errors import CONNECTION_FAILURE, PROTOCOL_VIOLATION, PgError, from_exception
from pgwire.protocol import encoder
from pgwire.protocol import messages as m

log = logging.getLogger("fedgate.session")


class Session(ExtendedMixin, CopyInMixin, MoveMixin, UtilityMixin):
    def __init__(self, ctx: ServerContext, writer: asyncio.StreamWriter,
                 startup: dict[str, str], pid: int, key: int) -> None:
        super().__init__(ctx, writer, startup, pid, key)
        # Every line logged on this session's task names it (gateway.state.logs).
        logs.SESSION_ID.set(pid)
        self._handlers: dict[type, Callable[[Any], Awaitable[None]]] = {
            m.Query: self.on_query, m.Parse: self.on_parse, m.Bind: self.on_bind,
            m.Describe: self.on_describe, m.Execute: self.on_execute, m.Close: self.on_close,
            m.Sync: self.on_sync, m.Flush: self.on_flush, m.Terminate: self.on_terminate,
            m.CopyData: self.on_copy_data, m.CopyDone: self.on_copy_done,
            m.CopyFail: self.on_copy_fail,
            m.FunctionCall: self.on_function_call,
        }

    # --- dispatch -------------------------------------------------------------------------

    async def handle(self, message: m.FrontendMessage) -> None:
        handler = self._handlers.get(type(message))
        if handler is None:
            raise PgError(PROTOCOL_VIOLATION, f"unexpected message {type(message).__name__}",
                          severity="FATAL")
        if self.skipping and not isinstance(message, (m.Sync, m.Terminate, m.Query)):
            return
        # While the task handles a message its links stay with it (gateway.relay.pool
        # takes back only the links of a session that waits for its client).
        self.links.busy += 1
        try:
            await handler(message)
        except PgError as err:
            if err.is_fatal:
                raise
            await self._fail_extended(err, message)
        except ClientGone:
            raise  # nobody to report to: the connection ends
        except Exception as exc:  # a bug of ours: report it, keep the session usable
            log.exception("internal error while handling %s", type(message).__name__)
            await self._fail_extended(from_exception(exc), message)
        finally:
            self.links.busy -= 1
            if not self.links.busy and isinstance(message, (m.Sync, m.Query)):
                # The client was answered: a waiter may have the link. (Not between the
                # messages of one run, which would borrow it again for the next.)
                if self.links.adopted:
                    self.links.release_adopted()
                self.links.lend_waited()

    async def _fail_extended(self, err: PgError, message: m.FrontendMessage) -> None:
        """Report an error and skip to Sync; like PostgreSQL, send it now, not at Sync
        (a client that sent Flush instead of Sync is waiting for it)."""
        sql = self._statement_text(message)
        self.report(positioned(err, sql, 0) if sql else err)
        if not isinstance(message, m.Query):
            self.skipping = True
            await self.flush()

    def _statement_text(self, message: m.FrontendMessage) -> str | None:
        """The text of the statement an extended-protocol message is about, if known."""
        if isinstance(message, m.Parse):
            return message.query
        if isinstance(message, m.Bind):
            prepared = self.statements.get(message.statement)
        elif isinstance(message, m.Describe) and message.kind == "S":
            prepared = self.statements.get(message.name)
        else:
            portal = self.portals.get(message.portal if isinstance(message, m.Execute) else
                                      getattr(message, "name", ""))
            prepared = portal.statement if portal is not None else None
        return prepared.sql if prepared is not None else None

    async def on_function_call(self, message: m.FunctionCall) -> None:
        raise util.unsupported("the function call protocol message")

    async def on_terminate(self, message: m.Terminate) -> None:
        self.closed = True

    async def on_flush(self, message: m.Flush) -> None:
        await self.flush()

    async def on_sync(self, message: m.Sync) -> None:
        self.skipping = False
        pg_catalog.note_idle(self)
        if not self.in_block:
            self.close_portals(keep_unnamed=False)  # the implicit transaction ends
        self.write(encoder.ready_for_query(self.status))
        await self.flush()

    # --- simple query ---------------------------------------------------------------------

    async def on_query(self, message: m.Query) -> None:
        self.skipping = False
        statements = split_statements(message.sql)
        if not statements:
            self.write(encoder.empty_query_response())
        if implicit_transaction(statements) and not self.in_block:
            await self._run_implicit(statements, message.sql)
        elif await self.run_statements(statements, message.sql):
            self.query_done()
            await self.flush()

    async def _run_implicit(self, statements: list[str], text: str) -> None:
        """Several statements in one Query run as one transaction, as in PostgreSQL: a
        failure undoes the earlier ones. The client sees no transaction block."""
        self.begin_block()
        try:
            await self.run_statements(statements, text)
            try:
                await self.links.end(commit=True)
            except PgError as err:
                self.report(err)
        finally:
            self.end_block()
        self.query_done()
        await self.flush()

    async def run_statements(self, statements: list[str], text: str = "") -> bool:
        """Run a simple Query's statements (parts of `text`, the Query's whole text, when
        known: positions in errors count from its start); False when a COPY FROM STDIN
        now waits for the client's data (the rest runs when it ends)."""
        searched = 0
        for i, sql in enumerate(statements):
            at = text.find(sql, searched)  # where PostgreSQL's positions count from
            searched = at + len(sql) if at >= 0 else searched
            self.statement_started(sql)
            road, failed = observe.Road(sql), None
            try:
                route = await self.route_fresh(sql)
                if route is not None:
                    road.relayed(self, route)
                if route is not None and route.move:
                    await self.cancellable(self.run_move(route, sql))
                    continue
                if route is not None and route.kind != "postgres" and route.copy_in:
                    await self.start_local_copy(route, sql, statements[i + 1:])
                    return False
                if route is not None and route.kind != "postgres":
                    await self.cancellable(self.write_elsewhere(route, [], describe=True))
                    continue
                if route is not None:
                    link = await self.cancellable(self.links.simple(route, sql))
                    if link is not None:
                        self.copy_in = CopyIn(route, link, statements[i + 1:])
                        await self.flush()
                        return False
                    continue
                shaped = await self.prepare_by_shape(sql)
                prepared, params = shaped if shaped is not None else (await self.prepare(sql, ()), [])
                road.prepared(self, prepared)
                portal = Portal(prepared, params, ())
                await self.cancellable(self.execute(portal, 0, describe=True))
            except ClientGone:
                failed = PgError(CONNECTION_FAILURE, "connection to client lost")  # as PostgreSQL logs it
                raise
            except Exception as exc:  # PgError, or a bug of ours: either way the client hears
                err = failed = positioned(from_exception(exc), sql, max(at, 0))
                if err.sqlstate == "XX000":
                    log.exception("internal error in %r", sql[:200])
                if err.is_fatal:
                    raise err from exc
                self.report(err)
                break
            finally:
                note_done(self)
                observe.ended(self, road, failed)
        return True
