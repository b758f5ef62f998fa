# cython: language_level=3, boundscheck=False, wraparound=False, annotation_typing=False
"""The express lane's repeats: a statement the lane ran before, in and out in one call
each way. `gateway.relay.hot` says when, and is the road this shortens: it stays the one
taken whenever this declines.

`Repeats` is made by the lane (`gateway.relay.hot.HotLane`) with the shapes and runs it
remembers (two dicts it fills, this reads) and the callbacks below. Offered a chunk of
the client's bytes (`offer`), it answers True when it started the chunk's statement
itself: a simple Query of a remembered shape whose numbers are all int4, an extended
run outside a transaction block, BEGIN, or a block's COMMIT/ROLLBACK on the one source it
reached, while the lane is armed (`arm`) and the link idle. Anything else disarms it and
goes to `decline` (the lane's own offer). While the statement runs, the link's port
calls `pump` after each chunk; at the last ReadyForQuery the statement is counted
(`counted`: /metrics and the statement log), the session is idle again and the client's
answer goes out in one write (`send`, or `hand_back` when the client sent more
meanwhile). What the answer's walk does not read (an error, a new RowDescription, the
source gone) or a cancel hands the statement to the lane's Python exchange (`adopt`)
at the message that needs it.

Armed means: since the lane last finished a statement with the session idle, no Python
acted for this session (the lane arms at that moment; the client's port, the session's
task and the lane disarm whenever they act). What only they change (settings, the
transaction's state, prepared statements, the client's socket) is as the arming saw
it, in this object's own fields, or as this code changed it (BEGIN, COMMIT); what may
change meanwhile (the catalog, the links, a shutdown) is asked again for every
statement (`moment`, `link_for`).

The callbacks (all given at construction, none private):
  decline(data) -> bool      the lane's Python offer
  send(data)                  write to the client (unless it is gone)
  hand_back(data)             the answer into the session's output, then the lane goes on
                              with what the client sent meanwhile
  held() -> bool              the client sent more meanwhile, or is gone
  moment() -> version | None  the catalog's version, or None when the session cannot take
                              a statement now (closed, output waiting, shutting down...)
  block_reached() -> bool     the transaction block reached a source
  link_for(route) -> link     the session's idle link for the route, or None
  prefix_of(link) -> (bytes, int)   commands to send first (settings, BEGIN), and how many
  run_ready(run) -> bool      the run's statement is still the one the session has
  started(text, prepared)     a statement starts (activity, skipping, the unnamed statement)
  counted(writes, source, run)   a statement ended: /metrics, the block's writer, Sync,
                              portals, the session idle, the statement log
  idle(logged)                the session is idle (after a block's end: with the log)
  began_block(sql) -> bool    BEGIN ran here; whether writes are refused in the block
  ended_block()               COMMIT/ROLLBACK ran here
  end_link() -> (bool, link)  the one link a block's end goes to (True, None: none)
  adopt(kind, link, ready, quiet, seen, entry, text, data, passed)   go on in Python

One source for both builds: Cython compiles this module when fedgate is installed (the
C types of its fields are in repeats.pxd beside it), and the same file runs as it is
when the extension is not built or FEDGATE_HOT_SPLIT=python (`pgwire.compiled`).
"""

from __future__ import annotations

from pgwire.protocol.answer_walks import PASS_DISCARD, PASS_QUIET, answer_pass
from gateway.relay.exchange import FLUSH_BYTES
from gateway.relay.remembered import BOUND_TAIL
from gateway.relay.statement_bytes import quick_bind, quick_split_bytes, run_key_of

KIND_QUERY, KIND_RUN, KIND_END = 0, 1, 2  # what is in flight (`adopt`'s kind)
_READY_IDLE, _READY_BLOCK = b"Z\0\0\0\x05I", b"Z\0\0\0\x05T"
_DONE_BEGIN, _DONE_COMMIT, _DONE_ROLLBACK = (b"C\0\0\0\x0aBEGIN\0", b"C\0\0\0\x0bCOMMIT\0",
                                             b"C\0\0\0\x0dROLLBACK\0")
_ASK_COMMIT, _ASK_ROLLBACK = b"Q\0\0\0\x0bCOMMIT\0", b"Q\0\0\0\x0dROLLBACK\0"
_CONTROL = {b"BEGIN": 1, b"START TRANSACTION": 1, b"COMMIT": 2, b"END": 2, b"ROLLBACK": 3}


def _be32(d: bytes, at: int) -> int:
    return (d[at] << 24) | (d[at + 1] << 16) | (d[at + 2] << 8) | d[at + 3]


def _int4s(numbers: list) -> bool:
    """Every number an int4 as the Python road types it (under ten digits)."""
    for number in numbers:
        if len(number) >= 10 or not number.isdigit():
            return False
    return True


def _control_word(body: bytes) -> int:
    """BEGIN (1), COMMIT (2), ROLLBACK (3) as ExpressLane's `_control` reads a Query's
    text, or 0."""
    text = body.strip().rstrip(b";").strip()
    if len(text) > 17:
        return 0
    return _CONTROL.get(text.upper(), 0)


class Repeats:
    """The lane's repeats (see the module's docstring)."""

    def __init__(self, shapes: dict, runs: dict, decline, send, hand_back, held, moment,
                 block_reached, link_for, prefix_of, run_ready, started, counted, idle,
                 began_block, ended_block, end_link, adopt) -> None:
        self.shapes, self.runs = shapes, runs
        self.decline, self.send, self.hand_back, self.held = decline, send, hand_back, held
        self.moment, self.block_reached, self.link_for = moment, block_reached, link_for
        self.prefix_of, self.run_ready, self.started = prefix_of, run_ready, started
        self.counted, self.idle, self.began_block = counted, idle, began_block
        self.ended_block, self.end_link, self.adopt = ended_block, end_link, adopt
        self.taken = 0
        self.armed = self.flight = False
        self.in_block = False
        self.search_path = self.relay = self.hidden = None
        self.ready = _READY_IDLE
        self.kind = self.seen = self.quiet = self.ready_count = 0
        self.link = self.entry = self.text = self.data = None
        self.out = []
        self.out_bytes = 0
        self.rollback = False
        self.writes = False
        self.source = None

    # --- the lane's calls ----------------------------------------------------------------

    def arm(self, in_block: bool, search_path: str, relay: str, hidden: object) -> None:
        """The session is idle after a statement of the lane: what it runs under."""
        self.in_block = in_block
        self.ready = _READY_BLOCK if in_block else _READY_IDLE
        self.search_path, self.relay, self.hidden = search_path, relay, hidden
        self.armed = True

    def disarm(self) -> None:
        """Take nothing until armed again. A statement in flight still ends with what it
        was armed with (its ReadyForQuery): a chunk arriving meanwhile (pipelining), a
        pause or a half-close disarm for what comes next, not for the answer on its way."""
        self.armed = False

    def offer(self, data: bytes) -> bool:
        """The client's chunk: started here (True), or `decline`'s answer."""
        if self.armed and not self.flight and type(data) is bytes:
            n = len(data)
            tag = data[0] if n else 0
            if tag == 81 and n >= 6 and _be32(data, 1) + 1 == n and data[n - 1] == 0:
                if self._take_query(data, n) or self._take_control(data, n):
                    return True
            elif n >= 5 and (tag == 80 or tag == 66):
                if self._take_run(data, n):
                    return True
        self.armed = False  # Python acts for the session now: it arms again when done
        return self.decline(data)

    def handoff(self) -> object:
        """The statement in flight goes on as the lane's Python exchange (`adopt`), which
        is returned; what the client was to get so far goes with it."""
        if not self.flight:
            raise RuntimeError("Repeats: no statement in flight")
        passed = b"".join(self.out)
        kind, link, ready, quiet, seen = (self.kind, self.link, self.ready_count, self.quiet,
                                          self.seen)
        entry, text, data = self.entry, self.text, self.data
        self._clear_flight()
        self.armed = False
        return self.adopt(kind, link, ready, quiet, seen, entry, text, data, passed)

    # --- starting --------------------------------------------------------------------------

    def _take_query(self, data: bytes, n: int) -> bool:
        """A simple Query of a remembered shape: as HotLane._hot_query."""
        if not self.shapes:
            return False
        split = quick_split_bytes(data[5:n - 1])
        if split is None:
            return False
        entry = self.shapes.get(split[1])
        if entry is None:
            return False
        numbers = split[2]
        if not _int4s(numbers):
            return False
        version = self.moment()
        if version is None or entry.search_path != self.search_path or entry.version != version:
            return False
        in_transaction = self.in_block and self.block_reached()
        if entry.in_transaction != in_transaction:
            return False
        route = entry.route
        if not route.writes and self.relay != "on":
            return False
        link = self.link_for(route)
        if link is None:
            return False
        remote = link.statements.get(entry.int4_key)
        if remote is None:
            return False
        prefix, quiet = self.prefix_of(link)
        request = quick_bind(entry.bind_head(remote, len(numbers)), numbers, BOUND_TAIL)
        text = split[0].decode("ascii")
        self.started(text, None)
        self._start(KIND_QUERY, link, entry, text, data, prefix + request if quiet else request,
                    quiet, None, route)
        return True

    def _take_run(self, data: bytes, n: int) -> bool:
        """An extended run remembered by its bytes, outside a block: as
        HotLane._hot_extended."""
        if self.in_block or not self.runs:
            return False
        tag = data[0]
        bind = 1 + _be32(data, 1) if tag == 80 else 0
        if bind + 5 > n or data[bind] != 66:
            return False
        end = bind + 1 + _be32(data, bind + 1)
        if end > n or end < bind + 5:
            return False
        keyed = run_key_of(data, bind, end, n)
        if keyed is None:
            return False
        entry = self.runs.get(keyed[0])
        if entry is None or entry.limited:
            return False  # a row limit: the general road
        params_at = keyed[1]
        if self.moment() is None or not self.run_ready(entry):
            return False
        prepared = entry.prepared
        route = prepared.route
        link = self.link_for(route)
        if link is None:
            return False
        remote = link.statements.get(entry.remote_key)
        if remote is None:
            return False
        prefix, quiet = self.prefix_of(link)
        head = entry.bind_head(remote)
        size = 4 + len(head) + end - params_at
        request = b"".join((prefix, b"B", size.to_bytes(4, "big"), head, data[params_at:end],
                            entry.tail))
        text = prepared.sql
        self.started(text, prepared if entry.parsed is not None else None)
        self._start(KIND_RUN, link, entry, text, data, request, quiet, entry.answered, route)
        return True

    def _take_control(self, data: bytes, n: int) -> bool:
        """BEGIN, COMMIT/END or ROLLBACK, as ExpressLane._control, for a block that
        reached at most one source link."""
        kind = _control_word(data[5:n - 1])
        if kind == 0 or (kind == 1) == self.in_block:
            return False  # BEGIN in a block (a warning) or an end outside one: Python's
        if self.moment() is None:
            return False
        sql = data[5:n - 1].strip().rstrip(b";").strip().decode("ascii")
        if kind == 1:
            self.started(sql, None)
            self.taken += 1
            self.began_block(sql)
            self.idle(False)
            self.in_block, self.ready = True, _READY_BLOCK
            self.send(_DONE_BEGIN + _READY_BLOCK)
            return True
        reached, link = self.end_link()
        if not reached:
            return False
        self.rollback = kind == 3
        self.started(sql, None)
        if link is None:  # the block reached no source: nothing to end there
            self.taken += 1
            self.ended_block()
            self.idle(False)
            self.in_block, self.ready = False, _READY_IDLE
            self.send((_DONE_ROLLBACK if self.rollback else _DONE_COMMIT) + _READY_IDLE)
            return True
        self._start(KIND_END, link, "rollback" if self.rollback else "commit", sql, data,
                    _ASK_ROLLBACK if self.rollback else _ASK_COMMIT, 0, None, None)
        return True

    def _start(self, kind: int, link: object, entry: object, text: str, data: bytes,
               request: bytes, quiet: int, first: object, route: object) -> None:
        """The request is written: the statement is in flight, its answer comes to `pump`."""
        self.taken += 1
        self.out = [first] if first is not None else []
        self.out_bytes = len(first) if first is not None else 0
        self.flight = True
        self.kind, self.seen, self.quiet, self.ready_count = kind, 0, quiet, 1 + quiet
        self.link, self.entry, self.text, self.data = link, entry, text, data
        if route is not None:
            self.writes, self.source = route.writes, route.source
        port = link.port
        port.consumer = self.pump
        port.transport.write(request)

    # --- the answer --------------------------------------------------------------------

    def pump(self) -> None:
        """The link's consumer while a statement of ours is in flight: as Exchange.pump.
        A failure of the walk itself (a bug of ours) goes to the Python exchange, which
        ends the statement with the error and drops the link (Exchange.failed)."""
        if not self.flight:
            return
        try:
            self._pump()
        except Exception as exc:
            if not self.flight:
                raise
            self.handoff().failed(exc)

    def _pump(self) -> None:
        link = self.link
        wire = link.wire
        buffer = wire.buffer
        pos = wire.pos
        described = link.described
        out = self.out
        while True:
            flags = ((PASS_DISCARD if self.kind == KIND_END else 0)
                     | (PASS_QUIET if self.seen < self.quiet else 0))
            passed, pos, stopped = answer_pass(buffer, pos, flags, described)
            if passed:
                out.append(passed)
                self.out_bytes += len(passed)
            if not stopped:
                break
            size = len(buffer)
            if pos + 6 > size or buffer[pos] != 90 or _be32(buffer, pos + 1) != 5:
                wire.pos = pos  # an error, a new description, COPY: Python reads it
                self.handoff().pump()
                return
            link.status = chr(buffer[pos + 5])
            pos += 6
            self.seen += 1
            if self.seen >= self.ready_count:
                wire.pos = pos
                self._finish()
                return
        wire.pos = pos
        if link.port.eof:  # the source is gone: the Python exchange says so
            self.handoff().pump()
            return
        if self.out_bytes >= FLUSH_BYTES:
            data = b"".join(out)
            out.clear()
            self.out_bytes = 0
            self.send(data)

    def _finish(self) -> None:
        """The last ReadyForQuery came: as HotLane._hot_done / _hot_run_done, _finished."""
        port = self.link.port
        port.consumer = None
        port.resume("client")
        out = self.out
        if self.kind == KIND_END:  # as ExpressLane._control_done
            self.ended_block()
            self.in_block, self.ready = False, _READY_IDLE
            out.append(_DONE_ROLLBACK if self.rollback else _DONE_COMMIT)
            self.idle(True)
        else:
            self.counted(self.writes, self.source, self.kind == KIND_RUN)
        out.append(self.ready)
        data = b"".join(out)
        self._clear_flight()
        if self.held():
            self.armed = False
            self.hand_back(data)  # what the client sent meanwhile: the lane takes it
        else:
            self.send(data)

    def _clear_flight(self) -> None:
        self.flight = False
        self.link = self.entry = self.text = self.data = self.source = None
        self.out = []
        self.out_bytes = 0
