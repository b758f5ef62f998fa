"""How a PostgreSQL source's failures reach the client: asyncpg's errors as PgErrors.

A statement's error keeps the remote SQLSTATE (the client reads PostgreSQL's own); a failure
to connect does not (08001 with the server's words: a client told 28P01 would think its own
password was wrong).
"""

from __future__ import annotations

import asyncpg

from pgwire.errors import (CONNECTION_FAILURE, INTERNAL_ERROR,
                           SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, PgError)


def pg_error(exc: BaseException) -> PgError:
    """An asyncpg error as the PgError the client sees (the remote SQLSTATE kept)."""
    if isinstance(exc, PgError):
        return exc
    if isinstance(exc, asyncpg.PostgresError):
        return PgError(exc.sqlstate or INTERNAL_ERROR, exc.args[0] if exc.args else str(exc),
                       detail=getattr(exc, "detail", None), hint=getattr(exc, "hint", None))
    if isinstance(exc, (OSError, asyncpg.InterfaceError)):
        return PgError(CONNECTION_FAILURE, str(exc) or type(exc).__name__)
    return PgError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")


def connect_error(exc: BaseException) -> PgError:
    """A failure to open a connection, whatever refused it (the network, the server's
    authentication, an unknown role or database): 08001, with the server's own words as
    the reason (gateway sessions then say which source, `pgwire.errors.source_failure`).
    The remote SQLSTATE is not passed on: a client told 28P01 would think its own
    password was wrong."""
    if isinstance(exc, asyncpg.PostgresError):
        reason = exc.args[0] if exc.args else str(exc)
    else:
        reason = str(exc) or type(exc).__name__
    return PgError(SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, reason)
