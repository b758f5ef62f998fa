"""DuckDB's errors in PostgreSQL's words: the SQLSTATE and message a client expects.

DuckDB raises typed exceptions ("Conversion Error: Could not convert string 'abc' to
INT32"); `translate` gives each the SQLSTATE PostgreSQL would report and, where clients
match on it, PostgreSQL's message (`invalid input syntax for type integer: "abc"`).
The DuckDB dialect's `error()` calls raise PostgreSQL's words already (`_RAISED_WORDS`).
"""

from __future__ import annotations

import re

from pgwire.postgres_functions import POSTGRES_FUNCTIONS, SYNTAX_CALLS
from pgwire.sqlstate import (
    FEATURE_NOT_SUPPORTED,
    INVALID_PARAMETER_VALUE,
    DIVISION_BY_ZERO,
    INVALID_ARGUMENT_FOR_LOGARITHM,
    INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION,
    NULL_VALUE_NOT_ALLOWED,
    CARDINALITY_VIOLATION,
    INVALID_ARGUMENT_FOR_POWER,
    DATETIME_FIELD_OVERFLOW,
    INVALID_DATETIME_FORMAT,
    INVALID_PRECEDING_OR_FOLLOWING_SIZE,
    NUMERIC_VALUE_OUT_OF_RANGE,
    INVALID_TEXT_REPRESENTATION,
    DATA_EXCEPTION,
    SUBSTRING_ERROR,
    ARRAY_SUBSCRIPT_ERROR,
    READ_ONLY_SQL_TRANSACTION,
    SYNTAX_ERROR,
    UNDEFINED_TABLE,
    UNDEFINED_COLUMN,
    UNDEFINED_FUNCTION,
    UNDEFINED_OBJECT,
    AMBIGUOUS_COLUMN,
    DATATYPE_MISMATCH,
    GROUPING_ERROR,
    QUERY_CANCELED,
    DISK_FULL,
    OUT_OF_MEMORY,
    PROGRAM_LIMIT_EXCEEDED,
    INTERNAL_ERROR,
    PgError,
)

# width_bucket()'s errors, raised in PostgreSQL's words (connectors.dialects.duckdb.buckets).
_WIDTH_BUCKET = (r"^(?:count must be greater than zero|operand, lower bound, and upper bound cannot "
                 r"be NaN|lower and upper bounds must be finite|lower bound cannot equal upper bound)$")

# DuckDB reports errors as typed exceptions whose text starts with "<Kind> Error: ".
# The table below maps (exception class name, message pattern) to a SQLSTATE; the first
# match wins. Patterns are matched against the message with that prefix removed.
# PostgreSQL's words that the DuckDB dialect's error() calls raise
# (connectors.dialects.duckdb.floats), wherever DuckDB reports them from.
_RAISED_WORDS = ((r"^input is out of range$", NUMERIC_VALUE_OUT_OF_RANGE),
                 (r"^value out of range: (?:overflow|underflow)$", NUMERIC_VALUE_OUT_OF_RANGE),
                 (r"^zero raised to a negative power is undefined$", INVALID_ARGUMENT_FOR_POWER),
                 (r"^a negative number raised to a non-integer power yields a complex result$",
                  INVALID_ARGUMENT_FOR_POWER),
                 # to_timestamp(float8) of NaN (connectors.dialects.duckdb.datetimes)
                 (r"^timestamp cannot be NaN$", DATETIME_FIELD_OVERFLOW),
                 # json_array_length() of an object or a scalar (connectors.dialects.duckdb.json)
                 (r"^cannot get array length of a (?:non-array|scalar)$", INVALID_PARAMETER_VALUE),
                 # get_byte() past the end (connectors.dialects.duckdb.bytes)
                 (r"^index -?\d+ out of valid range, 0\.\.-?\d+$", ARRAY_SUBSCRIPT_ERROR),
                 # text cast to an integer (connectors.dialects.duckdb.integers)
                 (r'^invalid input syntax for type (?:smallint|integer|bigint): ', INVALID_TEXT_REPRESENTATION),
                 # text cast to a source's enum in the engine (planner.enum_values)
                 (r'^invalid input value for enum ', INVALID_TEXT_REPRESENTATION))
_DUCKDB_RULES: tuple[tuple[str, str, str], ...] = (
    *((kind, pattern, code) for kind in ("InvalidInputException", "OSError", "ArrowInvalid")
      for pattern, code in _RAISED_WORDS),
    # A refusal the DuckDB dialect raises when a row is computed (connectors.dialects.duckdb.json).
    ("InvalidInputException", r"is not supported by fedgate outside PostgreSQL sources$",
     FEATURE_NOT_SUPPORTED),
    ("CatalogException", r"^Table with name .* does not exist", UNDEFINED_TABLE),
    ("CatalogException", r"^Table Function with name .* does not exist", UNDEFINED_FUNCTION),
    ("CatalogException", r"^Scalar Function with name .* does not exist", UNDEFINED_FUNCTION),
    ("CatalogException", r"^Type with name .* does not exist", UNDEFINED_OBJECT),
    ("CatalogException", r"", UNDEFINED_OBJECT),
    ("BinderException", r"Referenced column .* not found", UNDEFINED_COLUMN),
    ("BinderException", r'^(?:Table|Values list) "[^"]+" does not have a column named ', UNDEFINED_COLUMN),
    # A name of the select list used in the select list, or in a branch without it.
    ("BinderException", r'^Column "[^"]+" referenced that exists in the SELECT clause', UNDEFINED_COLUMN),
    # (t.*).id: a field of a star, which PostgreSQL reads as a whole row's field.
    ("BinderException", r"^STAR expression is only allowed as the root element", FEATURE_NOT_SUPPORTED),
    ("BinderException", r"^Referenced table .* not found", UNDEFINED_TABLE),
    ("BinderException", r"Ambiguous reference", AMBIGUOUS_COLUMN),
    ("BinderException", r"No function matches", UNDEFINED_FUNCTION),
    ("BinderException", r"must appear in the GROUP BY clause or must be part of an aggregate",
     GROUPING_ERROR),
    ("BinderException", r"", DATATYPE_MISMATCH),
    ("ParserException", r"", SYNTAX_ERROR),
    ("InvalidInputException", r"[Dd]ivision by zero", DIVISION_BY_ZERO),
    # The DuckDB dialect's error() calls raise PostgreSQL's words for these
    # (connectors.dialects.duckdb.functions).
    ("InvalidInputException", r"^cannot take logarithm of", INVALID_ARGUMENT_FOR_LOGARITHM),
    ("InvalidInputException", _WIDTH_BUCKET, INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION),
    ("InvalidInputException", r"^null values cannot be formatted as an SQL identifier$", NULL_VALUE_NOT_ALLOWED),
    ("InvalidInputException", r"^input is out of range$", NUMERIC_VALUE_OUT_OF_RANGE),  # sind(), cosd()
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
    # A cast DuckDB has no implementation of (a multidimensional array to numeric[]):
    # a construct refused, not a value PostgreSQL would reject.
    ("ConversionException", r"^Unimplemented type for cast ", FEATURE_NOT_SUPPORTED),
    ("ConversionException", r"", INVALID_TEXT_REPRESENTATION),
    ("InterruptException", r"", QUERY_CANCELED),
    # Over memory_limit with nothing left to spill, or with the spill folder at
    # max_temp_directory_size ([engine] temp_directory_max_size): the statement fails,
    # the engine goes on. The message is DuckDB's first line; its advice (SET threads,
    # PRAGMA ...) names settings a client cannot change here, so the hint says what can.
    # The same read through a result's Arrow stream arrives as pyarrow's OSError.
    *((kind, pattern, code) for kind in ("OutOfMemoryException", "OSError", "ArrowInvalid")
      for pattern, code in ((r"^failed to offload data block", DISK_FULL),
                            (r"^(?:failed to pin block|failed to allocate|could not allocate)",
                             OUT_OF_MEMORY))),
    ("OutOfMemoryException", r"", OUT_OF_MEMORY),
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
    ("OSError", _WIDTH_BUCKET, INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION),
    ("OSError", r"^null values cannot be formatted as an SQL identifier$", NULL_VALUE_NOT_ALLOWED),
    ("OSError", r"^input is out of range$", NUMERIC_VALUE_OUT_OF_RANGE),  # sind(), cosd()
    ("ArrowInvalid", r"^cannot take logarithm of", INVALID_ARGUMENT_FOR_LOGARITHM),
    ("ArrowInvalid", _WIDTH_BUCKET, INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION),
    ("ArrowInvalid", r"^null values cannot be formatted as an SQL identifier$", NULL_VALUE_NOT_ALLOWED),
    ("ArrowInvalid", r"^input is out of range$", NUMERIC_VALUE_OUT_OF_RANGE),  # sind(), cosd()
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
_REWORDINGS: dict[str, tuple[tuple[re.Pattern[str], str], ...]] = {
    UNDEFINED_COLUMN: ((re.compile(r'Referenced column "?([^"]+?)"? (?:was )?not found'), 'column "{0}" does not exist'),
                       (re.compile(r'^(?:Table|Values list) "([^"]+)" does not have a column named "([^"]+)"'),
                        "column {0}.{1} does not exist"),
                       (re.compile(r'^Column "([^"]+)" referenced that exists in the SELECT clause'),
                        'column "{0}" does not exist')),
    UNDEFINED_TABLE: ((re.compile(r"Table with name (\S+?) does not exist"), 'relation "{0}" does not exist'),),
    UNDEFINED_FUNCTION: ((re.compile(r"Function with name (\S+?) does not exist"), "function {0} does not exist"),),
    DIVISION_BY_ZERO: ((re.compile(r"[Dd]ivision by zero"), "division by zero"),),
    FEATURE_NOT_SUPPORTED: ((re.compile(r"^STAR expression is only allowed as the root element"),
                             "a field of a star, (t.*).field, is not supported by fedgate outside "
                             "PostgreSQL sources: write t.field"),
                            (re.compile(r"^Unimplemented type for cast \((.+) -> (.+)\)"),
                             "a cast from {0} to {1} in the engine is not supported by fedgate "
                             "outside PostgreSQL sources"),
                            # a function the DuckDB runner registers refused a value
                            # (connectors.dialects.duckdb.numeric_calls)
                            (re.compile(r"^Python exception occurred while executing the UDF: \w+: (.+)$"),
                             "{0}")),
    # PostgreSQL qualifies the column with its table ("t.id"); DuckDB's words do not say it.
    GROUPING_ERROR: ((re.compile(r'^column "([^"]+)" must appear in the GROUP BY clause'),
                      'column "{0}" must appear in the GROUP BY clause or be used in an aggregate '
                      'function'),),
    CARDINALITY_VIOLATION: ((re.compile(r"^More than one row returned by a subquery used as an expression"),
                            "more than one row returned by a subquery used as an expression"),),
}


# DuckDB's names of the types a cast from text fails to, as PostgreSQL names them.
_CAST_TARGETS = {"INT16": "smallint", "INT32": "integer", "INT64": "bigint", "DOUBLE":
                 "double precision", "FLOAT": "real", "BOOL": "boolean", "UUID": "uuid"}
_FAILED_CAST = re.compile(r"""^Could not convert string (['"])(.*)\1 to (\w+)(\(\d+,\d+\))?"""
                          r"""(?: when casting from source column \w+)?$""")
# (timestamp is not: DuckDB words a timestamptz's failure the same, PostgreSQL not, so
# only its SQLSTATE is PostgreSQL's, 22007)
_FAILED_DATETIME = re.compile(r'^invalid (date) field format: "(.*)", expected format')
_FAILED_TIMESTAMP = re.compile(r'^invalid timestamp field format: "')
_FAILED_INTERVAL = re.compile(r"""^Could not convert string (['"])(.*)\1 to INTERVAL$""")
# A field beyond its range (hour 25, month 13), for any date/time type.
_DATETIME_FIELD = re.compile(r'^(?:timestamp|time|date) field value out of range: ("[^"]*")')
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
# The one overflowing integer division, the type's minimum by -1, which DuckDB reports
# without the type: the minimum says which.
_MINIMUM_BY_MINUS_ONE = re.compile(r"^Overflow in division of (-\d+) / -1$")
_MINIMA = {str(-2**15): "smallint", str(-2**31): "integer", str(-2**63): "bigint"}
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
_UNKNOWN_ZONE = re.compile(r"^Unknown TimeZone '(.*)'!$")
# abs() of an integer type's minimum, which has no positive counterpart in the type.
_ABS_OVERFLOW = re.compile(r"^Overflow on abs\((-\d+)\)$")
_INTEGER_MINIMA = {-(2**15): "smallint", -(2**31): "integer", -(2**63): "bigint"}


def _postgres_words(code: str, message: str) -> PgError | None:
    """DuckDB's error as PostgreSQL reports the same failure, when we know its words."""
    zone = _UNKNOWN_ZONE.match(message)
    if zone is not None:  # one DuckDB's ICU lacks; PostgreSQL may know it (a POSIX offset)
        return PgError(FEATURE_NOT_SUPPORTED, f'the time zone "{zone.group(1)}" is not supported by '
                       "fedgate outside PostgreSQL sources")
    if message.startswith("Malformed JSON"):  # a json or jsonb value's text that is not JSON
        return PgError(INVALID_TEXT_REPRESENTATION, "invalid input syntax for type json")
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
    failed = _FAILED_INTERVAL.match(message)
    if code == INVALID_TEXT_REPRESENTATION and failed is not None:
        return PgError(INVALID_DATETIME_FORMAT, f'invalid input syntax for type interval: "{failed.group(2)}"')
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
        return PgError(INVALID_DATETIME_FORMAT,
                       f'invalid input syntax for type {failed.group(1)}: "{failed.group(2)}"')
    if code == INVALID_TEXT_REPRESENTATION and _FAILED_TIMESTAMP.match(message):
        return PgError(INVALID_DATETIME_FORMAT, message.split(", expected format")[0])
    field = _DATETIME_FIELD.match(message)
    if code in (INVALID_TEXT_REPRESENTATION, DATETIME_FIELD_OVERFLOW) and field is not None:
        return PgError(DATETIME_FIELD_OVERFLOW, f"date/time field value out of range: {field.group(1)}")
    overflow = _INTEGER_OVERFLOW.search(message)
    if code == NUMERIC_VALUE_OUT_OF_RANGE and overflow is not None:
        integer = next(group for group in overflow.groups() if group is not None)
        return PgError(code, f"{_INTEGER_NAMES[integer]} out of range")
    minimum = _MINIMUM_BY_MINUS_ONE.match(message)
    if code == NUMERIC_VALUE_OUT_OF_RANGE and minimum is not None and minimum.group(1) in _MINIMA:
        return PgError(code, f"{_MINIMA[minimum.group(1)]} out of range")
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


_MEMORY_HINT = {
    OUT_OF_MEMORY: "The engine's memory ([engine] memory_limit) is spent and what is left "
                   "could not be spilled to disk: run the statement alone, with less data, "
                   "or give the gateway more memory.",
    DISK_FULL: "The engine spilled as much as [engine] temp_directory_max_size allows (or "
               "the disk is full): run the statement with less data, or allow more disk.",
}


def _reword(code: str, message: str) -> str:
    for pattern, wording in _REWORDINGS.get(code, ()):
        found = pattern.search(message)
        if found:
            return wording.format(*found.groups())
    return message


def translate(exc: BaseException) -> PgError:
    """A foreign exception (DuckDB's, or any other) as the `PgError` the client reads."""
    name = type(exc).__name__
    text = str(exc).strip()
    message = _KIND_PREFIX.sub("", text, count=1)
    first_line, _, rest = message.partition("\n")
    for cls, pattern, code in _DUCKDB_RULES:
        if cls == name and re.search(pattern, first_line):
            if code == QUERY_CANCELED:
                return PgError(code, "canceling statement due to user request")
            rest = rest.strip()
            if code in (OUT_OF_MEMORY, DISK_FULL):
                return PgError(code, f"out of memory: {first_line}" if code == OUT_OF_MEMORY else
                               f"could not write to the engine's spill folder: {first_line}",
                               hint=_MEMORY_HINT[code])
            if code in (DIVISION_BY_ZERO, CARDINALITY_VIOLATION, GROUPING_ERROR) or rest.startswith("LINE "):
                # DuckDB's advice (TRY, a setting, ANY_VALUE) does not apply through the gateway, and
                # its LINE pointer points into the SQL we generated, not the client's.
                rest = ""
            postgres = _postgres_words(code, first_line)
            if postgres is not None:
                return postgres  # DuckDB's LINE pointer and "Did you mean" do not apply
            hint = rest if rest.startswith("Candidate") or rest.startswith("Did you mean") else None
            return PgError(code, _reword(code, first_line), detail=None if hint else rest or None,
                           hint=hint)
    return PgError(INTERNAL_ERROR, f"{name}: {first_line or 'internal error'}")
