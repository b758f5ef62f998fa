"""planner.function_check: the name a call is checked under is the one the client wrote."""

from __future__ import annotations

import pytest
import sqlglot

from pgwire.errors import PgError
from pgwire.function_names import NO_MATCH_HINT, POSTGRES_FUNCTIONS, SYNTAX_CALLS
from tests.support.planning import ENGINE_DIALECTS
from planner.function_check import called_name, check_functions


def _check(sql: str, allowed: frozenset[str] = POSTGRES_FUNCTIONS) -> None:
    check_functions(sqlglot.parse_one(sql, read="postgres"), sql, allowed)


def _refusal(sql: str, allowed: frozenset[str] = POSTGRES_FUNCTIONS) -> PgError:
    with pytest.raises(PgError) as caught:
        _check(sql, allowed)
    assert caught.value.sqlstate == "42883"
    assert caught.value.hint == NO_MATCH_HINT
    return caught.value


def test_postgres_list_is_postgresql_s() -> None:
    assert {"lower", "strpos", "generate_series", "string_agg", "row_number", "now",
            "pg_get_userbyid", "_pg_expandarray"} <= POSTGRES_FUNCTIONS
    assert not {"instr", "read_text", "read_csv", "glob", "getenv", "reflect",
                "java_method"} & POSTGRES_FUNCTIONS
    assert not SYNTAX_CALLS & {"read_text", "instr"}


def test_written_name_not_class_decides() -> None:
    # Both parse into StrPosition; PostgreSQL has strpos and not instr.
    _check("select strpos(a, 'b') from t")
    error = _refusal("select instr(a, 'b') from t")
    assert error.message == "function instr(unknown, unknown) does not exist"
    assert error.position == len("select ") + 1


@pytest.mark.parametrize("sql, name", [
    ("select now()", "now"),
    ("select substr(a, 1, 2) from t", "substr"),
    ("select lpad(a, 3) from t", "lpad"),
    ("select pg_catalog.upper(a) from t", "upper"),
    ('select "lower"(a) from t', "lower"),
    ("select LOWER(a) from t", "lower"),
    ("select coalesce(a, 1) from t", "coalesce"),
])
def test_called_name_reads_the_text(sql: str, name: str) -> None:
    tree = sqlglot.parse_one(sql, read="postgres")
    call = tree.expressions[0]
    call = call.expression if isinstance(call, sqlglot.exp.Dot) else call
    assert called_name(call, sql) == name


@pytest.mark.parametrize("sql", [
    "select current_date, current_timestamp, localtime, current_user, session_user",
    "select extract(year from d), trim(both 'x' from a), substring(a from 1 for 2), "
    "position('b' in a), overlay(a placing 'b' from 1) from t",
    "select cast(a as int), a::text, a || b, a ~ 'x', a like 'x%', not a, -a from t",
    "select case when a then 1 else 2 end, nullif(a, 1), greatest(a, 1), least(a, 2) from t",
    "select array[1, 2], row(1, 2), exists (select 1), a = any(array[1]) from t",
    "select string_agg(a, ',' order by a), count(*), sum(a) filter (where a > 1), "
    "row_number() over (order by a) from t",
    "select * from generate_series(1, 3) g, unnest(array[1]) u",
    "select d at time zone 'UTC', interval '1 day', date_trunc('day', d) from t",
])
def test_postgresql_forms_pass(sql: str) -> None:
    _check(sql)


@pytest.mark.parametrize("sql, message", [
    ("select * from read_text('/etc/passwd')", "function read_text(unknown) does not exist"),
    ("select read_text('/etc/passwd'::text)", "function read_text(text) does not exist"),
    ("select * from read_csv('/x', header := true)", None),
    ("select * from t, main.read_blob('/x') b", "function read_blob(unknown) does not exist"),
    ('select * from "read_parquet"(\'/x\')', "function read_parquet(unknown) does not exist"),
    ("select * from rows from (read_json('/x'))", "function read_json(unknown) does not exist"),
    ("select (select content from read_text('/x')) from t", None),
    ("with c as (select * from parquet_metadata('/x')) select * from c", None),
    ("select reflect('java.lang.System', 'getenv', 'HOME')",
     "function reflect(unknown, unknown, unknown) does not exist"),
    ("select java_method('java.lang.System', 'getenv', 1)",
     "function java_method(unknown, unknown, integer) does not exist"),
    ("select try_cast(a as int) from t", None),
    ("select arg_max(a, b) from t", "function arg_max(unknown, unknown) does not exist"),
    ("select a from t where a in (select getenv('HOME'))", None),
])
def test_engine_functions_are_refused(sql: str, message: str | None) -> None:
    error = _refusal(sql)
    if message is not None:
        assert error.message == message


def test_quoted_name_keeps_its_case() -> None:
    error = _refusal('select "LOWER"(a) from t')
    assert error.message == "function LOWER(unknown) does not exist"


def test_allowed_names_are_data() -> None:
    sql = "select pg_gateway_helper(1)"
    _refusal(sql)
    _check(sql, POSTGRES_FUNCTIONS | {"pg_gateway_helper"})


def _catalog():
    import pyarrow as pa

    from connectors.base import TableInfo, TableRef
    from connectors.dialects import duckdb as duckdb_dialect
    from planner.catalog import CatalogSnapshot, SourceEntry

    info = TableInfo(TableRef("s", "customers", remote_name="customers"),
                     pa.schema([("id", pa.int32()), ("name", pa.string())]))
    return CatalogSnapshot(1, {"s": SourceEntry("s", duckdb_dialect.DIALECT, {"customers": info})},
                           engine_dialects=ENGINE_DIALECTS)


@pytest.mark.parametrize("sql, message", [
    ("select instr(name, 'x') from customers", "function instr(text, unknown) does not exist"),
    ("select * from customers c, read_csv(c.name)", "function read_csv(text) does not exist"),
    ("select getenv(id) from customers", "function getenv(integer) does not exist"),
])
def test_plan_refuses_with_argument_types_from_the_catalog(sql: str, message: str) -> None:
    from planner import PlanSettings, plan

    with pytest.raises(PgError) as caught:
        plan(sql, _catalog(), PlanSettings(("s",)))
    assert (caught.value.sqlstate, caught.value.message) == ("42883", message)


def test_a_missing_table_is_reported_before_the_call() -> None:
    """As PostgreSQL, which resolves FROM first (and a PostgreSQL source may define the
    function, so the call's error waits for the tables)."""
    from planner import PlanSettings, plan

    with pytest.raises(PgError) as caught:
        plan("select instr(name, 'x') from nosuch", _catalog(), PlanSettings(("s",)))
    assert (caught.value.sqlstate, caught.value.message) == ("42P01", 'relation "nosuch" does not exist')


def test_plan_accepts_postgresql_functions() -> None:
    from planner import PlanSettings, plan

    query_plan = plan("select lower(name), strpos(name, 'c'), string_agg(name, ',') "
                      "from customers group by 1, 2", _catalog(), PlanSettings(("s",)))
    assert query_plan.fragments
