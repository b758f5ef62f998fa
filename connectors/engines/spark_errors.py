"""Spark's failures as the client reads them: SQLSTATEs, and no source's password."""

from __future__ import annotations

from collections.abc import Collection

from pgwire.errors import CONNECTION_FAILURE, QUERY_CANCELED, PgError, from_exception


def lost_during(url: str, reason: str) -> PgError:
    """A statement whose cluster went away while it ran (08006; 08001 is for a cluster
    that could not be reached at the statement's start)."""
    return PgError(CONNECTION_FAILURE, f"Spark cluster at {url} was lost during the statement: "
                                       f"{reason}; the next Spark statement starts a new session")


# Error texts of a session that lost its cluster: a SparkContext stopped under it, the
# Py4J bridge gone, a Connect server not answering.
_LOST = ("SparkContext was shut down", "stopped SparkContext", "SparkContext has been shutdown",
         "Answer from Java side is empty", "StatusCode.UNAVAILABLE", "Connection refused",
         "failed to connect to all addresses", "Socket closed")


def lost_cluster(exc: BaseException) -> bool:
    text = str(exc)
    return type(exc).__name__ in ("Py4JNetworkError", "RetriesExceeded") or any(m in text for m in _LOST)


def scrub(text: str, secrets: Collection[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "********")
    return text


def source_error(exc: BaseException) -> PgError | None:
    """The SQL error a JDBC source raised under a Spark failure (a PostgreSQL read denied
    by the session's role: 42501), with the source's SQLSTATE and words; None when there
    is none. It asks the Java exception's causes, so it runs on the call's own thread."""
    throwable = getattr(exc, "java_exception", None)  # Py4JJavaError (not Spark Connect)
    for _ in range(16):
        if throwable is None:
            return None
        if throwable.getClass().getName() in SQL_EXCEPTIONS:
            state, message = throwable.getSQLState(), throwable.getMessage() or ""
            if isinstance(state, str) and len(state) == 5:
                return PgError(state, message.removeprefix("ERROR: ").split("\n")[0])
        throwable = throwable.getCause()
    return None


# The JDBC drivers' errors that carry a source's SQLSTATE.
SQL_EXCEPTIONS = frozenset({"org.postgresql.util.PSQLException", "java.sql.SQLException",
                            "java.sql.BatchUpdateException", "java.sql.SQLSyntaxErrorException",
                            "java.sql.SQLIntegrityConstraintViolationException",
                            "java.sql.SQLDataException"})


def spark_error(exc: Exception, secrets: Collection[str] = ()) -> PgError:
    """Spark's error classes to SQLSTATEs (Spark reports the SQLSTATE of ANSI errors).
    A source's password never reaches the client, whatever a JDBC driver put in its text."""
    state = getattr(exc, "getSqlState", lambda: None)()
    text = str(exc).split("\n")[0]
    for secret in secrets:
        text = text.replace(secret, "********")
    if state and len(state) == 5:
        if state == "22012":
            return PgError(state, "division by zero")
        return PgError(state, text)
    if "cancel" in text.lower() or "interrupt" in text.lower():
        return PgError(QUERY_CANCELED, "canceling statement due to user request")
    error = from_exception(exc)
    if not secrets:
        return error

    def scrub(value: str | None) -> str | None:
        for secret in secrets:
            value = value.replace(secret, "********") if value else value
        return value

    return PgError(error.sqlstate, scrub(error.message) or "", detail=scrub(error.detail),
                   hint=scrub(error.hint))
