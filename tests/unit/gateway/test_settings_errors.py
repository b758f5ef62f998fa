"""Session parameters and the mapping of engine errors to SQLSTATEs."""

from __future__ import annotations

import duckdb
import pytest

from pgwire.errors import from_exception, PgError
from gateway.state.settings import SessionSettings


def test_startup_parameters_and_defaults() -> None:
    s = SessionSettings.initial({"user": "u", "database": "fedgate", "application_name": "psql",
                                 "DateStyle": "ISO", "client_encoding": "UTF8"}, ("demo",))
    assert s.get("application_name") == "psql"
    assert s.get("datestyle") == "ISO, MDY"
    assert s.get("server_version").startswith("15.")
    assert s.search_path == ("demo",)
    assert s.get("session_authorization") == "u"


@pytest.mark.parametrize(("name", "value", "stored"), [
    ("TimeZone", "Europe/Paris", "Europe/Paris"),
    ("timezone", "utc", "UTC"),
    ("extra_float_digits", "3", "3"),
    # shown as PostgreSQL shows a setting in milliseconds: in the largest unit that divides it
    ("statement_timeout", "5s", "5s"),
    ("statement_timeout", "250", "250ms"),
    ("statement_timeout", "5000", "5s"),
    ("statement_timeout", "10001ms", "10001ms"),
    ("statement_timeout", "90000", "90s"),
    ("statement_timeout", "60000ms", "1min"),
    ("statement_timeout", "2h", "2h"),
    ("statement_timeout", "1440min", "1d"),
    ("statement_timeout", "0", "0"),
    ("statement_timeout", "1.5s", "1500ms"),
    # parse_bool's prefixes, for PostgreSQL's booleans and the gateway's own alike
    ("standard_conforming_strings", "tr", "on"),
    ("fedgate.relay", "of", "off"),
    ("some.custom_guc", "anything", "anything"),
    ("fedgate.engine", "SPARK", "spark"),
])
def test_set_accepts(name: str, value: str, stored: str) -> None:
    s = SessionSettings.initial({"user": "u"}, ("demo",))
    s.set(name, value)
    assert s.get(name) == stored
    if name == "statement_timeout":
        ms = {"5s": 5000, "2h": 7_200_000, "1440min": 86_400_000, "1.5s": 1500}
        assert s.statement_timeout_ms == (ms.get(value) or int(value.rstrip("ms")))


@pytest.mark.parametrize(("name", "value", "sqlstate"), [
    ("TimeZone", "Mars/Olympus", "22023"),
    ("extra_float_digits", "9", "22023"),
    ("server_version", "16", "55P02"),
    ("client_encoding", "LATIN1", "0A000"),
    ("fedgate.engine", "oracle", "22023"),
    ("statement_timeout", "25d", "22023"),  # beyond 2^31 - 1 ms, PostgreSQL's range
    ("statement_timeout", "soon", "22023"),
    # The gateway and every source connection read literals with standard strings.
    ("standard_conforming_strings", "off", "0A000"),
])
def test_set_rejects(name: str, value: str, sqlstate: str) -> None:
    s = SessionSettings.initial({"user": "u"}, ("demo",))
    with pytest.raises(PgError) as err:
        s.set(name, value)
    assert err.value.sqlstate == sqlstate


@pytest.mark.parametrize("startup", [
    {"user": "u", "standard_conforming_strings": "off"},
    {"user": "u", "options": "-c standard_conforming_strings=off"},
])
def test_standard_conforming_strings_off_is_refused_at_startup(startup: dict[str, str]) -> None:
    with pytest.raises(PgError) as err:
        SessionSettings.initial(startup, ("demo",))
    assert err.value.sqlstate == "0A000"


@pytest.mark.parametrize(("sql", "sqlstate", "message"), [
    ("select 1 // 0", "22012", "division by zero"),
    ("select * from nope", "42P01", 'relation "nope" does not exist'),
    ("select nope from (select 1 a) t", "42703", 'column "nope" does not exist'),
    ("selec 1", "42601", None),
    ("select 'x'::int", "22P02", 'invalid input syntax for type integer: "x"'),
    ("select 'x'::double", "22P02", 'invalid input syntax for type double precision: "x"'),
    ("select 'x'::decimal(10,2)", "22P02", 'invalid input syntax for type numeric: "x"'),
    ("select 'NaN'::decimal(10,2)", "0A000",
     "numeric value 'NaN' is not supported by fedgate outside PostgreSQL sources"),
    ("select '-Infinity'::decimal(38,10)", "0A000",
     "numeric value '-Infinity' is not supported by fedgate outside PostgreSQL sources"),
    ("select 'x'::date", "22007", 'invalid input syntax for type date: "x"'),
    ("select '99999999999'::int", "22003", 'value "99999999999" is out of range for type integer'),
    ("select a from (select 1 a) x, (select 2 a) y", "42702", 'column reference "a" is ambiguous'),
    ("select lenght('a')", "0A000",
     "function lenght() is not supported by fedgate outside PostgreSQL sources"),
    # PostgreSQL's functions and operators DuckDB lacks for these arguments: refused ...
    ("select length('a'::blob)", "0A000",
     "function length(bytea) is not supported by fedgate outside PostgreSQL sources"),
    ("select strftime(1.5, 'x')", "0A000",
     "function to_char(numeric, unknown) is not supported by fedgate outside PostgreSQL sources"),
    ("select octet_length('abc')", "0A000",
     "function octet_length(unknown) is not supported by fedgate outside PostgreSQL sources"),
    ("select '{}'::json @> '{}'", "0A000",
     "operator @> (jsonb, unknown) is not supported by fedgate outside PostgreSQL sources"),
    # ... arithmetic on text, which PostgreSQL lacks too, and names it does not have: 42883.
    ("select -('a'::varchar)", "42883", "operator does not exist: - text"),
    ("select 'a'::varchar * 2", "42883", "operator does not exist: text * integer"),
    ("select list_sort(1)", "42883", None),
    # integers beyond their type, the window offset, a date's field: PostgreSQL's words
    ("select 2147483647::int4 + 2::int4", "22003", "integer out of range"),
    ("select 32767::int2 * 2::int2", "22003", "smallint out of range"),
    ("select 9223372036854775807::int8 - (-1)::int8", "22003", "bigint out of range"),
    ("select 2147483648::int8::int4", "22003", "integer out of range"),
    ("select 'nan'::double::int8", "22003", "bigint out of range"),
    ("select 12345678901234567890.123::decimal(38,3)::int4", "22003", "integer out of range"),
    ("select sum(x) over (order by x range between -1 preceding and current row) from range(3) t(x)",
     "22013", "invalid preceding or following size in window function"),
    ("select '2024-13-01'::date", "22008", 'date/time field value out of range: "2024-13-01"'),
    ("select (select * from range(3))", "21000",
     "more than one row returned by a subquery used as an expression"),
])
def test_duckdb_errors_map_to_sqlstates(sql: str, sqlstate: str, message: str | None) -> None:
    con = duckdb.connect()
    with pytest.raises(duckdb.Error) as raised:
        con.sql(sql).fetchall()
    err = from_exception(raised.value)
    assert err.sqlstate == sqlstate
    if message is not None:
        assert err.message == message


def test_unknown_exception_is_internal_error() -> None:
    err = from_exception(RuntimeError("boom"))
    assert err.sqlstate == "XX000" and "boom" in err.message


def test_errors_raised_while_a_result_streams_keep_their_sqlstate() -> None:
    """DuckDB's error reaches Python as pyarrow's OSError when it happens while the rows
    stream through Arrow's C interface (which of the two depends on timing)."""
    message = ("Division by zero in expression (id // n). Use TRY(...) to return NULL for "
               "this expression, or SET error_on_division_by_zero=false to return NULL")
    err = from_exception(OSError(message))
    assert (err.sqlstate, err.message) == ("22012", "division by zero")
    err = from_exception(OSError("Could not convert string 'x' to INT32"))
    assert (err.sqlstate, err.message) == ("22P02", 'invalid input syntax for type integer: "x"')
    err = from_exception(OSError("Could not convert string 'n3' to INT32 when casting from source column name"))
    assert (err.sqlstate, err.message) == ("22P02", 'invalid input syntax for type integer: "n3"')
    assert from_exception(OSError("No such file or directory")).sqlstate == "XX000"
