"""What the express lane keeps of a statement it relayed, for its repeats.

`gateway.relay.express.memory` keeps, per session, a simple Query's lifted shape
(`KeptQuery`, by the shape) and an extended-protocol run (`KeptRun`, by `run_key_of`: the
run's bytes without the Bind's length and values), with what its route was decided on
and the head of the Bind it sends the source; the repeats (gateway.relay.express.repeats)
read the same objects. The Bind of a repeat's values is built here (`bound_request`) or,
from its bytes, by `gateway.relay.express.statement_bytes` (`quick_bind`), which also
gives a run's key (`run_key_of`).
"""

from __future__ import annotations

import struct

from pgwire.protocol import client as w
from connectors.postgres.link import RemoteStatement
from gateway.relay.literals import INT4, type_of
from gateway.state.portals import Prepared
from gateway.state.route import Route

_I16, _I32 = struct.Struct("!h"), struct.Struct("!i")
_NO_FORMATS = _I16.pack(0)
# Describe the unnamed portal, run it, Sync: as `gateway.relay.links.lifted_execute`.
BOUND_TAIL = w.describe("P", "") + w.execute("", 0) + w.SYNC
_UNLIMITED = w.execute("", 0) + w.SYNC


class KeptQuery:
    """A lifted shape as the lane first relayed it, with what its route depended on; and
    the head of the Bind for the source's statement it was last sent to (`bind_head`)."""

    __slots__ = ("route", "lifted_sql", "search_path", "version", "in_transaction", "remote",
                 "head", "int4_key")

    def __init__(self, route: Route, lifted_sql: str, search_path: str, version: int,
                 in_transaction: bool, count: int) -> None:
        self.route = route
        self.lifted_sql = lifted_sql
        self.search_path = search_path
        self.version = version
        self.in_transaction = in_transaction
        self.remote: RemoteStatement | None = None
        self.head = b""
        # The link's statement for `count` numbers that are all int4 (pgbench's), as
        # the repeats look it up.
        self.int4_key = (lifted_sql, (INT4,) * count)

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

class KeptRun:
    """A `[Parse] Bind [Describe] Execute Sync` run the lane relayed, kept by its bytes
    without the Bind's values (`run_key_of`): what the session answers before the source
    does, and how to find again the statement it ran."""

    __slots__ = ("prepared", "statement", "parsed", "formats", "answered", "tail", "limited",
                 "remote", "head", "remote_key")

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
        # The link's statement (`Lane._run_target`'s key).
        self.remote_key = (prepared.route.sql or prepared.sql, prepared.declared_oids)

    def bind_head(self, remote: RemoteStatement) -> bytes:
        """The Bind's bytes before the client's parameters, naming `remote` (as
        `client.rebind`; kept: the link's statement is the same one run after run)."""
        if remote is not self.remote:
            self.remote = remote
            self.head = w.rebind(remote.name, b"")[5:]
        return self.head
