# cython: language_level=3, boundscheck=False, wraparound=False, annotation_typing=False
"""The express lane's repeats: a statement the lane ran before, in and out in one call
each way. `gateway.relay.express.memory` says when, and is the Python road this shortens: it stays
the one taken whenever this code declines, so the two must answer alike, byte for byte.

`Repeats(...)` is made by the lane, which hands it what it works with at construction:
the session's state, links, client port and activity, the lane's memory of shapes and
runs, and the lane's callbacks (`offer`, `adopt`, `resume`). Called with a chunk of the
client's bytes, it answers True when it started the chunk's statement itself: a simple
Query of a shape the lane remembers, an extended run it remembers (with a row limit:
outside a transaction block only), BEGIN, or a block's COMMIT/ROLLBACK on the one source
it reached, while the lane is armed and the link idle. Otherwise it disarms and hands the chunk to the lane's `offer`. While the
statement runs, `take` gets the link's chunks (the port's taker) and `pump` walks them
(`answer_pass`): at the last ReadyForQuery the statement is counted for /metrics and the
statement log, the session is idle again in pg_stat_activity and the client's answer
goes out in one write. What the walk does not read (an error, a new RowDescription, the
source gone) or a cancel hands the statement to a Python exchange (`adopt`) at the
message that needs it.

Armed means: since the lane last finished a statement with the session idle, no Python
acted for this session (the lane arms at that moment, `arm`; the client's port, the
session's task and the lane disarm whenever they act). What only they change (settings,
the transaction's state, prepared statements, the client's socket) is as the arming saw
it, kept in this object's own fields, or as this code changed it (BEGIN, COMMIT); what
may change meanwhile (the catalog, the links, a shutdown) is read again here for every
statement, as `gateway.relay.express.memory` does.

One source for both builds: Cython compiles this module when fedgate is installed (the C
types of its fields and names are in repeats.pxd beside it: a `cdef class` whose state
is typed fields, client bytes read through a pointer), and the same file runs as it is
when the extension is not built (`pgwire.compiled`). So the code is written for both:
the length of the bytes is taken first and no index reaches past it.
"""

from __future__ import annotations

from pgwire.protocol import encoder
from pgwire.protocol import client as w
from gateway.state.portals import Portal
from gateway.relay.express.repeats_flight import (DONE_COMMIT, DONE_ROLLBACK, KIND_END, KIND_QUERY,
                                                  KIND_RUN, Z_BLOCK, Z_IDLE, Flight)

CONTROL_NONE = 0
CONTROL_BEGIN = 1
CONTROL_COMMIT = 2
CONTROL_ROLLBACK = 3
_CONTROL_WORDS = {b"BEGIN": CONTROL_BEGIN, b"START TRANSACTION": CONTROL_BEGIN,
                  b"COMMIT": CONTROL_COMMIT, b"END": CONTROL_COMMIT,
                  b"ROLLBACK": CONTROL_ROLLBACK}

_DONE_BEGIN = encoder.command_complete("BEGIN")
_ASK_COMMIT = w.query("COMMIT")
_ASK_ROLLBACK = w.query("ROLLBACK")


def _space(c: int) -> bool:
    """What str.strip() strips among ASCII characters."""
    return c == 0x20 or 0x09 <= c <= 0x0D or 0x1C <= c <= 0x1F


def _be32(d: bytes, at: int) -> int:
    """The unsigned big-endian int32 at `at` (the caller saw four bytes there)."""
    value = d[at]
    value = value << 8 | d[at + 1]
    value = value << 8 | d[at + 2]
    value = value << 8 | d[at + 3]
    return value


def _message(tag: int, head: bytes, middle: bytes, start: int, end: int, tail: bytes) -> bytes:
    """One message `tag` whose body is head + middle[start:end], then `tail`, built in one
    buffer (compiled: written through a pointer)."""
    hn = len(head)
    pn = end - start
    tn = len(tail)
    length = 4 + hn + pn
    built = bytearray(1 + length + tn)
    out = built
    out[0] = tag
    out[1] = (length >> 24) & 0xFF
    out[2] = (length >> 16) & 0xFF
    out[3] = (length >> 8) & 0xFF
    out[4] = length & 0xFF
    h = head
    for k in range(hn):
        out[5 + k] = h[k]
    m = middle
    for k in range(pn):
        out[5 + hn + k] = m[start + k]
    t = tail
    for k in range(tn):
        out[5 + hn + pn + k] = t[k]
    return bytes(built)


class Repeats(Flight):
    """The express lane's repeats, in and out in one call each way (see the module)."""

    def __call__(self, data: bytes) -> bool:
        """The client's chunk: started here (True), or the lane's `offer`'s answer."""
        if self.armed and not self.flight and type(data) is bytes:
            n = len(data)
            d = data
            taken = False
            if n >= 6 and d[0] == 0x51 and _be32(d, 1) + 1 == n and d[n - 1] == 0:  # Q
                taken = self._take_query(data, n)
                if not taken:
                    taken = self._take_control(data, n)
            elif n >= 5 and (d[0] == 0x50 or d[0] == 0x42):  # P, B
                taken = self._take_run(data, n)
            if taken:
                return True
        self._disarm()  # Python acts for the session now: it arms again when it is done
        return self.offer(data)

    def _session_ready(self) -> bool:
        """The session may take a statement now, as far as arming does not say it."""
        state = self.state
        return not (self.closed or self.unsent or state.closed or self.port.draining
                    or self.ctx.catalog_stale)

    def _idle_link(self, route: object, version: object) -> object:
        """The session's idle link to `route`'s source for this statement, or None: as
        Lane._link, with what arming covers left out."""
        writes = bool(route.writes)
        if writes and self.writes_refused:
            return None
        source = route.source
        links = self.links
        if writes and self.in_block:
            writer = links.writer
            if writer is not None and writer is not source and writer != source:
                return None
        link = links.links.get(source)
        if link is None or not link.idle:  # not broken, nobody reading, nothing unread
            return None
        # the row types this catalog gives (SessionLinks.link sets them on the task)
        read_for = link.row_types_for
        if type(read_for) is not tuple or len(read_for) != 2:
            return None
        if not (read_for[0] == version and read_for[1] == self.hidden):
            return None
        # statements prepared before a schema change are forgotten on the Python road
        if link.statements_epoch != self.ctx.schema_epoch:
            return None
        # the link's mirrored settings are the client's (no SET to send first)
        if link.mirrored != self.mirrored:
            return None
        return link

    def _links_in_block(self, enough: int) -> int:
        """How many links the block reached (status not 'I'), leaving out the broken ones
        (SessionLinks.in_transaction), the last of them in `found`; the walk stops at
        `enough`."""
        count = 0
        self.found = None
        for link in self.links.links.values():
            if count >= enough:
                break
            if link.status != "I":
                if link.broken:
                    continue
                count += 1
                self.found = link
        return count

    def _take_query(self, data: bytes, n: int) -> bool:
        """A simple Query of a remembered shape: started, or not taken. As
        RememberingLane._hot_query."""
        d = data
        if d[n - 1] != 0 or not self.shapes:
            return False
        split = self.split(data[5:n - 1])
        if split is None:
            return False
        sql = split[0]
        numbers = split[2]
        entry = self.shapes.get(split[1])
        if entry is None:
            return False
        # every number an int4, as the Python road types it: the key the entry keeps
        count = len(numbers)
        for number in numbers:
            if len(number) >= 10:
                return False
            for c in number:
                if c < 0x30 or c > 0x39:
                    return False
        if not self._session_ready():
            return False
        if entry.search_path != self.search_path:
            return False
        version = self.ctx.catalog.version
        if entry.version != version:
            return False
        in_tx = self.in_block and self.links.active
        if entry.in_transaction != in_tx:
            return False
        route = entry.route
        if not route.writes and self.relay != "on":
            return False
        link = self._idle_link(route, version)
        if link is None:
            return False
        key = entry.int4_key
        if type(key) is not tuple or len(key) != 2 or type(key[1]) is not tuple \
                or len(key[1]) != count:
            return False
        remote = link.statements.get(key)
        if remote is None:
            return False
        quiet = 0
        if self.in_block and link.status == "I":  # BEGIN goes first to a source the block has not reached
            if self.begin_query is None:
                return False
            quiet = 1
        head = entry.head if entry.remote is remote else entry.bind_head(remote, count)
        request = self.bind(head, numbers, self.bound_tail)
        if quiet:
            request = self.begin_query + request
        text = sql.decode("ascii")
        self._start(KIND_QUERY, link, entry, text, data, request, quiet, None, 0)
        self.taken += 1
        return True

    def _take_run(self, data: bytes, n: int) -> bool:
        """An extended run remembered by its bytes: started, or not taken. As
        RememberingLane._hot_extended. In a block it goes to the one source link the
        block reached, or with BEGIN ahead of it to a link the block has not reached (as
        `_take_query`), and its unnamed portal lives on after Sync, run to its end. A run
        with a row limit is taken outside a block only: there the source's answer, a
        PortalSuspended included, is the client's as it comes, and Sync closes the portal
        on both sides; in a block the portal would outlive Sync on the source."""
        if not self.runs:
            return False
        d = data
        bind = 1 + _be32(d, 1) if d[0] == 0x50 else 0 if d[0] == 0x42 else -1
        if bind < 0 or bind + 5 > n or d[bind] != 0x42:
            return False
        end = bind + 1 + _be32(d, bind + 1)
        if end > n or end < bind + 5:
            return False
        keyed = self.run_key(data, bind, end, n)
        if keyed is None:
            return False
        params_at = keyed[1]
        entry = self.runs.get(keyed[0])
        if entry is None:
            return False
        in_block = self.in_block
        limited = bool(entry.limited)
        if limited and in_block:  # its portal may stay suspended on the source: the general road
            return False
        if not self._session_ready():
            return False
        version = self.ctx.catalog.version
        prepared = entry.prepared
        parsed = entry.parsed
        state = self.state
        # the Parse must find the statement the run found, or the Bind must name it
        if parsed is not None:
            found = state.relayed.get((parsed[0], parsed[1], version, self.search_path,
                                       self.relay, in_block and self.links.active,
                                       self.hidden))
        else:
            found = state.statements.get(entry.statement)
        if found is not prepared:
            return False
        portals = state.portals
        if portals:
            # Outside a block Sync closed the last run's portal (a planner portal left
            # takes the task); in a block the last run's unnamed portal is replaced, as
            # the Python road does, unless a planner's streams there (closing it is the task's).
            if not in_block:
                return False
            old = portals.get("")
            if old is not None and old.stream is not None:
                return False
        link = self._idle_link(prepared.route, version)
        if link is None:
            return False
        remote = link.statements.get(entry.remote_key)
        if remote is None:
            return False
        quiet = 0
        if in_block and link.status == "I":  # BEGIN goes first to a source the block has not reached
            if self.begin_query is None:
                return False
            quiet = 1
        head = entry.head if entry.remote is remote else entry.bind_head(remote)
        answered = entry.answered
        if type(head) is not bytes or type(answered) is not bytes:
            raise TypeError("Repeats: a run's bytes must be bytes")
        request = _message(0x42, head, data, params_at, end, entry.tail)
        if quiet:
            request = self.begin_query + request
        text = prepared.sql
        portal = None
        if in_block:  # the block's unnamed portal, done at the run's end (`_finish`)
            portal = Portal(prepared, [], entry.formats)
        if parsed is not None or portal is not None:  # the unnamed Parse names the statement
            state.run_bound(prepared, "" if parsed is not None else None, portal)
        self.portal = portal
        self._start(KIND_RUN, link, entry, text, data, request, quiet, answered,
                    self.suspended_flag if limited else 0)
        self.taken += 1
        return True

    def _control_word(self, d: bytes, start: int, end: int) -> tuple:
        """BEGIN, COMMIT and ROLLBACK (as ExpressLane's `_control`): (which one
        d[start:end] is, CONTROL_..., where the statement as split_statements gives it
        begins, and ends)."""
        a = start
        b = end
        while a < b and _space(d[a]):
            a += 1
        while b > a and _space(d[b - 1]):
            b -= 1
        while b > a and d[b - 1] == 0x3B:  # ;
            b -= 1
        while b > a and _space(d[b - 1]):
            b -= 1
        if b - a < 3 or b - a > 17:
            return CONTROL_NONE, a, b
        found = _CONTROL_WORDS.get(d[a:b].upper())
        return (CONTROL_NONE if found is None else found), a, b

    def _take_control(self, data: bytes, n: int) -> bool:
        """BEGIN, COMMIT/END or ROLLBACK: answered or started, or not taken. As
        ExpressLane._control, for a block that reached at most one source link."""
        kind, at, stop = self._control_word(data, 5, n - 1)
        if kind == CONTROL_NONE or (kind == CONTROL_BEGIN) == self.in_block:
            return False  # BEGIN in a block (a warning) or an end outside one: Python's
        if not self._session_ready():
            return False
        state = self.state
        links = self.links
        activity = self.activity
        count = 0
        link = None
        if kind != CONTROL_BEGIN:
            if links.writers or links.ddl:
                return False
            count = self._links_in_block(2)
            link = self.found
            self.found = None
            if count > 1:
                return False
            if count == 1 and not link.idle:
                return False
        said = data[at:stop]
        sql = said.decode("ascii")
        if kind == CONTROL_BEGIN:
            begin_query = _message(0x51, said, b"\0", 0, 1, b"")  # BEGIN as the client said
            self._sync()
            self._began(sql)
            links.block_began(sql)
            state.begin_block()
            activity.went_idle()
            self._rearm(True, begin_query)
            self._send(_DONE_BEGIN + Z_BLOCK)
            self.taken += 1
            return True
        self.rollback = kind == CONTROL_ROLLBACK
        if count == 0:  # the block reached no source: nothing to end there
            self._sync()
            self._began(sql)
            links.block_ended()
            state.end_block()
            activity.went_idle()
            self._rearm(False, None)
            self._send((DONE_ROLLBACK if self.rollback else DONE_COMMIT) + Z_IDLE)
            self.taken += 1
            return True
        self._start(KIND_END, link, "rollback" if self.rollback else "commit", sql, data,
                    _ASK_ROLLBACK if self.rollback else _ASK_COMMIT, 0, None, 0)
        self.taken += 1
        return True

    # --- the answer -------------------------------------------------------------------------
