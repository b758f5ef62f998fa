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
bytes in one pass (`gateway.relay.express.statement_bytes`: compiled when built).

Extended-protocol runs `[Parse] Bind [Describe] Execute Sync` are kept by their bytes
without the Bind's length and parameter values (`run_key_of`): two runs with one key differ
in their values only, so every check `ExpressLane._extended` made of the first holds for
the second, and the messages the session answers before the source does are the same.

What is kept of each (`KeptQuery`, `KeptRun`) is `gateway.relay.express.kept`.

A repeat's steps (the lane's `_send_query`/`_send_run`, `_start`, and the finish of the
statement) are written out in `_hot_query`, `_hot_extended` and their `..._done`: each is
a few function calls fewer per statement; a repeat that meets an error, or a run with a
row limit, takes the general steps.

The repeats (gateway.relay.express.repeats, `Repeats`: compiled by Cython when built) go
further: the client's port offers them each chunk first, and a repeat is started, answered,
counted and finished in one call each way, with this module's checks and bookkeeping. They
act only while the lane is armed (`_arm`): after a statement of the lane ended with the
session idle, and until the session's task, its port or the lane's Python act again
(`Lane.disarm`), so what only those change (settings, the transaction, prepared statements,
the client's socket) is as `_arm` saw it; what may change in between (the catalog, the
links, a shutdown) they read again each time, as `_hot_query` does. They also run a block's
BEGIN, its statements and extended runs, and its COMMIT or ROLLBACK on the one source it
reached; a run with a row limit (asyncpg's fetchrow) outside a block only, where Sync ends
its portal on both sides whether the source said PortalSuspended or not. What their answer's walk
does not read (an error, a new row description, the source gone) or a cancel hands the
statement to this module's exchange, where it goes on (`_adopt`); anything else they decline
goes to the lane's `offer`. Without the build, or with FEDGATE_EXPRESS=python, the same
repeats run interpreted.
"""

from __future__ import annotations

import struct
import time
from functools import partial

from pgwire.compiled import build_of
from pgwire.protocol import client as w
from pgwire.protocol.client import PASS_DISCARD, PASS_QUIET, PASS_SUSPENDED, answer_pass
from connectors.postgres.link import Outcome, PgLink
from connectors.postgres.source_settings import mirror_key
from gateway.relay.express.exchange import FLUSH_BYTES, Exchange
from gateway.relay.literals import INT4, Lifted, type_of, lift
from gateway.relay.express import repeats as repeats_build
from gateway.relay.express.text_split import quick_split
from gateway.relay.express.kept import (BOUND_TAIL, KeptQuery, KeptRun, kept_query, kept_run,
                                        parameter_types)
from gateway.relay.express.repeats import Repeats
from gateway.relay.express.statement_bytes import quick_bind, quick_split_bytes, run_key_of
from gateway.state.activity import ended
from gateway.state.portals import Portal, Prepared
from pgwire.protocol import encoder
from pgwire.protocol import messages as m
from gateway.relay.express.lane import ClientSide, Lane
from gateway.relay.links import SessionLinks
from gateway.state.route import Route
from gateway.state.session import SessionState

_READY = {b"I": encoder.ready_for_query(b"I"), b"T": encoder.ready_for_query(b"T"),
          b"E": encoder.ready_for_query(b"E")}
_I32, _U32 = struct.Struct("!i"), struct.Struct("!I")
_Q, _P, _B = (ord(c) for c in "QPB")
LIMIT = 256  # shapes, and runs, kept per session


# Which build of the repeats (gateway/relay/express/repeats.py) runs, for the start-up log:
# compiled by Cython, or its source interpreted.
REPEATS = build_of(repeats_build)


class RememberingLane(Lane):
    """The lane's side of this memory (`gateway.relay.express.taking.ExpressLane` builds on
    it): `_hot` tries a chunk against it before the lane cuts the chunk into messages; `_query` and
    `_extended` call `_remember` and `_remember_run` once they started a statement."""

    def __init__(self, state: SessionState, links: SessionLinks, port: ClientSide) -> None:
        super().__init__(state, links, port)
        self._shapes: dict[bytes, KeptQuery] = {}  # lifted shapes, by shape (ASCII)
        self._runs: dict[bytes, KeptRun] = {}  # extended runs, by bytes without values
        # The client's port calls `offer`: the repeats first, which hand what they do not
        # take to this class's `offer`. They are handed everything they work with here.
        ctx = state.ctx
        repeats = self.repeats = Repeats(
            self, state, links, port, self.activity, self._shapes, self._runs, self.held,
            state.unsent(), state.portals, state.statements, state.relayed, self.offer,
            self._adopt, self._continue, quick_split_bytes, quick_bind, run_key_of, answer_pass,
            ended, BOUND_TAIL, PASS_QUIET, PASS_DISCARD, PASS_SUSPENDED,
            FLUSH_BYTES, ctx.config.server.log_min_duration_ms, ctx.metrics)
        self.offer = repeats  # type: ignore[method-assign]

    def repeat_catalog(self) -> tuple[object, int] | None:
        """For the repeats, before each statement, what may change while they are armed:
        None when the session takes no statement now (closed, the server shutting down,
        the catalog stale), else the catalog's version and the schema epoch."""
        s = self.state
        ctx = s.ctx
        if s.closed or self.port.draining or ctx.catalog_stale:
            return None
        return ctx.catalog.version, ctx.schema_epoch

    def refuses_writes(self) -> bool:
        """For the repeats, after their BEGIN or a block's end: a write now is refused."""
        return self.state.writes_refused

    def _arm(self) -> None:
        """The session is idle after a statement of the lane: what it runs under, for the
        repeats, which take statements until the session, its port or the lane act
        again (`disarm`). Not armed: a block with savepoints, a failed one, an extended
        run's error being skipped, shapes not lifted."""
        repeats = self.repeats
        if repeats is None or self.exchange is not None or self.held or not self._session_idle():
            return
        s = self.state
        values = s.settings.values
        if s.failed or s.skipping or s.savepoints or values["fedgate.parameterize"] != "on" \
                or s.block_settings.changed:  # its end restores settings the arming reads
            return
        in_block = s.in_block
        begin_sql = self.links.begin_sql if in_block else None
        repeats.arm(in_block, s.writes_refused, values["search_path"], values["fedgate.relay"],
                    s.hidden, mirror_key(values, s.settings.forwarded), _READY[s.status],
                    w.query(begin_sql) if begin_sql else None)

    def _adopt(self, kind: int, link: PgLink, ready: int, quiet: int, seen: int,
               hot: KeptQuery | KeptRun | str, text: str, raw: bytes, passed: bytes) -> Exchange:
        """The repeats meet what their answer's walk does not read (an error, a new
        description, the source gone) or a cancel: the statement goes on as the Python
        road's exchange, from where they were. `passed` is what the client was to get.
        `kind`: 0 a simple Query (`hot` its shape), 1 an extended run (`hot` the run),
        2 a block's COMMIT or ROLLBACK (`hot` which: `_control`'s kind)."""
        if passed:
            self.state.write(passed)
        limited = False
        if kind == 0:
            assert isinstance(hot, KeptQuery)
            done = partial(self._hot_done, hot.route, text, raw)
        elif kind == 1:
            assert isinstance(hot, KeptRun)
            # in a block, the unnamed portal the repeats made for the run (nothing else
            # replaces it while the run is in flight); outside one, none (Sync closes it)
            s = self.state
            done = partial(self._hot_run_done, hot, s.portals.get("") if s.in_block else None)
            limited = hot.limited
        else:
            assert isinstance(hot, str)
            done = partial(self._control_ended, hot)
        exchange = self.exchange = Exchange(self, link, ready, quiet, done, discard=kind == 2,
                                            suspended=limited)
        exchange.seen = seen
        link.port.attach(exchange.pump)
        return exchange

    def _hot(self, data: bytes) -> bool:
        """A chunk that is exactly one simple Query, or one run, of a kind the lane
        remembers (`gateway.relay.express.memory`): started without cutting it into messages."""
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
        s.stop_skipping()
        self.activity.began(text)
        prefix, quiet = self.links.prefix(link)
        request = quick_bind(hot.bind_head(remote.name, len(numbers)), numbers, BOUND_TAIL)
        exchange = self.exchange = Exchange(
            self, link, 1 + quiet, quiet, partial(self._hot_done, route, text, data))
        port = link.port
        port.attach(exchange.pump)
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
        self._shapes[quick[1].encode()] = kept_query(
            route, lifted.sql, s.settings.values["search_path"], s.ctx.catalog.version,
            s.in_block and self.links.active, len(quick[2]))

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
        self.links.wrote(route)
        if not s.in_block and s.portals:
            s.close_portals(keep_unnamed=False)
        activity.went_idle()
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
        # Outside a block Sync closes the unnamed portal with the run, and nothing reads
        # it in between (what the client sends meanwhile is held): only a block keeps one.
        # (`_run_target` found no streaming portal there, so dropping the old one at the
        # end, as `_hot_run_done` does, is what replacing it here would do.)
        portal = Portal(prepared, [], hot.formats) if s.in_block else None
        s.run_bound(prepared, "" if hot.parsed is not None else None, portal)
        s.write(hot.answered)
        self.activity.began(prepared.sql)
        prefix, quiet = self.links.prefix(link)
        bind = hot.bind_head(remote.name)
        request = b"".join((prefix, b"B", _I32.pack(len(bind) + end - params_at + 4), bind,
                            data[params_at:end], hot.tail))
        exchange = self.exchange = Exchange(
            self, link, 1 + quiet, quiet, partial(self._hot_run_done, hot, portal))
        port = link.port
        port.attach(exchange.pump)
        port.transport.write(request)
        if self.port.writing_paused:
            port.pause("client")
        return True

    def _hot_run_done(self, hot: KeptRun, portal: Portal | None, outcome: Outcome) -> None:
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
        self.links.wrote(route)
        if portal is not None:
            portal.ran_to_end()
        s.stop_skipping()  # Sync, as Session.on_sync
        activity.went_idle()
        if not s.in_block and s.portals:
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
        self._settle()

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
        self._runs[key] = kept_run(
            prepared, parse.name if parse is not None else self._bind_name(data, bind, params_at),
            parsed, formats, answered, tail)

    @staticmethod
    def _bind_name(data: bytes, bind: tuple[int, int, int], params_at: int) -> str:
        return data[bind[1] + 5:params_at - 1].split(b"\0")[1].decode()
