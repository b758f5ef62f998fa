"""What the express lane (`gateway.relay.express`, which says what the lane is for) takes:
`ExpressLane` decides what a chunk of client bytes starts, if anything: a repeat its
memory knows, else a simple Query or an extended-protocol run of a relayed statement, or
the bare forms of BEGIN, COMMIT and ROLLBACK. The lane's machinery
(entry points, exchanges, finishing a statement) is `gateway.relay.express.lane.Lane`;
what it remembers for repeats is `gateway.relay.express.memory.RememberingLane`. The connection
builds it with the session's state, links and client port.
"""

from __future__ import annotations

from pgwire.protocol import client as w
from connectors.postgres.link import Outcome
from pgwire.errors import PgError
from gateway.relay.express.exchange import cut
from gateway.relay.express.memory import RememberingLane
from gateway.relay.relayed import lifted_execute, relayed_description
from gateway.state.activity import note_query
from gateway.state.portals import Prepared
from pgwire.protocol import encoder
from pgwire.protocol import messages as m
from pgwire.protocol import peek
from gateway.state.statements import split_statements

_Q, _P, _B, _D, _E, _S = (ord(c) for c in "QPBDES")
_EXTENDED = frozenset((_P, _B, _D, _E))
# Transaction control the lane runs itself (bare forms; others take the task's road).
_CONTROL = {"BEGIN": "begin", "START TRANSACTION": "begin", "COMMIT": "commit", "END": "commit",
            "ROLLBACK": "rollback"}


class ExpressLane(RememberingLane):
    """The lane as the connection uses it: what a chunk of client bytes starts, if
    anything (`_run`)."""

    def _run(self, data: bytes) -> bool:
        self.unlinked = False
        if self._hot(data):
            self.ran += 1
            return True
        if self.unlinked:  # a remembered statement that needs a link the session lacks:
            return False   # the general road would route it again to find the same
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
        self.ran += 1
        if used < len(data):
            self.held.insert(0, data[used:])
        return True


    # --- a simple Query ------------------------------------------------------------------

    def _query(self, data: bytes, found: tuple[int, int, int]) -> bool:
        s = self.state
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
            route = self.links.route(sql)
        except PgError:
            return False  # the task reports it
        link = self._link(route) if route is not None else None
        if route is None or link is None:
            return False
        lifted = self.links.lifted(route, sql)
        if lifted is not None:
            remote = link.statements.get((lifted.sql, lifted.oids))
            if remote is None:
                return False  # the task prepares the shape on the link
            request = lifted_execute(remote.name, lifted)
        else:
            if route.respelled:
                return False  # respelled whole: the task points a source error into the client's text
            request = w.query(route.sql or sql)
        raw = data[found[1]:found[2]]
        self._send_query(link, request, sql, lambda outcome: self._query_done(route, outcome, lifted, raw))
        if lifted is not None:
            self._remember(text, route, lifted)
        return True

    def _control(self, kind: str, sql: str) -> bool:
        """BEGIN, COMMIT/END, ROLLBACK: as `UtilityMixin._transaction`, for a block that
        touched at most one PostgreSQL link and holds no other connection."""
        s = self.state
        if kind == "begin":
            if s.in_block:
                return False  # the warning is the task's
            s.stop_skipping()
            note_query(s, sql)
            self.links.block_began(sql)
            s.begin_block()
            s.write(encoder.command_complete("BEGIN"))
            s.query_done()
            return True
        links = self.links
        if not s.in_block or links.writers or links.ddl:
            return False
        touched = links.in_transaction()
        if len(touched) > 1 or (touched and not touched[0].idle):
            return False
        s.stop_skipping()
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
        s = self.state
        self.links.block_ended()
        s.end_block(kind != "rollback" and outcome.error is None)
        if outcome.error is not None:
            if self._fatal(outcome.error):
                return True
            s.report(outcome.error)
        else:
            s.write(encoder.command_complete("ROLLBACK" if kind == "rollback" else "COMMIT"))
        s.query_done()
        return False


    # --- an extended-protocol run ------------------------------------------------------------

    def _extended(self, data: bytes, found: list[tuple[int, int, int]]) -> bool:
        """[Parse] Bind [Describe] Execute Sync, checked whole before anything is done."""
        s = self.state
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
        # What the session answers itself, before the source: as Session.on_parse /
        # on_bind / on_describe.
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


    def _statement(self, parse: m.Parse | None, name: str) -> Prepared | None:
        """The relayed statement a Bind names, with the Parse before it (which must repeat
        one the session relayed: `Session.on_parse`'s cache)."""
        s = self.state
        if parse is None:
            return s.statements.get(name)
        if parse.name != name or (parse.name and parse.name in s.statements):
            return None
        return s.relayed.get(self.links.relay_key(parse.query, parse.param_types))
