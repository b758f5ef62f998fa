"""The express lane: relayed statements answered from the sockets' callbacks.

A statement of one PostgreSQL source (`gateway.relay.routing`) costs little on the source, and
on the session's task it costs two task wake-ups and a dozen awaits per statement: more
than the source's own work for pgbench's point queries. The lane does the same work in
the transports' callbacks instead. The client's bytes arrive (`ClientPort`), the route
comes from the router's cache, the bytes go to the session's link, and the link's
callback (`LinkPort`) passes the source's answer to the client as it arrives.

What the lane takes, all on a link the session already has, idle:
- a simple Query of one statement that the session would relay (not COPY, not DDL);
- an extended-protocol run `[Parse] Bind [Describe] Execute Sync` of a relayed statement
  (unnamed portal, no row limit), where the Parse repeats one the session relayed.
Everything else (the first statement on a link, planner queries, SET, COPY, a
statement_timeout to enforce, errors of our own, half-received messages) goes to the
session's task exactly as before, and in order: the lane acts only while the task waits
for input with nothing buffered, and holds what arrives while its exchange is in flight.
Each step mirrors the session's own (`Session._run_statements`, `_on_parse`, `_on_bind`,
`_on_execute`, `_on_sync`; `SessionLinks.simple`/`execute`), so answers, transaction
states and errors are the same on both roads; `SET fedgate.express = off` takes the
task's road only.

    client ──Q──▶ ClientPort.data_received ─▶ lane.offer ─▶ link transport.write
    client ◀─rows── session.write ◀─ Exchange.pump ◀─ LinkPort.data_received ◀── source
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pgwire.protocol import client as w
from connectors.postgres.link import Outcome, PgLink, RemoteStatement
from pgwire.errors import PgError
from gateway.relay.exchange import Exchange, cut
from gateway.relay.hot import HotMixin, HotQuery, HotRun
from gateway.relay.links import lifted_execute, stale_plan, unlifted
from gateway.relay.literals import Lifted
from gateway.pg_catalog.session_state import note_idle, note_query
from gateway.state.portals import Portal, Prepared
from pgwire.protocol import encoder
from pgwire.protocol import messages as m
from pgwire.protocol import peek
from pgwire.protocol.decoder import FrontendDecoder
from gateway.relay.routing import Route
from gateway.session.relay import relayed_description
from gateway.state.statements import split_statements

if TYPE_CHECKING:
    from gateway.server.client_port import ClientPort
    from gateway.session.session import Session

log = logging.getLogger("fedgate.express")

_Q, _P, _B, _D, _E, _S = (ord(c) for c in "QPBDES")
_EXTENDED = frozenset((_P, _B, _D, _E))
# Transaction control the lane runs itself (bare forms; others take the task's road).
_CONTROL = {"BEGIN": "begin", "START TRANSACTION": "begin", "COMMIT": "commit", "END": "commit",
            "ROLLBACK": "rollback"}


class ExpressLane(HotMixin):
    def __init__(self, session: Session, port: ClientPort) -> None:
        self.session = session
        self.port = port
        self.exchange: Exchange | None = None
        self.held: list[bytes] = []  # arrived while an exchange was in flight
        self.closed = False
        self.taken = 0  # statements the lane ran (SHOW fedgate.express_statements)
        self._shapes: dict[str, HotQuery] = {}  # lifted shapes, by shape (gateway.relay.hot)
        self._runs: dict[bytes, HotRun] = {}  # extended runs, by bytes without values
        self._decoder = FrontendDecoder(session.ctx.config.server.max_message_bytes)
        self._decoder.startup_done()

    # --- entry points (ClientPort's callbacks) --------------------------------------------

    def offer(self, data: bytes) -> bool:
        """Take `data` if it starts with what the lane runs; False leaves it to the task."""
        if self.exchange is not None:
            self.held.append(data)
            return True
        if not self._session_idle() or not self._run(data):
            return False
        self._continue()
        return True

    def client_lost(self) -> None:
        self.closed = True
        self.held.clear()

    def client_paused(self, paused: bool) -> None:
        """The client reads slower than the source sends: hold the source back."""
        if self.exchange is not None:
            port = self.exchange.link.port
            port.pause("client") if paused else port.resume("client")

    def cancel(self) -> bool:
        """A CancelRequest for this session: cancel the statement on the source, which
        answers it with its own 57014 error. False when no exchange is in flight."""
        if self.exchange is None:
            return False
        task = asyncio.ensure_future(self._send_cancel(self.exchange.link))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return True

    @staticmethod
    async def _send_cancel(link: PgLink) -> None:
        try:
            await link.send_cancel()
        except OSError as exc:
            log.warning("cancel to source %s failed: %s", link.source, exc)

    # --- deciding ------------------------------------------------------------------------

    def _session_idle(self) -> bool:
        s = self.session
        return (self.port.idle and not self.closed and not s.closed and not s._out
                and s._running is None and s.copy_in is None and s.copy_local is None
                and not s.ctx.catalog_stale
                and not self.port.writing_paused
                and s.settings.values["fedgate.express"] == "on"
                and s.settings.values["statement_timeout"] == "0")

    def _run(self, data: bytes) -> bool:
        if self._hot(data):
            self.taken += 1
            return True
        messages, complete = cut(data)
        if not messages:
            return False
        tag = messages[0][0]
        if tag == _Q:
            started = self._query(data, messages[0])
            used = messages[0][2]
        elif tag in _EXTENDED:
            sync = next((i for i, msg in enumerate(messages) if msg[0] == _S), None)
            if sync is None:
                return False
            started = self._extended(data, messages[:sync + 1])
            used = messages[sync][2]
        else:
            return False
        if not started:
            return False
        self.taken += 1
        if used < len(data):
            self.held.insert(0, data[used:])
        return True

    def _decode(self, data: bytes, start: int, end: int) -> m.FrontendMessage | None:
        """One message; None when it does not decode (the task reports the error)."""
        self._decoder.feed(data[start:end])
        try:
            return self._decoder.next_message()
        except PgError:  # malformed: the task's decoder says so to the client
            self._decoder = FrontendDecoder(self.session.ctx.config.server.max_message_bytes)
            self._decoder.startup_done()
            return None

    def _link(self, route: Route) -> PgLink | None:
        """The session's link to the route's source, when the lane may use it now: it
        exists (opening one takes the task), idle, and the write is allowed."""
        s = self.session
        if s.failed or route.kind != "postgres" or route.copy_in or route.ddl:
            return None
        links = s.links
        if route.writes and s.in_block and links.writer not in (None, route.source):
            return None  # the task reports 0A000
        link = links.links.get(route.source)
        return link if link is not None and link.idle else None

    # --- a simple Query ------------------------------------------------------------------

    def _query(self, data: bytes, found: tuple[int, int, int]) -> bool:
        s = self.session
        if s.failed or data[found[2] - 1] != 0:
            return False
        try:
            text = data[found[1] + 5:found[2] - 1].decode()
        except UnicodeDecodeError:
            return False  # the task reports it
        if "\0" in text:
            return False
        statements = split_statements(text)
        if len(statements) != 1:
            return False
        sql = statements[0]
        control = _CONTROL.get(sql.upper())
        if control is not None:
            return self._control(control, sql)
        try:
            route = s._route(sql)
        except PgError:
            return False  # the task reports it
        link = self._link(route) if route is not None else None
        if route is None or link is None:
            return False
        lifted = s.links.lifted(route, sql)
        if lifted is not None:
            remote = link.statements.get((lifted.sql, lifted.oids))
            if remote is None:
                return False  # the task prepares the shape on the link
            request = lifted_execute(remote.name, lifted)
        else:
            request = w.query(route.sql or sql)
        raw = data[found[1]:found[2]]
        self._send_query(link, request, sql, lambda outcome: self._query_done(route, outcome, lifted, raw))
        if lifted is not None:
            self._remember(text, route, lifted)
        return True

    def _send_query(self, link: PgLink, request: bytes, sql: str, done: Callable[[Outcome], None]) -> None:
        """Start a simple Query's statement, as Session._on_query → _run_statements →
        SessionLinks.simple do."""
        s = self.session
        s.skipping = False
        note_query(s, sql)
        prefix, quiet = s.links._prefix(link)
        self._start(link, prefix + request, quiet, done)

    def _query_done(self, route: Route, outcome: Outcome, lifted: Lifted | None, raw: bytes) -> None:
        s = self.session
        if lifted is not None:
            outcome.error = unlifted(outcome.error, lifted)
            link = s.links.links.get(route.source)
            if stale_plan(outcome.error) and link is not None and link.status == "I":
                # The table changed shape since the statement was prepared: the task
                # runs the Query again, as written (see SessionLinks.simple).
                link.statements.pop((lifted.sql, lifted.oids), None)
                self.exchange = None
                self.port.feed(raw)
                self._continue()
                return
        if outcome.error is not None:
            if self._fatal(outcome.error):
                return
            s._report(outcome.error)
        elif route.writes and s.in_block:
            s.links.writer = route.source
        s._query_done()
        self._done()

    def _control(self, kind: str, sql: str) -> bool:
        """BEGIN, COMMIT/END, ROLLBACK: as `UtilityMixin._transaction`, for a block that
        touched at most one PostgreSQL link and holds no other connection."""
        s = self.session
        if kind == "begin":
            if s.in_block:
                return False  # the warning is the task's
            s.skipping = False
            note_query(s, sql)
            s.links.begin_sql = sql
            s.begin_block()
            s.write(encoder.command_complete("BEGIN"))
            s._query_done()
            return True
        links = s.links
        if not s.in_block or links.writers or links.ddl:
            return False
        touched = links._in_transaction()
        if len(touched) > 1 or (touched and not touched[0].idle):
            return False
        s.skipping = False
        note_query(s, sql)
        if not touched:  # the block reached no source: nothing to end there
            self._control_done(kind, Outcome())
            return True
        command = "COMMIT" if kind == "commit" else "ROLLBACK"
        self._start(touched[0], w.query(command), 0, lambda outcome: self._control_ended(kind, outcome),
                    discard=True)
        return True

    def _control_ended(self, kind: str, outcome: Outcome) -> None:
        if not self._control_done(kind, outcome):
            self._done()

    def _control_done(self, kind: str, outcome: Outcome) -> bool:
        """True when a FATAL error ended the connection."""
        s = self.session
        s.links.writer = None
        s.end_block()
        if outcome.error is not None:
            if self._fatal(outcome.error):
                return True
            s._report(outcome.error)
        else:
            s.write(encoder.command_complete("ROLLBACK" if kind == "rollback" else "COMMIT"))
        s._query_done()
        return False

    # --- an extended-protocol run ------------------------------------------------------------

    def _extended(self, data: bytes, found: list[tuple[int, int, int]]) -> bool:
        """[Parse] Bind [Describe] Execute Sync, checked whole before anything is done."""
        s = self.session
        if s.failed or s.skipping:
            return False
        parse: m.Parse | None = None
        if found[0][0] == _P:
            decoded = self._decode(data, found[0][1], found[0][2])
            if not isinstance(decoded, m.Parse):
                return False
            parse, found = decoded, found[1:]
        tags = [tag for tag, _, _ in found]
        if tags not in ([_B, _E, _S], [_B, _D, _E, _S]) or found[-1][2] - found[-1][1] != 5:
            return False
        bind = peek.bind(data, found[0][1], found[0][2])
        execute = peek.execute(data, found[-2][1], found[-2][2])
        describe = peek.describe(data, found[1][1], found[1][2]) if len(found) == 4 else None
        if bind is None or execute is None or (len(found) == 4 and describe is None):
            return False
        portal_name, max_rows = execute
        prepared = self._statement(parse, bind.statement)
        if prepared is None or prepared.remote is None or prepared.route is None:
            return False
        if bind.portal or portal_name or bind.param_count != len(prepared.param_oids):
            return False
        if max_rows and s.in_block:
            return False  # the portal outlives Sync: its next Execute takes the task's road
        if describe is not None and describe[1] != (bind.statement if describe[0] == "S" else ""):
            return False
        target = self._run_target(prepared)
        if target is None:
            return False
        link, remote = target
        # What the session answers itself, before the source: as Session._on_parse /
        # _on_bind / _on_describe.
        prelude = [encoder.parse_complete()] if parse is not None else []
        prelude.append(encoder.bind_complete())
        if describe is not None:
            if describe[0] == "S":
                prelude.append(encoder.parameter_description(prepared.param_oids))
            prelude.append(relayed_description(prepared, () if describe[0] == "S" else bind.result_formats))
        answered, tail = b"".join(prelude), w.execute("", max_rows) + w.SYNC
        if parse is None or not parse.name:
            self._remember_run(data, found, prepared, parse, bind.result_formats, answered, tail)
        self._send_run(link, remote, prepared, parse.name if parse is not None else None,
                       bind.result_formats, answered, data[bind.params_at:found[0][2]], tail,
                       bool(max_rows))
        return True

    def _run_target(self, prepared: Prepared) -> tuple[PgLink, RemoteStatement] | None:
        """The link and the source's statement a run of `prepared` goes to, when the lane
        may start it now."""
        old = self.session.portals.get("")
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
        """Start an extended-protocol run, as Session._on_parse / _on_bind / _on_execute →
        SessionLinks.execute do: the statement a Parse named (`parsed`), the unnamed portal,
        the session's own answers, then the client's Bind naming the source's statement,
        its parameters and formats (`params`) as sent, and Execute and Sync (`tail`). With
        a row limit (`limited`: asyncpg's fetchrow/fetchval) the source stops there and says
        PortalSuspended; Sync follows at once, so the portal ends as it does here."""
        s = self.session
        if parsed is not None:
            s.statements[parsed] = prepared
        portal = Portal(prepared, [], formats)
        s.portals[""] = portal
        s.write(answered)
        note_query(s, prepared.sql)
        prefix, quiet = s.links._prefix(link)
        route = prepared.route
        self._start(link, prefix + w.rebind(remote.name, params) + tail, quiet,
                    lambda outcome: self._extended_done(route, portal, outcome),
                    suspended=limited)

    def _statement(self, parse: m.Parse | None, name: str) -> Prepared | None:
        """The relayed statement a Bind names, with the Parse before it (which must repeat
        one the session relayed: `Session._on_parse`'s cache)."""
        s = self.session
        if parse is None:
            return s.statements.get(name)
        if parse.name != name or (parse.name and parse.name in s.statements):
            return None
        return s._relayed.get(s.relay_key(parse))

    def _extended_done(self, route: Route, portal: Portal, outcome: Outcome) -> None:
        s = self.session
        if outcome.error is not None:
            if self._fatal(outcome.error):
                return
            s._report(outcome.error)
        else:
            if route.writes and s.in_block:
                s.links.writer = route.source
            portal.done = True
        # Sync, as Session._on_sync.
        s.skipping = False
        note_idle(s)
        if not s.in_block:
            s._close_portals_sync(keep_unnamed=False)
        s.write(encoder.ready_for_query(s.status))
        self._done()

    # --- running -------------------------------------------------------------------------

    def _start(self, link: PgLink, payload: bytes, quiet: int, done: Callable[[Outcome], None],
               **options: bool) -> None:
        exchange = self.exchange = Exchange(self, link, 1 + quiet, quiet, done, **options)
        link.port.consumer = exchange.pump
        link.writer.write(payload)
        if self.port.writing_paused:
            link.port.pause("client")

    def _fatal(self, err: PgError) -> bool:
        """A FATAL from the source ends the client's connection too, as on the task."""
        if not err.is_fatal:
            return False
        self.exchange = None
        self.flush()
        self.session.writer.write(encoder.error_from(err))
        self.session.closed = True
        self.port.transport.close()
        return True

    def flush(self) -> None:
        s = self.session
        transport = self.port.transport
        if s._out and not self.closed and not transport.is_closing():
            transport.write(b"".join(s._out))  # as s.writer.write, one call less
        s._out.clear()
        s._out_bytes = 0

    def _continue(self) -> None:
        """A unit is done or in flight: once done, send its answer, then take what the
        client sent meanwhile (or hand it to the task)."""
        while self.exchange is None and not self.closed:
            self.flush()
            if not self.held:
                return
            data = b"".join(self.held)
            self.held.clear()
            if not (self._session_idle() and self._run(data)):
                self.port.feed(data)
                return

    def _done(self) -> None:
        self.exchange = None
        self._continue()
