# cython: language_level=3, boundscheck=False, wraparound=False, annotation_typing=False
"""The express lane's repeats, their statement in flight (`gateway.relay.express.repeats`
says what they are and takes the client's chunks): the arming's snapshot, the start of a
statement on its link, the source's answer (`take`, `pump`), its end (counted, the session
idle, the client's answer written) and the handing over of a statement to the lane's Python
exchange (`adopt`).

`Flight` holds the repeats' state in its own fields, handed over at construction or set by
`arm`; `gateway.relay.express.repeats.Repeats` builds on it. One source for both builds, as
that module: the C types of the fields are in repeats_flight.pxd beside it.

The repeats read no other object's attributes: they call its methods (the session's
links, the link, its port and reader, the client's port, the activity) or are handed the
values at construction, at `arm` and in the lane's answers (`Lane.repeat_catalog`);
tests/unit/gateway/test_lane_owners.py holds them to it.
"""

from __future__ import annotations

from time import time

from pgwire.protocol import encoder
from pgwire.protocol import client as w

KIND_QUERY = 0
KIND_RUN = 1
KIND_END = 2  # COMMIT or ROLLBACK of a block on the one source it reached
# The same as C integers where compiled (repeats_flight.pxd), for this module's comparisons.
_QUERY, _RUN, _END = KIND_QUERY, KIND_RUN, KIND_END

Z_IDLE = encoder.ready_for_query(b"I")
Z_BLOCK = encoder.ready_for_query(b"T")
DONE_COMMIT = encoder.command_complete("COMMIT")
DONE_ROLLBACK = encoder.command_complete("ROLLBACK")


class Flight:
    """The repeats' state and their statement in flight (see the module)."""

    def __init__(self, lane: object, state: object, links: object, port: object,
                 activity: object, shapes: dict, runs: dict, held: list, unsent: list,
                 portals: dict, statements: dict, relayed: dict, offer: object, adopt: object,
                 resume: object, split: object, bind: object, run_key: object,
                 answer_pass: object, ended: object, bound_tail: bytes, quiet_flag: int,
                 discard_flag: int, suspended_flag: int, flush_bytes: int, log_min_ms: int,
                 metrics: object) -> None:
        if type(shapes) is not dict or type(runs) is not dict:
            raise TypeError("Repeats: the lane's shapes and runs must be dicts")
        if type(held) is not list or type(unsent) is not list:
            raise TypeError("Repeats: what the lane holds and the session has not sent must be lists")
        if type(portals) is not dict or type(statements) is not dict or type(relayed) is not dict:
            raise TypeError("Repeats: the session's portals and statements must be dicts")
        self.lane = lane
        self.state = state
        self.links = links
        self.port = port
        self.activity = activity
        self.shapes = shapes
        self.runs = runs
        self.held = held  # what the client sent while a statement ran (the lane's)
        self.unsent = unsent  # what the session wrote and did not send yet
        # the session's (SessionState keeps them the same dicts for the session's life)
        self.portals = portals
        self.statements = statements
        self.relayed = relayed
        self.closed = False  # the client is gone (`client_lost`)
        self.offer = offer
        self.adopt = adopt
        self.resume = resume
        self.split = split
        self.bind = bind
        self.run_key = run_key
        self.answer_pass = answer_pass
        self.ended = ended
        self.bound_tail = bound_tail
        self.quiet_flag = quiet_flag
        self.discard_flag = discard_flag
        self.suspended_flag = suspended_flag
        self.flush_bytes = flush_bytes
        self.log_min_ms = log_min_ms  # the configuration's: not reloaded while the gateway runs
        self.metrics = metrics
        self.pump_m = self.pump
        self.take_m = self.take
        self.taken = 0
        self.armed = False
        self.in_block = False
        self.writes_refused = False
        self.search_path = None
        self.relay = None
        self.hidden = None
        self.mirrored = None
        self.ready = None
        self.begin_query = None
        self.flight = False
        self.kind = 0
        self.seen = 0
        self.quiet = 0
        self.flags = 0  # answer_pass's flags for the whole answer (PortalSuspended passed)
        self.ready_count = 0
        self.rollback = False
        self.link = None
        self.link_port = None  # the link's, and its reader and descriptions (`express_parts`)
        self.wire = None
        self.described = None
        self.route = None  # the statement's (None: a block's end)
        self.writes = False
        self.entry = None
        self.portal = None  # a block's unnamed portal, of the run in flight
        self.text = None
        self.data = None
        self.out = None
        self.out_bytes = 0
        self.started = 0.0
        self.found_parts = None  # the link's parts Repeats._idle_link found

    # --- arming ---------------------------------------------------------------------------

    def arm(self, in_block: bool, writes_refused: bool, search_path: object, relay: object,
            hidden: object, mirrored: object, ready: bytes, begin_query: object) -> None:
        """What the session runs under, until `disarm`."""
        self._disarm()
        self.in_block = in_block
        self.writes_refused = writes_refused
        self.search_path = search_path
        self.relay = relay
        self.hidden = hidden
        self.mirrored = mirrored
        self.ready = ready
        self.begin_query = begin_query
        self.armed = True

    def disarm(self) -> None:
        """Take nothing until armed again."""
        self._disarm()

    def client_lost(self) -> None:
        """The client is gone: take nothing more, send it nothing more."""
        self.closed = True
        self._disarm()

    def _disarm(self) -> None:
        self.armed = False
        # A statement still in flight ends with what it was armed with (its ReadyForQuery
        # above all): a client chunk arriving meanwhile (pipelining), a pause or a
        # half-close disarm the lane for what comes next, not for the answer already on
        # its way. The snapshot goes when the flight ends, at the next arm.
        if self.flight:
            return
        self.search_path = None
        self.relay = None
        self.hidden = None
        self.mirrored = None
        self.ready = None
        self.begin_query = None

    def _rearm(self, in_block: bool, begin_query: object) -> None:
        """The transaction state changed here (BEGIN, or a block's end): what arming took
        from the session follows it, as the lane's arming would have it."""
        self.writes_refused = bool(self.lane.refuses_writes())
        self.in_block = in_block
        self.begin_query = begin_query
        self.ready = Z_BLOCK if in_block else Z_IDLE

    def _clear_flight(self) -> None:
        self.flight = False
        self.link = None
        self.link_port = None
        self.wire = None
        self.described = None
        self.route = None
        self.entry = None
        self.portal = None
        self.text = None
        self.data = None
        self.out = None
        self.out_bytes = 0

    # --- the client's chunk -----------------------------------------------------------------

    def _began(self, text: str) -> None:
        """The session's activity says `text` runs since now (kept for its count)."""
        self.started = self.activity.began(text)

    def _sync(self) -> None:
        """A Query or Sync came (what the repeats start is both): the session skips no
        more (only its task starts skipping, and it disarms the repeats first)."""
        self.state.stop_skipping()

    def _send(self, data: bytes) -> None:
        """`data` to the client's socket, unless the client is gone or its socket closing."""
        if self.closed:
            return
        self.port.send(data)

    # --- starting -------------------------------------------------------------------------

    def _start(self, kind: int, link: object, parts: tuple, entry: object, route: object,
               writes: bool, text: str, data: bytes, request: bytes, quiet: int, first: object,
               flags: int) -> None:
        """The request is written: the statement is in flight, its answer comes to `pump`.
        `parts`: the link's `express_parts` (or `repeat_parts`); `route` and `writes` the
        statement's. On an error nothing of the flight is left behind (the link's port, the
        lane's exchange), so the Python road that takes the chunk over finds the link as it
        was."""
        self._began(text)
        self._sync()
        self.out = []
        self.out_bytes = 0
        self.flight = True
        self.kind = kind
        self.seen = 0
        self.quiet = quiet
        self.flags = flags
        self.ready_count = 1 + quiet
        self.link = link
        port = self.link_port = parts[0]
        self.wire = parts[1]
        self.described = parts[2]
        self.route = route
        self.writes = writes
        self.entry = entry
        self.text = text
        self.data = data
        if first is not None:
            self.out.append(first)
            self.out_bytes = len(first)
        written = False
        try:
            self.lane.in_flight(self)
            port.attach(self.pump_m, self.take_m)
            port.write(request)
            written = True
        finally:
            if not written:  # the first error is the one raised
                port.detach()
                self.lane.in_flight(None)
                self._clear_flight()

    def handoff(self) -> object:
        """Go on with the statement in flight as a Python exchange, and return it."""
        return self._handoff()

    def _handoff(self) -> object:
        """The statement in flight goes on as a Python exchange (the lane's `adopt`). What
        the client was to get so far goes to the session first."""
        if not self.flight:
            raise RuntimeError("Repeats: no statement in flight")
        passed = b"".join(self.out)
        kind = self.kind
        link = self.link
        ready_count = self.ready_count
        quiet = self.quiet
        seen = self.seen
        entry = self.entry
        text = self.text
        data = self.data
        self._clear_flight()
        self._disarm()
        return self.adopt(kind, link, ready_count, quiet, seen, entry, text, data, passed)

    def _handoff_and_pump(self) -> None:
        exchange = self._handoff()
        exchange.pump()

    def _write_out(self) -> None:
        """What the statement in flight has for the client so far, written now."""
        out = self.out
        joined = b"".join(out)
        del out[:]
        self.out_bytes = 0
        self._send(joined)

    def _finish(self) -> None:
        """The last ReadyForQuery came: as RememberingLane._hot_done / _hot_run_done and
        _finished."""
        seconds = time() - self.started
        self.link_port.release()
        state = self.state
        links = self.links
        activity = self.activity
        kind = self.kind
        if kind == _END:  # as ExpressLane._control_done
            links.block_ended()
            state.end_block()
            self._rearm(False, None)
            self.out.append(DONE_ROLLBACK if self.rollback else DONE_COMMIT)
        else:
            route = self.route
            writes = self.writes
            self.metrics.statement_done("write" if writes else "select", None, "express", seconds)
            if writes and self.in_block:  # (`wrote` asks too: one call less for a read)
                links.wrote(route)
            if kind == _RUN:
                if self.portal is not None:  # the block's unnamed portal ran to its end
                    self.portal.ran_to_end()
                self._sync()  # Sync, as Session.on_sync
            if not self.in_block and self.portals:
                state.close_portals(False)
        # the statement log (gateway.state.activity.ended), when it logs anything
        logged = self.log_min_ms >= 0
        activity.went_idle(logged)
        if logged:
            self.ended(activity, state)
        ready = self.ready
        if ready is None:  # never so: _disarm keeps it while in flight
            raise RuntimeError("Repeats: a statement ended with no ReadyForQuery")
        self.lane.in_flight(None)
        self.out.append(ready)
        if self.held or self.closed:
            # what the client sent meanwhile: the lane's Python takes it from here
            joined = b"".join(self.out)
            self._clear_flight()
            self._disarm()
            state.write(joined)
            self.resume()
            return
        self._write_out()
        self._clear_flight()

    def pump(self) -> None:
        """The link's consumer while a statement of ours is in flight (as Exchange.pump);
        when its own walk fails (a bug of ours) the statement goes on as a Python exchange,
        which ends it with the error, drops the link and logs it (Exchange.failed)."""
        if not self.flight:
            return
        try:
            self._pump()
        except Exception as exc:
            if not self.flight:
                raise
            exchange = self._handoff()
            exchange.failed(exc)

    def _pump(self) -> None:
        link = self.link
        wire = self.wire
        unread = wire.unread()
        if len(unread) != 2:
            raise TypeError("Repeats: the link's reader must give its buffer and position")
        raw = unread[0]
        if type(raw) is not bytearray:
            self._handoff_and_pump()
            return
        buffer = raw
        pos = unread[1]
        if pos < 0 or pos > len(buffer):
            raise RuntimeError("Repeats: the link's read position is outside its buffer")
        described = self.described
        while True:
            flags = ((self.discard_flag if self.kind == _END else 0)
                     | (self.quiet_flag if self.seen < self.quiet else 0) | self.flags)
            walked = self.answer_pass(buffer, pos, flags, described)
            passed = walked[0]
            pos = walked[1]
            if type(passed) is bytes and len(passed):
                self.out.append(passed)
                self.out_bytes += len(passed)
            if not walked[2]:
                break
            size = len(buffer)
            if (pos + 6 > size or buffer[pos] != 0x5A or buffer[pos + 1] != 0
                    or buffer[pos + 2] != 0 or buffer[pos + 3] != 0 or buffer[pos + 4] != 5):
                wire.consumed_to(pos)  # an error, a new description, COPY: Python reads it
                self._handoff_and_pump()
                return
            link.set_status(chr(buffer[pos + 5]))
            pos += 6
            self.seen += 1
            if self.seen >= self.ready_count:
                wire.consumed_to(pos)
                self._finish()
                return
        wire.consumed_to(pos)
        if self.link_port.at_eof():
            self._handoff_and_pump()  # the source is gone: the Python exchange says so
            return
        if self.out_bytes >= self.flush_bytes:
            self._write_out()

    def take(self, data: bytes) -> None:
        """The link's chunk while a statement of ours is in flight (LinkPort.taker): the
        link's reader gets it (as BackendReader.feed), then `pump`, which checks what the
        reader holds before walking it."""
        wire = self.wire
        if wire is None:
            raise RuntimeError("Repeats: no statement in flight")
        wire.feed(data)
        self.pump()
