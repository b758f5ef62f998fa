"""Errors that reach the client as an ErrorResponse, each with a real SQLSTATE.

Every failure the gateway reports is a `PgError`. Code below the gateway (planner,
connectors) raises `PgError` too, so the server never has to guess a SQLSTATE from a
message; `from_exception` maps the few foreign exceptions we expect (DuckDB's) and
turns anything else into an internal error that still leaves the session usable.
"""

from __future__ import annotations

import re
import socket

from pgwire.postgres_functions import POSTGRES_FUNCTIONS, SYNTAX_CALLS

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
CARDINALITY_VIOLATION = "21000"
INVALID_ARGUMENT_FOR_POWER = "2201F"
DATETIME_FIELD_OVERFLOW = "22008"
INVALID_PRECEDING_OR_FOLLOWING_SIZE = "22013"
NUMERIC_VALUE_OUT_OF_RANGE = "22003"
INVALID_TEXT_REPRESENTATION = "22P02"
INVALID_BINARY_REPRESENTATION = "22P03"
DATA_EXCEPTION = "22000"
SUBSTRING_ERROR = "22011"
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
DATATYPE_MISMATCH = "42804"
GROUPING_ERROR = "42803"
INDETERMINATE_DATATYPE = "42P18"
UNDEFINED_PARAMETER = "42P02"
CANT_CHANGE_RUNTIME_PARAM = "55P02"
QUERY_CANCELED = "57014"
ADMIN_SHUTDOWN = "57P01"
CRASH_SHUTDOWN = "57P02"
CANNOT_CONNECT_NOW = "57P03"
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


# DuckDB reports errors as typed exceptions whose text starts with "<Kind> Error: ".
# The table below maps (exception class name, message pattern) to a SQLSTATE; the first
# match wins. Patterns are matched against the message with that prefix removed.
# PostgreSQL's words that the DuckDB dialect's error() calls raise
# (connectors.dialects.duckdb_floats), wherever DuckDB reports them from.
_RAISED_WORDS = ((r"^input is out of range$", NUMERIC_VALUE_OUT_OF_RANGE),
                 (r"^value out of range: (?:overflow|underflow)$", NUMERIC_VALUE_OUT_OF_RANGE),
                 (r"^zero raised to a negative power is undefined$", INVALID_ARGUMENT_FOR_POWER),
                 (r"^a negative number raised to a non-integer power yields a complex result$",
                  INVALID_ARGUMENT_FOR_POWER),
                 # to_timestamp(float8) of NaN (connectors.dialects.duckdb_datetimes)
                 (r"^timestamp cannot be NaN$", DATETIME_FIELD_OVERFLOW),
                 # text cast to an integer (connectors.dialects.duckdb_integers)
                 (r'^invalid input syntax for type (?:smallint|integer|bigint): ', INVALID_TEXT_REPRESENTATION))
_DUCKDB_RULES: tuple[tuple[str, str, str], ...] = (
    *((kind, pattern, code) for kind in ("InvalidInputException", "OSError", "ArrowInvalid")
      for pattern, code in _RAISED_WORDS),
    # A refusal the DuckDB dialect raises when a row is computed (connectors.dialects.duckdb_json).
    ("InvalidInputException", r"is not supported by fedgate outside PostgreSQL sources$",
     FEATURE_NOT_SUPPORTED),
    ("CatalogException", r"^Table with name .* does not exist", UNDEFINED_TABLE),
    ("CatalogException", r"^Table Function with name .* does not exist", UNDEFINED_FUNCTION),
    ("CatalogException", r"^Scalar Function with name .* does not exist", UNDEFINED_FUNCTION),
    ("CatalogException", r"^Type with name .* does not exist", UNDEFINED_OBJECT),
    ("CatalogException", r"", UNDEFINED_OBJECT),
    ("BinderException", r"Referenced column .* not found", UNDEFINED_COLUMN),
    ("BinderException", r"^Referenced table .* not found", UNDEFINED_TABLE),
    ("BinderException", r"Ambiguous reference", AMBIGUOUS_COLUMN),
    ("BinderException", r"No function matches", UNDEFINED_FUNCTION),
    ("BinderException", r"", DATATYPE_MISMATCH),
    ("ParserException", r"", SYNTAX_ERROR),
    ("InvalidInputException", r"[Dd]ivision by zero", DIVISION_BY_ZERO),
    # The DuckDB dialect's error() calls raise PostgreSQL's words for these
    # (connectors.dialects.duckdb_functions).
    ("InvalidInputException", r"^cannot take logarithm of", INVALID_ARGUMENT_FOR_LOGARITHM),
    ("InvalidInputException", r"^cannot take square root of", INVALID_ARGUMENT_FOR_POWER),
    ("InvalidInputException", r"^field position must not be zero$", INVALID_PARAMETER_VALUE),
    ("InvalidInputException", r"^negative substring length not allowed$", SUBSTRING_ERROR),
    ("InvalidInputException", r"^character number must be positive$", INVALID_PARAMETER_VALUE),
    ("InvalidInputException", r"^null character not permitted$", PROGRAM_LIMIT_EXCEEDED),
    ("InvalidInputException", r"^More than one row returned by a subquery", CARDINALITY_VIOLATION),
    ("OutOfRangeException", r"[Dd]ivision by zero", DIVISION_BY_ZERO),
    ("OutOfRangeException", r"^Invalid RANGE (?:PRECEDING|FOLLOWING) value$",
     INVALID_PRECEDING_OR_FOLLOWING_SIZE),
    ("ConversionException", r"^date field value out of range: ", DATETIME_FIELD_OVERFLOW),
    ("ConversionException", r"the value is out of range for the destination type INT(?:16|32|64)$",
     NUMERIC_VALUE_OUT_OF_RANGE),
    ("ConversionException", r"^Failed to cast decimal value \S+ to type INT(?:16|32|64)$",
     NUMERIC_VALUE_OUT_OF_RANGE),
    ("OutOfRangeException", r"", NUMERIC_VALUE_OUT_OF_RANGE),
    # make_date(), make_timestamp() of a field beyond its range.
    ("ConversionException", r"^Date out of range: ", DATETIME_FIELD_OVERFLOW),
    ("OSError", r"^Date out of range: ", DATETIME_FIELD_OVERFLOW),
    ("ArrowInvalid", r"^Date out of range: ", DATETIME_FIELD_OVERFLOW),
    ("ConversionException", r"", INVALID_TEXT_REPRESENTATION),
    ("InterruptException", r"", QUERY_CANCELED),
    ("NotImplementedException", r"", FEATURE_NOT_SUPPORTED),
    # A statement the engine found, while running it, to be beyond what fedgate answers
    # identically (error() in the SQL the DuckDB dialect wrote): refused, as at planning.
    ("InvalidInputException", r"is not supported by fedgate", FEATURE_NOT_SUPPORTED),
    ("OSError", r"is not supported by fedgate", FEATURE_NOT_SUPPORTED),
    ("ArrowInvalid", r"is not supported by fedgate", FEATURE_NOT_SUPPORTED),
    ("InvalidInputException", r"", DATA_EXCEPTION),
    ("PermissionException", r"", READ_ONLY_SQL_TRANSACTION),
    # An error DuckDB raises while a result streams through Arrow's C stream interface
    # reaches Python as pyarrow's OSError (or ArrowInvalid), its kind prefix gone.
    ("OSError", r"^[Dd]ivision by zero", DIVISION_BY_ZERO),
    ("ArrowInvalid", r"^[Dd]ivision by zero", DIVISION_BY_ZERO),
    ("OSError", r"^cannot take logarithm of", INVALID_ARGUMENT_FOR_LOGARITHM),
    ("ArrowInvalid", r"^cannot take logarithm of", INVALID_ARGUMENT_FOR_LOGARITHM),
    ("OSError", r"^cannot take square root of", INVALID_ARGUMENT_FOR_POWER),
    ("ArrowInvalid", r"^cannot take square root of", INVALID_ARGUMENT_FOR_POWER),
    ("OSError", r"^field position must not be zero$", INVALID_PARAMETER_VALUE),
    ("OSError", r"^negative substring length not allowed$", SUBSTRING_ERROR),
    ("OSError", r"^character number must be positive$", INVALID_PARAMETER_VALUE),
    ("OSError", r"^null character not permitted$", PROGRAM_LIMIT_EXCEEDED),
    ("ArrowInvalid", r"^field position must not be zero$", INVALID_PARAMETER_VALUE),
    ("ArrowInvalid", r"^negative substring length not allowed$", SUBSTRING_ERROR),
    ("ArrowInvalid", r"^character number must be positive$", INVALID_PARAMETER_VALUE),
    ("ArrowInvalid", r"^null character not permitted$", PROGRAM_LIMIT_EXCEEDED),
    ("OSError", r"^More than one row returned by a subquery", CARDINALITY_VIOLATION),
    ("ArrowInvalid", r"^More than one row returned by a subquery", CARDINALITY_VIOLATION),
    ("OSError", r"^Could not convert", INVALID_TEXT_REPRESENTATION),
    ("ArrowInvalid", r"^Could not convert", INVALID_TEXT_REPRESENTATION),
)

_KIND_PREFIX = re.compile(r"^[A-Za-z ]+ Error: ")

# PostgreSQL's wording for the errors clients and people match on.
_REWORDINGS: dict[str, tuple[re.Pattern[str], str]] = {
    UNDEFINED_COLUMN: (re.compile(r'Referenced column "?([^"]+?)"? (?:was )?not found'), 'column "{0}" does not exist'),
    UNDEFINED_TABLE: (re.compile(r"Table with name (\S+?) does not exist"), 'relation "{0}" does not exist'),
    UNDEFINED_FUNCTION: (re.compile(r"Function with name (\S+?) does not exist"), "function {0} does not exist"),
    DIVISION_BY_ZERO: (re.compile(r"[Dd]ivision by zero"), "division by zero"),
    CARDINALITY_VIOLATION: (re.compile(r"^More than one row returned by a subquery used as an expression"),
                            "more than one row returned by a subquery used as an expression"),
}


# DuckDB's names of the types a cast from text fails to, as PostgreSQL names them.
_CAST_TARGETS = {"INT16": "smallint", "INT32": "integer", "INT64": "bigint", "DOUBLE":
                 "double precision", "FLOAT": "real", "BOOL": "boolean"}
_FAILED_CAST = re.compile(r"""^Could not convert string (['"])(.*)\1 to (\w+)(\(\d+,\d+\))?"""
                          r"""(?: when casting from source column \w+)?$""")
# (timestamp is not: DuckDB words a timestamptz's failure the same, PostgreSQL not)
_FAILED_DATETIME = re.compile(r'^invalid (date) field format: "(.*)", expected format')
_INTEGER_TEXT = re.compile(r"^\s*[+-]?\d+\s*$")
# The text PostgreSQL's numeric input reads as NaN or an infinity (numeric_in).
_NUMERIC_SPECIALS = frozenset({"nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf"})
_AMBIGUOUS = re.compile(r'^Ambiguous reference to column name "([^"]+)"')
# An integer result or cast beyond its type, in DuckDB's words (arithmetic, a cast from a
# wider integer, a float or a decimal); PostgreSQL says "integer out of range".
_INTEGER_OVERFLOW = re.compile(r"^Overflow in (?:addition|subtraction|multiplication|division) of "
                               r"(INT16|INT32|INT64) |destination type (INT16|INT32|INT64)$|"
                               r"^Failed to cast decimal value \S+ to type (INT16|INT32|INT64)$")
_INTEGER_NAMES = {"INT16": "smallint", "INT32": "integer", "INT64": "bigint"}
_DATE_FIELD = re.compile(r'^date field value out of range: (".*")$')
_DATE_OUT_OF_RANGE = re.compile(r"^Date out of range: (-?\d+)-(\d+)-(\d+)$")
_NO_SUCH_FUNCTION = re.compile(r"^(?:Scalar |Table )Function with name (\S+?) does not exist")
_NO_SUCH_TYPE = re.compile(r"^Type with name (\S+?) does not exist")
# PostgreSQL's built-in types DuckDB lacks: a statement naming one is one PostgreSQL answers.
_POSTGRES_ONLY_TYPES = frozenset({
    "money", "inet", "cidr", "macaddr", "macaddr8", "point", "line", "lseg", "box", "path",
    "polygon", "circle", "tsvector", "tsquery", "xml", "pg_lsn", "txid_snapshot", "pg_snapshot",
    "int4range", "int8range", "numrange", "tsrange", "tstzrange", "daterange", "int4multirange",
    "int8multirange", "nummultirange", "tsmultirange", "tstzmultirange", "datemultirange",
    "bit", "varbit", "timetz", "regconfig", "regdictionary", "jsonpath", "aclitem"})
# DuckDB has no overload of the name for the arguments, or several equally good ones.
_NO_MATCHING_CALL = re.compile(
    r"^No function matches the given name and argument types '([^(]+)\((.*)\)'"
    r'|^Could not choose a best candidate function for the function call "([^(]+)\((.*)\)"')
# DuckDB's names for the types it reports a call's arguments with, as PostgreSQL prints
# them (a literal DuckDB has not typed yet is PostgreSQL's unknown).
_ARGUMENT_TYPES = {"VARCHAR": "text", "STRING_LITERAL": "unknown", "BLOB": "bytea",
                   "INTEGER_LITERAL": "integer", "INTEGER": "integer", "BIGINT": "bigint",
                   "SMALLINT": "smallint", "DOUBLE": "double precision", "FLOAT": "real",
                   "DECIMAL": "numeric", "BOOLEAN": "boolean", "DATE": "date", "JSON": "jsonb",
                   "TIMESTAMP": "timestamp without time zone", "INTERVAL": "interval",
                   "TIMESTAMP WITH TIME ZONE": "timestamp with time zone"}
# Names the DuckDB dialect writes for a PostgreSQL function, so a failed call is reported
# under the name the client wrote (sqlglot writes PostgreSQL's to_char as strftime).
_CLIENT_NAMES = {"strftime": "to_char"}
# PostgreSQL has no arithmetic operator taking text: its answer to one is 42883.
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%"})
_NUMBERS_AND_TEXT = frozenset({"text", "integer", "bigint", "smallint", "double precision", "numeric"})
_NO_OPERATOR_HINT = ("No operator matches the given name and argument types. "
                     "You might need to add explicit type casts.")


def _argument_types(listed: str) -> list[str]:
    """DuckDB's argument list ('DECIMAL(5,1), VARCHAR') as PostgreSQL's type names."""
    types, depth, current = [], 0, ""
    for char in listed:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            types.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        types.append(current.strip())
    names = []
    for duckdb_type in types:
        base = duckdb_type.split("(")[0]
        array = base.endswith("[]")
        base = base.removesuffix("[]")
        name = _ARGUMENT_TYPES.get(base, base.lower())
        names.append(f"{name}[]" if array else name)
    return names


def _unanswerable_call(message: str) -> PgError | None:
    """DuckDB has no function (or operator) of a name for the arguments it was given, or
    cannot choose between its overloads.

    Under a PostgreSQL function's name (the planner lets no other name through) the call is
    one PostgreSQL answers, so it is refused; so is an operator, except arithmetic on text,
    which PostgreSQL has no operator for either. Any other name keeps 42883."""
    found = _NO_MATCHING_CALL.match(message)
    if found is None:
        return None
    called, listed = found.group(1, 2) if found.group(1) is not None else found.group(3, 4)
    name = _CLIENT_NAMES.get(called, called)
    types = _argument_types(listed)
    if not re.fullmatch(r"\w+", name):
        if name in _ARITHMETIC and "text" in types and set(types) <= _NUMBERS_AND_TEXT:
            operands = f"{name} {types[0]}" if len(types) == 1 else f" {name} ".join(types)
            return PgError(UNDEFINED_FUNCTION, f"operator does not exist: {operands}",
                           hint=_NO_OPERATOR_HINT)
        return PgError(FEATURE_NOT_SUPPORTED, f"operator {name} ({', '.join(types)}) is not "
                       "supported by fedgate outside PostgreSQL sources")
    if name.lower() in POSTGRES_FUNCTIONS or name.lower() in SYNTAX_CALLS:
        return PgError(FEATURE_NOT_SUPPORTED, f"function {name}({', '.join(types)}) is not "
                       "supported by fedgate outside PostgreSQL sources")
    return None


# A numeric PostgreSQL holds and DuckDB's DECIMAL (38 digits, no NaN or infinity, a
# precision fixed per column) does not: PostgreSQL answers, so the statement is refused.
_BEYOND_DECIMAL = re.compile(r"^Could not cast value \S+ to DECIMAL|^BIGNUM value |"
                             r'^Casting value "[^"]*" to type DECIMAL\(\d+,\d+\) failed: value is out of range')
# abs() of an integer type's minimum, which has no positive counterpart in the type.
_ABS_OVERFLOW = re.compile(r"^Overflow on abs\((-\d+)\)$")
_INTEGER_MINIMA = {-(2**15): "smallint", -(2**31): "integer", -(2**63): "bigint"}


def _postgres_words(code: str, message: str) -> PgError | None:
    """DuckDB's error as PostgreSQL reports the same failure, when we know its words."""
    if _BEYOND_DECIMAL.match(message):
        return PgError(FEATURE_NOT_SUPPORTED, "a numeric value beyond DuckDB's DECIMAL (38 digits, no "
                       "NaN or infinity) is not supported by fedgate outside PostgreSQL sources")
    if message.startswith("Epoch seconds out of range for TIMESTAMP"):
        # to_timestamp(float8) beyond DuckDB's timestamps, which end before PostgreSQL's.
        return PgError(FEATURE_NOT_SUPPORTED, "to_timestamp() of a value beyond DuckDB's timestamp "
                       "range is not supported by fedgate outside PostgreSQL sources")
    overflow = _ABS_OVERFLOW.match(message)
    if overflow is not None and int(overflow.group(1)) in _INTEGER_MINIMA:
        return PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{_INTEGER_MINIMA[int(overflow.group(1))]} out of range")
    failed = _FAILED_CAST.match(message)
    if code == INVALID_TEXT_REPRESENTATION and failed is not None:
        value, target, precision = failed.group(2), failed.group(3), failed.group(4)
        type_name = "numeric" if target == "DECIMAL" and precision else _CAST_TARGETS.get(target)
        if type_name is None:
            return None
        if type_name == "numeric" and value.strip().lower() in _NUMERIC_SPECIALS:
            # PostgreSQL's numeric holds these; DuckDB's DECIMAL has no such value.
            return PgError(FEATURE_NOT_SUPPORTED, f"numeric value '{value}' is not supported "
                           "by fedgate outside PostgreSQL sources")
        if type_name in ("smallint", "integer", "bigint") and _INTEGER_TEXT.match(value):
            return PgError(NUMERIC_VALUE_OUT_OF_RANGE,
                           f'value "{value}" is out of range for type {type_name}')
        return PgError(code, f'invalid input syntax for type {type_name}: "{value}"')
    failed = _FAILED_DATETIME.match(message)
    if code == INVALID_TEXT_REPRESENTATION and failed is not None:
        return PgError(code, f'invalid input syntax for type {failed.group(1)}: "{failed.group(2)}"')
    overflow = _INTEGER_OVERFLOW.search(message)
    if code == NUMERIC_VALUE_OUT_OF_RANGE and overflow is not None:
        integer = next(group for group in overflow.groups() if group is not None)
        return PgError(code, f"{_INTEGER_NAMES[integer]} out of range")
    if code == INVALID_PRECEDING_OR_FOLLOWING_SIZE:
        return PgError(code, "invalid preceding or following size in window function")
    date_field = _DATE_FIELD.match(message)
    if code == DATETIME_FIELD_OVERFLOW and date_field is not None:
        return PgError(code, f"date/time field value out of range: {date_field.group(1)}")
    made = _DATE_OUT_OF_RANGE.match(message)
    if code == DATETIME_FIELD_OVERFLOW and made is not None:  # as make_date() words it
        year, month, day = map(int, made.groups())
        return PgError(code, f"date field value out of range: {year}-{month:02d}-{day:02d}")
    ambiguous = _AMBIGUOUS.match(message)
    if code == AMBIGUOUS_COLUMN and ambiguous is not None:
        return PgError(code, f'column reference "{ambiguous.group(1)}" is ambiguous')
    if code in (UNDEFINED_FUNCTION, DATATYPE_MISMATCH) and \
            (unanswerable := _unanswerable_call(message)) is not None:
        return unanswerable
    missing = _NO_SUCH_FUNCTION.match(message)
    if code == UNDEFINED_FUNCTION and missing is not None:
        # The planner lets through only functions PostgreSQL has (planner.function_check):
        # one DuckDB lacks is one PostgreSQL would have answered, so it is refused.
        return PgError(FEATURE_NOT_SUPPORTED, f"function {missing.group(1)}() is not supported "
                       "by fedgate outside PostgreSQL sources")
    no_type = _NO_SUCH_TYPE.match(message)
    if code == UNDEFINED_OBJECT and no_type is not None:
        name = no_type.group(1).lower()
        if name in _POSTGRES_ONLY_TYPES:
            return PgError(FEATURE_NOT_SUPPORTED, f"type {name} is not supported by fedgate "
                           "outside PostgreSQL sources")
        return PgError(code, f'type "{name}" does not exist')
    return None


def _reword(code: str, message: str) -> str:
    rule = _REWORDINGS.get(code)
    if rule is None:
        return message
    found = rule[0].search(message)
    return rule[1].format(*found.groups()) if found else message


def from_exception(exc: BaseException) -> PgError:
    """Turn any exception raised while serving a statement into a `PgError`."""
    if isinstance(exc, PgError):
        return exc
    name = type(exc).__name__
    text = str(exc).strip()
    message = _KIND_PREFIX.sub("", text, count=1)
    first_line, _, rest = message.partition("\n")
    for cls, pattern, code in _DUCKDB_RULES:
        if cls == name and re.search(pattern, first_line):
            if code == QUERY_CANCELED:
                return PgError(code, "canceling statement due to user request")
            rest = rest.strip()
            if code in (DIVISION_BY_ZERO, CARDINALITY_VIOLATION) or rest.startswith("LINE "):
                # DuckDB's advice (TRY, a setting) does not apply through the gateway, and
                # its LINE pointer points into the SQL we generated, not the client's.
                rest = ""
            postgres = _postgres_words(code, first_line)
            if postgres is not None:
                return postgres  # DuckDB's LINE pointer and "Did you mean" do not apply
            hint = rest if rest.startswith("Candidate") or rest.startswith("Did you mean") else None
            return PgError(code, _reword(code, first_line), detail=None if hint else rest or None,
                           hint=hint)
    return PgError(INTERNAL_ERROR, f"{name}: {first_line or 'internal error'}")


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
