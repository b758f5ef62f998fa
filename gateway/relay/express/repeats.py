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

What the lane keeps of a statement for them (`KeptQuery`, `KeptRun`; made by
`gateway.relay.express.kept`) is this module's, so they read it as typed fields. They read
no other object's attributes: they call its methods (the session's links, the link, its
port and reader, the client's port, the activity), or are handed the values at
construction, at `arm` and by the lane (`repeat_catalog`). tests/unit/gateway/
test_lane_owners.py holds the lane's compiled modules to it.

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


_NO_FORMATS = b"\0\0"  # a Bind's count of parameter formats: none, all text


class KeptQuery:
    """A lifted shape as the lane first relayed it (`route`, `writes` and `source` its
    route's), with what its route depended on; and the head of the Bind for the source's
    statement it was last sent to (`bind_head`)."""

    def __init__(self, route: object, writes: bool, source: str, lifted_sql: str,
                 search_path: str, version: object, in_transaction: bool, int4_key: tuple) -> None:
        self.route = route
        self.writes = writes
        self.source = source
        self.lifted_sql = lifted_sql
        self.search_path = search_path
        self.version = version
        self.in_transaction = in_transaction
        # The link's statement for numbers that are all int4 (pgbench's), as the
        # repeats look it up.
        self.int4_key = int4_key
        self.bound_name = None
        self.head = b""

    def bind_head(self, name: str, count: int) -> bytes:
        """The Bind's bytes between its length and its `count` values, for the source's
        statement `name` (kept: the link's statement is the same one statement after
        statement)."""
        if name != self.bound_name:
            self.head = (b"\0" + name.encode() + b"\0" + _NO_FORMATS
                         + bytes((count >> 8 & 0xFF, count & 0xFF)))
            self.bound_name = name
        return self.head


class KeptRun:
    """A `[Parse] Bind [Describe] Execute Sync` run the lane relayed, kept by its bytes
    without the Bind's values: what the session answers before the source does, and how
    to find again the statement it ran (`prepared`; `route`, `writes`, `source` and `sql`
    its)."""

    def __init__(self, prepared: object, route: object, writes: bool, source: str, sql: str,
                 statement: str, parsed: object, formats: tuple, answered: bytes, tail: bytes,
                 limited: bool, remote_key: tuple) -> None:
        self.prepared = prepared
        self.route = route
        self.writes = writes
        self.source = source
        self.sql = sql
        self.statement = statement  # the name the Bind gives
        self.parsed = parsed  # (query, parameter types) of the run's unnamed Parse, if any
        self.formats = formats  # the Bind's result formats
        self.answered = answered  # ParseComplete, BindComplete and the description, as sent
        self.tail = tail  # Execute (with its row limit) and Sync, for the source
        self.limited = limited  # the Execute has a row limit
        self.remote_key = remote_key  # the link's statement (`Lane._run_target`'s key)
        self.bound_name = None
        self.head = b""

    def bind_head(self, name: str) -> bytes:
        """The Bind's bytes before the client's parameters, naming the source's statement
        `name` (as `client.rebind`; kept: the link's statement is the same one run after
        run)."""
        if name != self.bound_name:
            self.head = w.rebind(name, b"")[5:]
            self.bound_name = name
        return self.head


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

    def _catalog(self) -> object:
        """(the catalog's version, the schema epoch) a statement runs under now, or None
        when the session may take none now, as far as arming does not say it."""
        if self.closed or self.unsent:
            return None
        catalog = self.lane.repeat_catalog()
        if catalog is not None and (type(catalog) is not tuple or len(catalog) != 2):
            raise TypeError("Repeats: the lane's catalog must be None or a pair")
        return catalog

    def _idle_link(self, source: object, writes: bool, kept_in_transaction: object,
                   key: tuple, version: object, epoch: int) -> object:
        """The session's idle link to `source` for this statement, or None: as
        Lane._link, with what arming covers left out. The link's `repeat_parts` (its
        `express_parts`, then the name of the source's statement for `key`) are then in
        `found_parts`."""
        if writes and self.writes_refused:
            return None
        link = self.links.repeat_link(source, self.in_block, writes, kept_in_transaction)
        if link is None:
            return None
        # idle (not broken, nobody reading, nothing unread), the row types this catalog
        # gives (SessionLinks.link sets them on the task), the statements of this schema
        # epoch (the Python road forgets older ones), and the client's settings mirrored
        # there (no SET to send first)
        parts = link.repeat_parts(key, (version, self.hidden), epoch, self.mirrored)
        if parts is None:
            return None
        if type(parts) is not tuple or len(parts) != 5:
            raise TypeError("Repeats: a link's repeat parts must be a tuple of five")
        self.found_parts = parts
        return link

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
        catalog = self._catalog()
        if catalog is None:
            return False
        if entry.search_path != self.search_path:
            return False
        version = catalog[0]
        if entry.version != version:
            return False
        if not entry.writes and self.relay != "on":
            return False
        key = entry.int4_key
        if type(key) is not tuple or len(key) != 2 or type(key[1]) is not tuple \
                or len(key[1]) != count:
            return False
        link = self._idle_link(entry.source, entry.writes, entry.in_transaction, key, version,
                               catalog[1])
        if link is None:
            return False
        parts = self.found_parts
        self.found_parts = None
        quiet = 0
        if self.in_block and parts[3] == "I":  # BEGIN goes first to a source the block has not reached
            if self.begin_query is None:
                return False
            quiet = 1
        head = entry.bind_head(parts[4], count)
        request = self.bind(head, numbers, self.bound_tail)
        if quiet:
            request = self.begin_query + request
        text = sql.decode("ascii")
        self._start(KIND_QUERY, link, parts, entry, entry.route, entry.writes, text, data,
                    request, quiet, None, 0)
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
        catalog = self._catalog()
        if catalog is None:
            return False
        prepared = entry.prepared
        parsed = entry.parsed
        # the Parse must find the statement the run found, or the Bind must name it
        if parsed is not None:
            found = self.relayed.get(self.links.relay_key(parsed[0], parsed[1]))
        else:
            found = self.statements.get(entry.statement)
        if found is not prepared:
            return False
        portals = self.portals
        if portals:
            # Outside a block Sync closed the last run's portal (a planner portal left
            # takes the task); in a block the last run's unnamed portal is replaced, as
            # the Python road does, unless a planner's streams there (closing it is the task's).
            if not in_block:
                return False
            old = portals.get("")
            if old is not None and old.streaming():
                return False
        link = self._idle_link(entry.source, entry.writes, None, entry.remote_key, catalog[0],
                               catalog[1])
        if link is None:
            return False
        parts = self.found_parts
        self.found_parts = None
        quiet = 0
        if in_block and parts[3] == "I":  # BEGIN goes first to a source the block has not reached
            if self.begin_query is None:
                return False
            quiet = 1
        head = entry.bind_head(parts[4])
        answered = entry.answered
        if type(head) is not bytes or type(answered) is not bytes:
            raise TypeError("Repeats: a run's bytes must be bytes")
        request = _message(0x42, head, data, params_at, end, entry.tail)
        if quiet:
            request = self.begin_query + request
        text = entry.sql
        portal = None
        if in_block:  # the block's unnamed portal, done at the run's end (`_finish`)
            portal = Portal(prepared, [], entry.formats)
        if parsed is not None or portal is not None:  # the unnamed Parse names the statement
            self.state.run_bound(prepared, "" if parsed is not None else None, portal)
        self.portal = portal
        self._start(KIND_RUN, link, parts, entry, entry.route, entry.writes, text, data, request,
                    quiet, answered, self.suspended_flag if limited else 0)
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
        if self._catalog() is None:
            return False
        state = self.state
        links = self.links
        activity = self.activity
        count = 0
        link = None
        parts = None
        if kind != CONTROL_BEGIN:
            ending = links.ending_links()  # None: it ends more than links (a writer, DDL)
            if ending is None:
                return False
            count = len(ending)
            if count > 1:
                return False
            if count == 1:
                link = ending[0]
                parts = link.express_parts()
                if parts is None:  # not idle
                    return False
                if type(parts) is not tuple or len(parts) != 4:
                    raise TypeError("Repeats: a link's express parts must be a tuple of four")
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
        self._start(KIND_END, link, parts, "rollback" if self.rollback else "commit", None, False,
                    sql, data, _ASK_ROLLBACK if self.rollback else _ASK_COMMIT, 0, None, 0)
        self.taken += 1
        return True

    # --- the answer -------------------------------------------------------------------------
