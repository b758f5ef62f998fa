"""The express lane's machinery: the session's state as the lane sees it, and exchanges.

`gateway.relay.express` says what the lane is for; `taking` beside this module decides
which statements it takes, `memory` remembers what it took. This module is what both
build on: the entry points the client's socket calls (`offer`, `client_lost`,
`client_paused`, `cancel`), when the session is idle enough for the lane, the link a
route may use now, starting an exchange on it (`gateway.relay.express.exchange`), and
finishing a simple Query or an extended run the way the session's task does
(`Session.on_query`, `on_sync`).

The lane is handed the session's state (`gateway.state.session.SessionState`), its links
(`gateway.relay.links.SessionLinks`) and the client's socket (`ClientSide`, which
`gateway.server.client_port.ClientPort` is); the connection wires them together.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from connectors.postgres.link import Outcome, PgLink, RemoteStatement
from gateway.relay.express.exchange import Exchange
from gateway.relay.links import SessionLinks
from gateway.relay.relayed import stale_plan, unlifted
from gateway.relay.literals import Lifted
from gateway.relay.express.place_in_line import PlaceInLine
from gateway.state.activity import activity_of, ended
from gateway.state.background import in_background
from gateway.state.portals import Portal, Prepared
from gateway.state.route import Route
from gateway.state.session import SessionState
from pgwire.errors import PgError
from pgwire.protocol import client as w
from pgwire.protocol import encoder
from pgwire.protocol import messages as m
from pgwire.protocol.decoder import FrontendDecoder

log = logging.getLogger("fedgate.express")

CANCEL_AGAIN_S = 1.0  # a statement the source did not stop is cancelled again this often


class ClientSide(Protocol):
    """The client's socket as the lane uses it (gateway.server.client_port.ClientPort)."""

    transport: asyncio.Transport
    writing_paused: bool
    draining: bool

    def send(self, data: bytes) -> None: ...

    @property
    def idle(self) -> bool: ...

    def feed(self, data: bytes) -> None: ...

    def consumed(self) -> None: ...


class Lane:
    """The lane's machinery; `gateway.relay.express.taking.ExpressLane` decides what it takes."""

    def __init__(self, state: SessionState, links: SessionLinks, port: ClientSide) -> None:
        self.state = state
        self.links = links
        self.port = port
        self.exchange: Exchange | None = None
        self.held: list[bytes] = []  # arrived while an exchange was in flight
        self.closed = False
        self.ran = 0  # statements the lane's Python started (the repeats count theirs)
        # `_link` found no link of the route's source in the session (it borrows one first)
        self.unlinked = False
        self._cancelling: Exchange | None = None  # the exchange they are for
        # In a pool's line for a link (transaction pooling), what came meanwhile held.
        self.place = PlaceInLine(self, self._continue)
        self.activity = activity_of(state)  # the session's, for pg_stat_activity
        # The repeats (gateway.relay.express.repeats, made by gateway.relay.express.memory):
        # armed while the session is idle.
        self.repeats: Any = None
        self._decoder = FrontendDecoder(state.ctx.config.server.max_message_bytes)
        self._decoder.startup_done()

    # --- entry points (ClientPort's callbacks) --------------------------------------------

    def offer(self, data: bytes) -> bool:
        """Take `data` if it starts with what the lane runs; False leaves it to the task."""
        if self.exchange is not None or self.place.waiting:
            self.held.append(data)
            self.port.consumed()  # the port stops reading when too much is held
            return True
        if not self._session_idle():
            return False
        if not self._run(data):
            return self.place.join(data)
        if self.exchange is None:  # answered at once (BEGIN): send it, take what follows
            self._continue()
        if self.held:  # bytes after the statement it started wait for its end
            self.port.consumed()
        return True

    @property
    def taken(self) -> int:
        """Statements the lane ran (SHOW fedgate.express_statements): its Python's and its
        repeats'."""
        return self.ran + self.repeated

    @property
    def repeated(self) -> int:
        """Statements the repeats started (SHOW fedgate.express_repeats); they count
        in `taken` too."""
        return self.repeats.taken if self.repeats is not None else 0

    @property
    def held_bytes(self) -> int:
        """What arrived while an exchange was in flight (the port stops reading when this
        grows large, and reads again at `consumed()`)."""
        return sum(map(len, self.held)) if self.held else 0

    def disarm(self) -> None:
        """The session, its port or the lane act: the repeats take nothing until the
        lane arms them again (gateway.relay.express.memory)."""
        if self.repeats is not None:
            self.repeats.disarm()

    def client_lost(self) -> None:
        if self.repeats is not None:
            self.repeats.client_lost()  # disarmed, and nothing more sent to the client
        self.closed = True
        self.held.clear()
        self.place.leave()

    def client_paused(self, paused: bool) -> None:
        """The client reads slower than the source sends: hold the source back."""
        self.disarm()
        if self.exchange is not None:
            port = self.exchange.link.port
            port.pause("client") if paused else port.resume("client")

    @property
    def cancelling(self) -> bool:
        """A CancelRequest is on its way to the link (which no pool may lend meanwhile)."""
        return self._cancelling is not None

    def at_rest(self) -> bool:
        """Nothing in flight on a link, and no cancel on its way to one: the session's
        links may go to another session (`SessionLinks.lendable`)."""
        return self.exchange is None and self._cancelling is None

    def contended(self) -> None:
        """A client waits for one of the session's links (`LinkPool._wait`): the repeats
        in C take nothing more, and a statement of theirs in flight goes on as a Python
        exchange, so that its end reaches `_settle`."""
        if self.repeats is None:
            return
        self.repeats.disarm()
        if self.exchange is not None and self.exchange is self.repeats:
            self.repeats.handoff()

    def _settle(self) -> None:
        """The session is idle after a statement of the lane: its links that clients wait
        for go to them, and the compiled repeats are armed only when none of its links is
        waited for."""
        if not self.links.lend_waited() and self.repeats is not None:
            self._arm()

    def cancel(self) -> bool:
        """A CancelRequest for this session: cancel the statement on the source, which
        answers it with its own 57014 error. False when no exchange is in flight."""
        if self.place.waiting:
            self.place.to_task()  # the task meets the cancel before the statement starts
            return False
        if self.exchange is None:
            return False
        if self.exchange is self.repeats:  # the repeats': on as an Exchange, to be told apart
            self.repeats.handoff()
        if self._cancelling is self.exchange:
            return True  # its cancel is on its way already, and repeats itself
        self._cancelling = self.exchange
        # Held until sent: a cancel collected mid-way never reaches the source, and the
        # statement runs on, the client waiting.
        in_background(self._send_cancel(self.exchange))
        return True

    async def _send_cancel(self, exchange: Exchange) -> None:
        """Cancel `exchange`'s statement on its source, again every CANCEL_AGAIN_S while
        it runs: PostgreSQL ignores a CancelRequest that reaches the backend before the
        statement does, which one sent right behind it can."""
        link = exchange.link
        try:
            while self.exchange is exchange and not self.closed:
                try:
                    await link.send_cancel()
                except OSError as exc:
                    log.warning("cancel to source %s failed: %s", link.source, exc)
                    return
                await asyncio.sleep(CANCEL_AGAIN_S)
        finally:
            if self._cancelling is exchange:
                self._cancelling = None
                if self.exchange is None and not self.closed:
                    self.links.lend_waited()  # the link was kept for the cancel

    # --- deciding ------------------------------------------------------------------------

    def _session_idle(self) -> bool:
        s = self.state
        return (self.port.idle and not self.closed and not s.closed and not s.has_output
                and s.running is None and s.copy_in is None and s.copy_local is None
                and not s.ctx.catalog_stale
                and not self.port.writing_paused
                and s.settings.values["fedgate.express"] == "on"
                and s.settings.values["statement_timeout"] == "0")

    def _run(self, data: bytes) -> bool:
        """Start what `data` begins with, if the lane takes it (`ExpressLane._run`)."""
        raise NotImplementedError

    def _control_ended(self, kind: str, outcome: Outcome) -> None:
        """A block's COMMIT or ROLLBACK answered (`ExpressLane._control_ended`)."""
        raise NotImplementedError

    def _decode(self, data: bytes, start: int, end: int) -> m.FrontendMessage | None:
        """One message; None when it does not decode (the task reports the error)."""
        self._decoder.feed(data[start:end])
        try:
            return self._decoder.next_message()
        except PgError:  # malformed: the task's decoder says so to the client
            self._decoder = FrontendDecoder(self.state.ctx.config.server.max_message_bytes)
            self._decoder.startup_done()
            return None

    def _link(self, route: Route) -> PgLink | None:
        """The session's link to the route's source, when the lane may use it now: it
        exists (opening one takes the task), idle, and the write is allowed."""
        s = self.state
        if s.failed or route.kind != "postgres" or route.copy_in or route.ddl or route.move:
            return None
        if route.pins and route.source not in self.links.pinned:
            return None  # the task pins the session to its link first (SessionLinks.pin)
        if route.writes and s.writes_refused:
            return None  # the task reports 25006
        links = self.links
        if route.writes and s.in_block and links.writer not in (None, route.source):
            return None  # the task reports 0A000
        link = links.links.get(route.source)
        if link is None or not link.idle:
            self.unlinked = link is None
            return None
        if link.row_types_for != (s.ctx.catalog.version, s.hidden):
            return None  # the task gives it this catalog's row types first (SessionLinks.link)
        epoch = s.ctx.schema_epoch
        if epoch != link.statements_epoch:
            link.expire_statements(epoch)
        return link


    # --- finishing a simple Query, starting an extended run --------------------------

    def _send_query(self, link: PgLink, request: bytes, sql: str, done: Callable[[Outcome], None]) -> None:
        """Start a simple Query's statement, as Session.on_query → run_statements →
        SessionLinks.simple do."""
        self.state.stop_skipping()
        self.activity.began(sql)
        prefix, quiet = self.links.prefix(link)
        self._start(link, prefix + request, quiet, done)

    def _query_done(self, route: Route, outcome: Outcome, lifted: Lifted | None, raw: bytes) -> None:
        s = self.state
        if lifted is not None:
            outcome.error = unlifted(outcome.error, lifted)
            link = self.links.links.get(route.source)
            if stale_plan(outcome.error) and link is not None and link.status == "I":
                # The table changed shape since the statement was prepared: the task
                # runs the Query again, as written (see SessionLinks.simple).
                link.statements.pop((lifted.sql, lifted.oids), None)
                self.exchange = None
                self.port.feed(raw)
                self._continue()
                return
        self.counted(route, outcome.error)
        if outcome.error is not None:
            if self._fatal(outcome.error):
                return
            s.report(outcome.error)
        else:
            self.links.wrote(route)
        self._query_ready()
        self._done()

    def _query_ready(self) -> None:
        """The end of a simple Query, as `SessionState.query_done`, with the activity at
        hand: ReadyForQuery, after the implicit transaction's portals are closed."""
        s = self.state
        if not s.in_block and s.portals:
            s.close_portals(keep_unnamed=False)
        self.activity.went_idle()
        s.write(encoder.ready_for_query(s.status))

    def counted(self, route: Route, error: PgError | None) -> None:
        """/metrics: one statement of the lane ended (timed from `note_query`)."""
        s = self.state
        started = self.activity.started
        assert started is not None  # note_query set it when the lane sent the statement
        s.ctx.metrics.statement_done("write" if route.writes else "select",
                                     error.sqlstate if error is not None else None, "express",
                                     time.time() - started)

    def _run_target(self, prepared: Prepared) -> tuple[PgLink, RemoteStatement] | None:
        """The link and the source's statement a run of `prepared` goes to, when the lane
        may start it now."""
        old = self.state.portals.get("")
        if old is not None and old.stream is not None:
            return None  # closing a planner portal takes the task
        route = prepared.route
        link = self._link(route)
        if link is None:
            return None
        remote = link.statements.get((route.sql or prepared.sql, prepared.declared_oids))
        return None if remote is None else (link, remote)

    def _send_run(self, link: PgLink, remote: RemoteStatement, prepared: Prepared, parsed: str | None,
                  formats: tuple[int, ...], answered: bytes, params: bytes, tail: bytes,
                  limited: bool) -> None:
        """Start an extended-protocol run, as Session.on_parse / on_bind / on_execute →
        SessionLinks.execute do: the statement a Parse named (`parsed`), the unnamed portal,
        the session's own answers, then the client's Bind naming the source's statement,
        its parameters and formats (`params`) as sent, and Execute and Sync (`tail`). With
        a row limit (`limited`: asyncpg's fetchrow/fetchval) the source stops there and says
        PortalSuspended; Sync follows at once, so the portal ends as it does here."""
        s = self.state
        portal = Portal(prepared, [], formats)
        s.run_bound(prepared, parsed, portal)
        s.write(answered)
        self.activity.began(prepared.sql)
        prefix, quiet = self.links.prefix(link)
        route = prepared.route
        self._start(link, prefix + w.rebind(remote.name, params) + tail, quiet,
                    lambda outcome: self._extended_done(route, portal, outcome),
                    suspended=limited)

    def _extended_done(self, route: Route, portal: Portal, outcome: Outcome) -> None:
        s = self.state
        self.counted(route, outcome.error)
        if outcome.error is not None:
            if self._fatal(outcome.error):
                return
            s.report(outcome.error)
        else:
            self.links.wrote(route)
            portal.ran_to_end()
        # Sync, as Session.on_sync.
        s.stop_skipping()
        self.activity.went_idle()
        if not s.in_block:
            s.close_portals(keep_unnamed=False)
        s.write(encoder.ready_for_query(s.status))
        self._done()

    # --- running -------------------------------------------------------------------------

    def _start(self, link: PgLink, payload: bytes, quiet: int, done: Callable[[Outcome], None],
               **options: bool) -> None:
        exchange = self.exchange = Exchange(self, link, 1 + quiet, quiet, done, **options)
        link.port.attach(exchange.pump)
        link.writer.write(payload)
        if self.port.writing_paused:
            link.port.pause("client")

    def in_flight(self, exchange: Exchange | None) -> None:
        """The repeats' statement is in flight on a link of the session (`exchange`: the
        repeats), or ended (None): the lane holds what the client sends meanwhile."""
        self.exchange = exchange

    def _fatal(self, err: PgError) -> bool:
        """A FATAL from the source ends the client's connection too, as on the task."""
        if not err.is_fatal:
            return False
        self.exchange = None
        self.flush()
        self.state.writer.write(encoder.error_from(err))
        self.state.closed = True
        self.port.transport.close()
        return True

    def flush(self) -> None:
        s = self.state
        transport = self.port.transport
        data = s.take_output()
        if data and not self.closed and not transport.is_closing():
            transport.write(data)  # as s.writer.write, one call less

    def _continue(self) -> None:
        """A unit is done or in flight: once done, send its answer, then take what the
        client sent meanwhile (or hand it to the task)."""
        took = False
        while self.exchange is None and not self.closed:
            self.flush()
            if not self.held:
                break
            took = True
            data = b"".join(self.held)
            self.held.clear()
            if not (self._session_idle() and self._run(data)):
                self.port.feed(data)
                break
        if took:  # the port may have stopped reading for what was held (`offer`)
            self.port.consumed()
        self._settle()

    def _arm(self) -> None:
        """Arm the repeats (gateway.relay.express.memory.RememberingLane)."""

    def _done(self) -> None:
        ended(self.activity, self.state)  # the statement log (gateway.state.activity)
        self.exchange = None
        self._continue()
