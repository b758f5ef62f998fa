"""What the express lane keeps of a statement it relayed, for its repeats.

`gateway.relay.express.memory` keeps, per session, a simple Query's lifted shape
(`KeptQuery`, by the shape) and an extended-protocol run (`KeptRun`, by `run_key_of`: the
run's bytes without the Bind's length and values), with what its route was decided on
and the head of the Bind it sends the source; the repeats (gateway.relay.express.repeats)
read the same objects, which are theirs: typed fields where compiled. This module makes
them (`kept_query`, `kept_run`) from what the session has. The Bind of a repeat's values
is built here (`bound_request`) or, from its bytes, by `gateway.relay.express.statement_bytes`
(`quick_bind`), which also gives a run's key (`run_key_of`).
"""

from __future__ import annotations

import struct

from pgwire.protocol import client as w
from connectors.postgres.link import RemoteStatement
from gateway.relay.literals import INT4, type_of
from gateway.relay.express.repeats import KeptQuery, KeptRun
from gateway.state.portals import Prepared
from gateway.state.route import Route

_I16, _I32 = struct.Struct("!h"), struct.Struct("!i")
_NO_FORMATS = _I16.pack(0)
# Describe the unnamed portal, run it, Sync: as `gateway.relay.links.lifted_execute`.
BOUND_TAIL = w.describe("P", "") + w.execute("", 0) + w.SYNC
_UNLIMITED = w.execute("", 0) + w.SYNC

__all__ = ["BOUND_TAIL", "KeptQuery", "KeptRun", "bound_request", "kept_query", "kept_run",
           "parameter_types"]


def kept_query(route: Route, lifted_sql: str, search_path: str, version: object,
               in_transaction: bool, count: int) -> KeptQuery:
    """A lifted shape of `count` numbers, as the lane first relayed it on `route`."""
    # the link's statement for `count` numbers that are all int4 (pgbench's)
    return KeptQuery(route, bool(route.writes), route.source, lifted_sql, search_path, version,
                     in_transaction, (lifted_sql, (INT4,) * count))


def kept_run(prepared: Prepared, statement: str, parsed: tuple[str, tuple[int, ...]] | None,
             formats: tuple[int, ...], answered: bytes, tail: bytes) -> KeptRun:
    """A run of `prepared` (a relayed statement: its route is set) as the lane relayed it:
    the Bind named `statement`, its unnamed Parse (query, parameter types) was `parsed`,
    with result `formats`; `answered` what the session answered before the source did,
    `tail` its Execute and Sync for the source."""
    route = prepared.route
    assert route is not None  # the lane keeps relayed runs only
    return KeptRun(prepared, route, bool(route.writes), route.source, prepared.sql, statement,
                   parsed, formats, answered, tail, tail != _UNLIMITED,
                   (route.sql or prepared.sql, prepared.declared_oids))


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
