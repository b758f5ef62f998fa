"""Where a relayed statement goes: the `Route` that `gateway.relay.routing` decides.

It lives here, below the relay, because a prepared statement (`gateway.state.portals`)
keeps the route it was relayed on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

# Statements that change what the gateway's catalog describes (tables, columns, types,
# comments): once one has run, the catalog is read again before the next statement is
# planned or taken by the express lane. TRUNCATE and REFRESH MATERIALIZED VIEW change rows
# only, as INSERT does; counting them would leave pgbench's sessions, which only relay
# statements and so never read the catalog again, off the express lane after its
# pre-run `TRUNCATE pgbench_history`.
DDL_VERBS = frozenset({"create", "drop", "alter", "comment"})


@dataclass(frozen=True)
class Route:
    source: str          # a PostgreSQL source
    verb: str            # the statement's first word, lower case
    writes: bool
    sql: str | None = None   # what to send instead of the client's text (names rewritten)
    # Names qualified with the source's name: each text of the shape is respelled for the
    # source (gateway.relay.respell) before it is sent; `sql` holds one text's respelling.
    respelled: bool = False
    copy_in: bool = False    # COPY ... FROM STDIN
    kind: str = "postgres"   # other kinds take writes only (connectors.writes)
    tree: exp.Expression | None = field(default=None, compare=False)  # parsed, for them
    # The server-administration functions the statement calls (planner.access): relayed
    # only for a user whose statements run under a role on that source (source_roles).
    admin_calls: tuple[str, ...] = ()
    # It leaves state on the source's session (a temporary table, a session advisory lock):
    # the session keeps that link (gateway.relay.links.SessionLinks.pin).
    pins: bool = False
    # INSERT ... <query> or CREATE TABLE ... AS <query> whose query reads other sources
    # than the target (or the target is not PostgreSQL and cannot run it): the query
    # runs on the engine and its rows go into `source` through its bulk path
    # (gateway.session.moves).
    move: bool = False

    @property
    def ddl(self) -> bool:
        return self.verb in DDL_VERBS
