"""How a relayed statement is sent and answered: the numbers of a lifted text bound to its
prepared shape, the description its source gave, and source errors pointed back into the
client's text (the session, `gateway.relay.links`, and the express lane share them)."""

from __future__ import annotations

from dataclasses import replace

from connectors.postgres.link import RemoteStatement
from gateway.relay.literals import Lifted
from gateway.relay.routing import Router
from gateway.state.route import Route
from gateway.state.portals import Prepared
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.protocol import client as w
from pgwire.protocol import encoder
from pgwire.types.rows import row_description


def lifted_execute(statement: str, lifted: Lifted) -> bytes:
    """Bind the numbers to the prepared shape and run it, answering as a simple Query
    would (the RowDescription comes from Describe; BindComplete/NoData are not passed on)."""
    return (w.bind("", statement, (), list(lifted.values), ()) + w.describe("P", "")
            + w.execute("", 0) + w.SYNC)


def stale_plan(error: PgError | None) -> bool:
    return (error is not None and error.sqlstate == FEATURE_NOT_SUPPORTED
            and "cached plan must not change result type" in error.message)


def result_type(statement: RemoteStatement) -> list[tuple[bytes, int, int]] | None:
    """What PostgreSQL compares before it lets a prepared statement run again."""
    if statement.fields is None:
        return None
    return [(f.name, f.type_oid, f.type_modifier) for f in statement.fields]


def relayed_description(prepared: Prepared, formats: tuple[int, ...]) -> bytes:
    """The RowDescription (or NoData) of a relayed statement, as its source described it
    (a SQLite or MySQL write's RETURNING: as the gateway typed it, `Prepared.row_schema`)."""
    if prepared.remote is None and prepared.row_schema is not None:
        return row_description(prepared.row_schema, formats)
    found = prepared.remote.description(tuple(formats)) if prepared.remote is not None else None
    return encoder.no_data() if found is None else found


def unlifted(error: PgError | None, lifted: Lifted) -> PgError | None:
    """A source error about the lifted text, pointing into the client's text."""
    if error is not None and error.position is not None:
        error.position = lifted.position(error.position)
    return error


def spelled_out(router: Router, route: Route, sql: str) -> Route:
    """`route` with `sql` respelled for its source when its names need it
    (`Route.respelled`), as the extended protocol and unlifted texts send it."""
    if not route.respelled or route.sql is not None:
        return route
    respelling = router.respell(sql, route.source)
    if respelling is None:  # a text of a shape that was respelled: it is, too
        raise PgError(FEATURE_NOT_SUPPORTED, "schema-qualified names are not supported here; "
                      "name the table without its source (SET search_path)")
    return replace(route, sql=respelling.sql)


def unspelled(router: Router, route: Route, sql: str, error: PgError | None) -> PgError | None:
    """A source error about a respelled text (`spelled_out`), pointing into `sql`."""
    if error is not None and error.position is not None and route.respelled:
        respelling = router.respell(sql, route.source)
        if respelling is not None:
            error.position = respelling.position(error.position)
    return error
