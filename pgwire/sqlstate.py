"""SQLSTATE codes and the error every layer raises (`PgError`), at the bottom of the house.

`pgwire.errors` re-exports all of it, with the translation of foreign exceptions into
`PgError`s (`from_exception`, the engine's words in `pgwire.engine_words`).
"""

from __future__ import annotations

# SQLSTATE codes used across the gateway (PostgreSQL Appendix A).
SUCCESSFUL_COMPLETION = "00000"
CONNECTION_EXCEPTION = "08000"
SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION = "08001"
CONNECTION_FAILURE = "08006"
PROTOCOL_VIOLATION = "08P01"
FEATURE_NOT_SUPPORTED = "0A000"
INVALID_PARAMETER_VALUE = "22023"
DIVISION_BY_ZERO = "22012"
INVALID_ARGUMENT_FOR_LOGARITHM = "2201E"
INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION = "2201G"
NULL_VALUE_NOT_ALLOWED = "22004"
CARDINALITY_VIOLATION = "21000"
INVALID_ARGUMENT_FOR_POWER = "2201F"
DATETIME_FIELD_OVERFLOW = "22008"
INVALID_DATETIME_FORMAT = "22007"
INVALID_PRECEDING_OR_FOLLOWING_SIZE = "22013"
NUMERIC_VALUE_OUT_OF_RANGE = "22003"
INVALID_TEXT_REPRESENTATION = "22P02"
INVALID_BINARY_REPRESENTATION = "22P03"
DATA_EXCEPTION = "22000"
SUBSTRING_ERROR = "22011"
ARRAY_SUBSCRIPT_ERROR = "2202E"
INVALID_CURSOR_NAME = "34000"
INVALID_SQL_STATEMENT_NAME = "26000"
ACTIVE_SQL_TRANSACTION = "25001"
NO_ACTIVE_SQL_TRANSACTION = "25P01"
IN_FAILED_SQL_TRANSACTION = "25P02"
READ_ONLY_SQL_TRANSACTION = "25006"
INVALID_AUTHORIZATION = "28000"
INVALID_PASSWORD = "28P01"
INSUFFICIENT_PRIVILEGE = "42501"
INVALID_CATALOG_NAME = "3D000"
SYNTAX_ERROR = "42601"
UNDEFINED_TABLE = "42P01"
UNDEFINED_COLUMN = "42703"
UNDEFINED_FUNCTION = "42883"
UNDEFINED_OBJECT = "42704"
DUPLICATE_PREPARED_STATEMENT = "42P05"
DUPLICATE_CURSOR = "42P03"
AMBIGUOUS_COLUMN = "42702"
INVALID_COLUMN_REFERENCE = "42P10"
DATATYPE_MISMATCH = "42804"
GROUPING_ERROR = "42803"
WINDOWING_ERROR = "42P20"
INDETERMINATE_DATATYPE = "42P18"
UNDEFINED_PARAMETER = "42P02"
CANT_CHANGE_RUNTIME_PARAM = "55P02"
QUERY_CANCELED = "57014"
ADMIN_SHUTDOWN = "57P01"
CRASH_SHUTDOWN = "57P02"
CANNOT_CONNECT_NOW = "57P03"
DISK_FULL = "53100"
OUT_OF_MEMORY = "53200"
TOO_MANY_CONNECTIONS = "53300"
PROGRAM_LIMIT_EXCEEDED = "54000"
INTERNAL_ERROR = "XX000"


class PgError(Exception):
    """An error with the fields of a PostgreSQL ErrorResponse."""

    def __init__(
        self,
        sqlstate: str,
        message: str,
        *,
        severity: str = "ERROR",
        detail: str | None = None,
        hint: str | None = None,
        position: int | None = None,
        routine: str | None = None,
    ) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message
        self.severity = severity
        self.detail = detail
        self.hint = hint
        self.position = position
        # PostgreSQL's source routine (field R): drivers tell some errors apart by it, e.g.
        # asyncpg re-prepares a statement on "RevalidateCachedQuery".
        self.routine = routine

    @property
    def is_fatal(self) -> bool:
        return self.severity in ("FATAL", "PANIC")

    def __repr__(self) -> str:
        return f"PgError({self.sqlstate!r}, {self.message!r})"


class ProtocolError(PgError):
    """The client broke the wire protocol; the connection is closed after reporting it."""

    def __init__(self, message: str) -> None:
        super().__init__(PROTOCOL_VIOLATION, message, severity="FATAL")
