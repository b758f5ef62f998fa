"""The express lane's memory of what it relayed before: a repeat costs one lookup.

pgbench's scripts, and drivers' prepared statements, send a handful of statements over
and over with new values. The lane (`gateway.relay.express`) checks a statement's bytes, routes
it and rewrites it for the source the first time; this module keeps the outcome, so a
repeat skips the router, the lifting, the statement splitter and the message decoder.
What depends on the moment (the session's state, search_path, the catalog's version, the
link and its prepared statement) is still checked every time.

Simple Queries are kept by shape, once their numbers were lifted (`gateway.relay.literals`):

    SELECT abalance FROM pgbench_accounts WHERE aid = 54321;
      shape  SELECT abalance FROM pgbench_accounts WHERE aid = ?        (the key)
      →      Bind fg_1 ('54321')  Describe  Execute  Sync               (one write)

Only texts without quotes, escapes, dollar signs, question marks, comments, inner
semicolons or non-ASCII characters are read this way: for them, splitting on numbers
gives exactly the shape and numbers `gateway.relay.shapes` finds, and `split_statements` the
statement itself (stripped, one trailing semicolon dropped). The split reads the Query's
bytes in one pass (`gateway.relay.quick`: in C when built).

Extended-protocol runs `[Parse] Bind [Describe] Execute Sync` are kept by their bytes
without the Bind's length and parameter values (`run_key`): two runs with one key differ
in their values only, so every check `ExpressLane._extended` made of the first holds for
the second, and the messages the session answers before the source does are the same.

A repeat's steps (the lane's `_send_query`/`_send_run`, `_start`, and the finish of the
statement) are written out in `_hot_query`, `_hot_extended` and their `..._done`: each is
a few function calls fewer per statement, which is most of the lane's CPU; a repeat that
meets an error, or a run with a row limit, takes the general steps.
"""

from __future__ import annotations

import struct
import time
from functools import partial

from pgwire.compiled import choose
from pgwire.protocol import client as w
from connectors.postgres.link import Outcome, RemoteStatement
from gateway.relay.exchange import Exchange
from gateway.relay.literals import INT4, Lifted, type_of, lift
from gateway.relay.quick import HOT_SPLIT_ENV, quick_bind, quick_split, quick_split_bytes
from gateway.state.activity import began, ended
from gateway.state.portals import Portal, Prepared
from pgwire.protocol import encoder
from pgwire.protocol import messages as m
from gateway.relay.lane import ClientSide, Lane
from gateway.relay.links import SessionLinks
from gateway.state.route import Route
from gateway.state.session import SessionState

_READY = {b"I": encoder.ready_for_query(b"I"), b"T": encoder.ready_for_query(b"T"),
          b"E": encoder.ready_for_query(b"E")}
_I16, _I32, _U32 = struct.Struct("!h"), struct.Struct("!i"), struct.Struct("!I")
_Q, _P, _B = (ord(c) for c in "QPB")
_NO_FORMATS = _I16.pack(0)
# Describe the unnamed portal, run it, Sync: as `gateway.relay.links.lifted_execute`.
BOUND_TAIL = w.describe("P", "") + w.execute("", 0) + w.SYNC
LIMIT = 256  # shapes, and runs, kept per session
_UNLIMITED = w.execute("", 0) + w.SYNC


class HotQuery:
    """A lifted shape as the lane first relayed it, with what its route depended on; and
    the head of the Bind for the source's statement it was last sent to (`bind_head`)."""

    __slots__ = ("route", "lifted_sql", "search_path", "version", "in_transaction", "remote",
                 "head")

    def __init__(self, route: Route, lifted_sql: str, search_path: str, version: int,
                 in_transaction: bool) -> None:
        self.route = route
        self.lifted_sql = lifted_sql
        self.search_path = search_path
        self.version = version
        self.in_transaction = in_transaction
        self.remote: RemoteStatement | None = None
        self.head = b""

    def bind_head(self, remote: RemoteStatement, count: int) -> bytes:
        """The Bind's bytes between its length and its values, for `remote` (kept: the
        link's statement is the same one statement after statement)."""
        if remote is not self.remote:
            self.remote = remote
            self.head = b"\0" + remote.name.encode() + b"\0" + _NO_FORMATS + _I16.pack(count)
        return self.head


def parameter_types(numbers: list[str]) -> tuple[int, ...]:
    """The literals' own types (int4, int8 or numeric), as `gateway.relay.literals.lift` gives."""
    if len(numbers) == 1:  # pgbench's statements, and most point queries: no generator
        n = numbers[0]
        return (INT4,) if len(n) < 10 and n.isdigit() else (type_of(n),)
    return tuple([INT4 if len(n) < 10 and n.isdigit() else type_of(n) for n in numbers])


def bound_request(statement: RemoteStatement, numbers: list[str]) -> bytes:
    """Bind the numbers (text format) to the prepared shape, then Describe/Execute/Sync."""
    parts = [b"\0", statement.name.encode(), b"\0", _NO_FORMATS, _I16.pack(len(numbers))]
    for number in numbers:
        value = number.encode()
        parts.append(_I32.pack(len(value)))
        parts.append(value)
    parts.append(_NO_FORMATS)
    body = b"".join(parts)
    return b"B" + _I32.pack(len(body) + 4) + body + BOUND_TAIL


# --- extended-protocol runs --------------------------------------------------------------

class HotRun:
    """A `[Parse] Bind [Describe] Execute Sync` run the lane relayed, kept by its bytes
    without the Bind's values (`run_key`): what the session answers before the source
    does, and how to find again the statement it ran."""

    __slots__ = ("prepared", "statement", "parsed", "formats", "answered", "tail", "limited",
                 "remote", "head")

    def __init__(self, prepared: Prepared, statement: str, parsed: tuple[str, tuple[int, ...]] | None,
                 formats: tuple[int, ...], answered: bytes, tail: bytes) -> None:
        self.prepared = prepared
        self.statement = statement  # the name the Bind gives
        self.parsed = parsed  # (query, parameter types) of the run's unnamed Parse, if any
        self.formats = formats  # the Bind's result formats
        self.answered = answered  # ParseComplete, BindComplete and the description, as sent
        self.tail = tail  # Execute (with its row limit) and Sync, for the source
        self.limited = tail != _UNLIMITED
        self.remote: RemoteStatement | None = None
        self.head = b""

    def bind_head(self, remote: RemoteStatement) -> bytes:
        """The Bind's bytes before the client's parameters, naming `remote` (as
        `client.rebind`; kept: the link's statement is the same one run after run)."""
        if remote is not self.remote:
            self.remote = remote
            self.head = w.rebind(remote.name, b"")[5:]
        return self.head


def bind_values(data: bytes, start: int, end: int) -> tuple[int, int, int] | None:
    """Where the Bind at data[start:end] has its parameters (after the two names), its
    values, and where its values end; None when it does not add up."""
    first = data.find(b"\0", start + 5, end)
    second = data.find(b"\0", first + 1, end) if first >= 0 else -1
    if second < 0:
        return None
    params_at = second + 1
    try:
        (formats,) = _I16.unpack_from(data, params_at)
        p = params_at + 2 + 2 * formats
        (count,) = _I16.unpack_from(data, p)
        p += 2
        values_at = p
        for _ in range(count):
            (size,) = _I32.unpack_from(data, p)
            p += 4 + max(size, 0)
    except struct.error:
        return None
    if formats < 0 or count < 0 or p + 2 > end:
        return None
    return params_at, values_at, p


def run_key(data: bytes, bind: tuple[int, int], values: tuple[int, int, int], stop: int) -> bytes:
    """The run's bytes up to Sync without the Bind's length and values: runs with equal
    keys differ only in their parameter values."""
    return data[:bind[0] + 1] + data[bind[0] + 5:values[1]] + data[values[2]:stop]


def run_key_of_py(data: bytes, start: int, end: int, stop: int) -> tuple[bytes, int] | None:
    """(`run_key`, where the Bind's parameters begin) of the run ending at `stop` whose Bind
    is data[start:end]; None when the Bind does not add up. Its C twin
    (`gateway/relay/hotsplit.c`) is used when built, chosen as the split is."""
    values = bind_values(data, start, end)
    if values is None:
        return None
    return run_key(data, (start, end), values, stop), values[0]


run_key_of, _ = choose(HOT_SPLIT_ENV, "gateway.relay.hotsplit", "run_key", run_key_of_py,
                       "run key", "a faster express lane")


class HotLane(Lane):
    """The lane's side of this memory (`gateway.relay.express.ExpressLane` builds on it): `_hot`
    tries a chunk against it before the lane cuts the chunk into messages; `_query` and
    `_extended` call `_remember` and `_remember_run` once they started a statement."""

    def __init__(self, state: SessionState, links: SessionLinks, port: ClientSide) -> None:
        super().__init__(state, links, port)
        self._shapes: dict[bytes, HotQuery] = {}  # lifted shapes, by shape (ASCII)
        self._runs: dict[bytes, HotRun] = {}  # extended runs, by bytes without values

    def _hot(self, data: bytes) -> bool:
        """A chunk that is exactly one simple Query, or one run, of a kind the lane
        remembers (`gateway.relay.hot`): started without cutting it into messages."""
        tag, n = data[0], len(data)
        if n < 5:
            return False
        if tag == _Q:
            return n == 1 + _U32.unpack_from(data, 1)[0] and self._hot_query(data, n)
        bind = 1 + _U32.unpack_from(data, 1)[0] if tag == _P else 0 if tag == _B else -1
        if bind < 0 or bind + 5 > n or data[bind] != _B:
            return False
        end = bind + 1 + _U32.unpack_from(data, bind + 1)[0]
        return end <= n and self._hot_extended(data, bind, end)

    def _hot_query(self, data: bytes, n: int) -> bool:
        """A simple Query of a shape `_query` lifted before: as `_query`, with the route and
        the lifted text from `_remember` once everything they depend on is unchanged.
        This runs for every such statement, so the lane's steps (`_send_query`, `_start`)
        are written out here, without their calls. `data` is the Query, `n` bytes long."""
        s = self.state
        if not self._shapes or s.failed or data[n - 1] != 0:
            return False
        quick = quick_split_bytes(data[5:n - 1])
        if quick is None:
            return False
        sql, shape, numbers = quick
        hot = self._shapes.get(shape)
        if hot is None:
            return False
        values, route = s.settings.values, hot.route
        if (hot.search_path != values["search_path"] or hot.version != s.ctx.catalog.version
                or values["fedgate.parameterize"] != "on"
                or (not route.writes and values["fedgate.relay"] != "on")
                or hot.in_transaction != (s.in_block and self.links.active)):
            return False
        link = self._link(route)
        if link is None:
            return False
        if len(numbers) == 1:  # as `parameter_types`, on bytes
            one = numbers[0]
            types: tuple[int, ...] = ((INT4,) if len(one) < 10 and one.isdigit()
                                      else (type_of(one.decode()),))
        else:
            types = parameter_types([n.decode() for n in numbers])
        remote = link.statements.get((hot.lifted_sql, types))
        if remote is None:
            return False
        text = sql.decode()
        # `_send_query` and `_start`, written out.
        s.skipping = False
        began(self.activity, text)
        prefix, quiet = self.links.prefix(link)
        request = quick_bind(hot.bind_head(remote, len(numbers)), numbers, BOUND_TAIL)
        exchange = self.exchange = Exchange(
            self, link, 1 + quiet, quiet, partial(self._hot_done, route, text, data))
        port = link.port
        port.consumer = exchange.pump
        port.transport.write(prefix + request if prefix else request)
        if self.port.writing_paused:
            port.pause("client")
        return True

    def _remember(self, text: str, route: Route, lifted: Lifted) -> None:
        """Keep a lifted shape for `_hot_query`, with what its route was decided on."""
        quick = quick_split(text)
        if quick is None:
            return
        s = self.state
        if len(self._shapes) >= LIMIT:
            self._shapes.clear()
        self._shapes[quick[1].encode()] = HotQuery(route, lifted.sql, s.settings.values["search_path"],
                                       s.ctx.catalog.version, s.in_block and self.links.active)

    def _hot_done(self, route: Route, sql: str, raw: bytes, outcome: Outcome) -> None:
        """As `_query_done` without an error: `counted`, `_query_ready` and `_done`,
        written out."""
        if outcome.error is not None:  # positions and stale plans need the whole lifting
            self._query_done(route, outcome, lift(sql), raw)
            return
        s = self.state
        activity = self.activity
        started = activity.started
        assert started is not None  # `began` set it when the statement was sent
        s.ctx.metrics.statement_done("write" if route.writes else "select", None, "express",
                                     time.time() - started)
        in_block = s.in_block
        if route.writes and in_block:
            self.links.writer = route.source
        if not in_block and s.portals:
            s.close_portals(keep_unnamed=False)
        activity.state = "idle"  # `idled`
        activity.stream = None
        s.write(_READY[s.status])
        self._finished()

    def _hot_extended(self, data: bytes, start: int, end: int) -> bool:
        """A run `_extended` took before, differing only in its parameter values: as
        `_extended`, with its checks of the run's own bytes already made. Remembered runs
        end with their Sync, so a match is a chunk of exactly one run."""
        s = self.state
        if not self._runs or s.failed or s.skipping:
            return False
        keyed = run_key_of(data, start, end, len(data))
        if keyed is None:
            return False
        key, params_at = keyed
        hot = self._runs.get(key)
        if hot is None:
            return False
        prepared = hot.prepared
        if hot.parsed is not None:  # the Parse must find the statement `_statement` found
            if s.relayed.get(self.links.relay_key(*hot.parsed)) is not prepared:
                return False
        elif s.statements.get(hot.statement) is not prepared:
            return False
        if hot.limited and s.in_block:
            return False
        target = self._run_target(prepared)
        if target is None:
            return False
        link, remote = target
        if hot.limited:  # asyncpg's fetchrow/fetchval: the general road (`_send_run`)
            self._send_run(link, remote, prepared, "" if hot.parsed is not None else None,
                           hot.formats, hot.answered, data[params_at:end], hot.tail, True)
            return True
        # `_send_run` and `_start`, written out (this runs for every such statement).
        if hot.parsed is not None:
            s.statements[""] = prepared
        # Outside a block Sync closes the unnamed portal with the run, and nothing reads
        # it in between (what the client sends meanwhile is held): only a block keeps one.
        # (`_run_target` found no streaming portal there, so dropping the old one at the
        # end, as `_hot_run_done` does, is what replacing it here would do.)
        portal: Portal | None = None
        if s.in_block:
            portal = s.portals[""] = Portal(prepared, [], hot.formats)
        s.write(hot.answered)
        began(self.activity, prepared.sql)
        prefix, quiet = self.links.prefix(link)
        bind = hot.bind_head(remote)
        request = b"".join((prefix, b"B", _I32.pack(len(bind) + end - params_at + 4), bind,
                            data[params_at:end], hot.tail))
        exchange = self.exchange = Exchange(
            self, link, 1 + quiet, quiet, partial(self._hot_run_done, hot, portal))
        port = link.port
        port.consumer = exchange.pump
        port.transport.write(request)
        if self.port.writing_paused:
            port.pause("client")
        return True

    def _hot_run_done(self, hot: HotRun, portal: Portal | None, outcome: Outcome) -> None:
        """As `_extended_done` without an error: `counted`, Sync and `_done`, written out
        (`portal`: the block's unnamed portal; None outside a block)."""
        route = hot.prepared.route
        if outcome.error is not None:
            self._extended_done(route, portal if portal is not None else
                                Portal(hot.prepared, [], hot.formats), outcome)
            return
        s = self.state
        activity = self.activity
        started = activity.started
        assert started is not None  # `began` set it when the statement was sent
        s.ctx.metrics.statement_done("write" if route.writes else "select", None, "express",
                                     time.time() - started)
        in_block = s.in_block
        if route.writes and in_block:
            self.links.writer = route.source
        if portal is not None:
            portal.done = True
        s.skipping = False  # Sync, as Session.on_sync
        activity.state = "idle"  # `idled`
        activity.stream = None
        if not in_block and s.portals:
            s.close_portals(keep_unnamed=False)
        s.write(_READY[s.status])
        self._finished()

    def _finished(self) -> None:
        """`_done`: the statement log, then send the answer; with nothing held, `_continue`
        comes down to `flush`."""
        s = self.state
        ended(self.activity, s)
        self.exchange = None
        if self.held or self.closed:
            self._continue()
            return
        data = s.take_output()
        transport = self.port.transport
        if data and not transport.is_closing():
            transport.write(data)

    def _remember_run(self, data: bytes, found: list[tuple[int, int, int]],
                      prepared: Prepared, parse: m.Parse | None, formats: tuple[int, ...],
                      answered: bytes, tail: bytes) -> None:
        """Keep this run for `_hot_extended` (`found`: its messages from the Bind on)."""
        bind = found[0]
        keyed = run_key_of(data, bind[1], bind[2], found[-1][2])
        if keyed is None:
            return
        key, params_at = keyed
        parsed = (parse.query, parse.param_types) if parse is not None else None
        if len(self._runs) >= LIMIT:
            self._runs.clear()
        self._runs[key] = HotRun(
            prepared, parse.name if parse is not None else self._bind_name(data, bind, params_at),
            parsed, formats, answered, tail)

    @staticmethod
    def _bind_name(data: bytes, bind: tuple[int, int, int], params_at: int) -> str:
        return data[bind[1] + 5:params_at - 1].split(b"\0")[1].decode()
