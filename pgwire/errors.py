"""Errors that reach the client as an ErrorResponse, each with a real SQLSTATE.

Every failure the gateway reports is a `PgError`. Code below the gateway (planner,
connectors) raises `PgError` too, so the server never has to guess a SQLSTATE from a
message; `from_exception` maps the few foreign exceptions we expect (DuckDB's) and
turns anything else into an internal error that still leaves the session usable.
"""

from __future__ import annotations

import socket

# The SQLSTATE codes and PgError live in pgwire.sqlstate; every layer imports them from here.
from pgwire.sqlstate import (  # noqa: F401 (re-exported)
    SUCCESSFUL_COMPLETION,
    CONNECTION_EXCEPTION,
    SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION,
    CONNECTION_FAILURE,
    PROTOCOL_VIOLATION,
    FEATURE_NOT_SUPPORTED,
    INVALID_PARAMETER_VALUE,
    DIVISION_BY_ZERO,
    INVALID_ARGUMENT_FOR_LOGARITHM,
    CARDINALITY_VIOLATION,
    INVALID_ARGUMENT_FOR_POWER,
    DATETIME_FIELD_OVERFLOW,
    INVALID_DATETIME_FORMAT,
    INVALID_PRECEDING_OR_FOLLOWING_SIZE,
    NUMERIC_VALUE_OUT_OF_RANGE,
    INVALID_TEXT_REPRESENTATION,
    INVALID_BINARY_REPRESENTATION,
    DATA_EXCEPTION,
    SUBSTRING_ERROR,
    ARRAY_SUBSCRIPT_ERROR,
    INVALID_CURSOR_NAME,
    INVALID_SQL_STATEMENT_NAME,
    ACTIVE_SQL_TRANSACTION,
    NO_ACTIVE_SQL_TRANSACTION,
    IN_FAILED_SQL_TRANSACTION,
    READ_ONLY_SQL_TRANSACTION,
    INVALID_AUTHORIZATION,
    INVALID_PASSWORD,
    INSUFFICIENT_PRIVILEGE,
    INVALID_CATALOG_NAME,
    SYNTAX_ERROR,
    INVALID_COLUMN_REFERENCE,
    UNDEFINED_TABLE,
    UNDEFINED_COLUMN,
    UNDEFINED_FUNCTION,
    UNDEFINED_OBJECT,
    DUPLICATE_PREPARED_STATEMENT,
    DUPLICATE_CURSOR,
    AMBIGUOUS_COLUMN,
    DATATYPE_MISMATCH,
    GROUPING_ERROR,
    WINDOWING_ERROR,
    INDETERMINATE_DATATYPE,
    UNDEFINED_PARAMETER,
    CANT_CHANGE_RUNTIME_PARAM,
    QUERY_CANCELED,
    DISK_FULL,
    OUT_OF_MEMORY,
    ADMIN_SHUTDOWN,
    CRASH_SHUTDOWN,
    CANNOT_CONNECT_NOW,
    TOO_MANY_CONNECTIONS,
    PROGRAM_LIMIT_EXCEEDED,
    INTERNAL_ERROR,
    PgError,
    ProtocolError,
)
from pgwire.engine_words import translate


def from_exception(exc: BaseException) -> PgError:
    """Turn any exception raised while serving a statement into a `PgError`."""
    if isinstance(exc, PgError):
        return exc
    return translate(exc)


# The server behind a source went away (as opposed to refusing one statement).
_SERVER_GONE = (ADMIN_SHUTDOWN, CRASH_SHUTDOWN, CANNOT_CONNECT_NOW)


def source_unavailable(source: str, reason: str, *, lost: bool = False,
                       detail: str | None = None) -> PgError:
    """The one shape of "this statement needs a source that cannot be reached": 08001 when
    no connection could be made (refused, unknown host, the source's password or role
    rejected), 08006 when a connection was lost mid-statement. The hint names the
    configuration section to check, because the client cannot fix a source; the
    operator can."""
    return PgError(CONNECTION_FAILURE if lost else SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION,
                   f'source "{source}" is unavailable: {reason}', detail=detail,
                   hint=f"Check the server named in [sources.{source}] of the gateway's "
                        "configuration file, and that it accepts the gateway's connections.")


def source_failure(source: str, exc: BaseException) -> BaseException:
    """`exc`, raised while talking to the source named `source`, as the client should read it.

    A statement error (a syntax error, division by zero, a cancel) passes unchanged:
    PostgreSQL's own words are what clients match on. A lost connection or a server
    shutting down is about the source, not the statement, and a gateway has several
    sources, so it becomes `source_unavailable`: 08001 when nothing answered (a refused
    connection, or a source error already classed 08001), else 08006.
    """
    if isinstance(exc, PgError):
        code = exc.sqlstate
        gone = code.startswith("08") or code in _SERVER_GONE
        if not gone or exc.message.startswith(f'source "{source}" is unavailable'):
            return exc
        return source_unavailable(source, exc.message, detail=exc.detail,
                                  lost=code != SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION)
    if isinstance(exc, OSError):  # ConnectionError, TimeoutError and their kin
        return source_unavailable(source, str(exc) or type(exc).__name__,
                                  lost=not isinstance(exc, (ConnectionRefusedError, socket.gaierror)))
    return exc
