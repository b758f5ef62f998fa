"""planner.access: hidden schemas and server-administration functions, refused by name."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from pgwire.errors import PgError
from planner.access import admin_calls, check_functions, check_schemas


def tables(sql: str) -> list[exp.Table]:
    return list(sqlglot.parse_one(sql, read="postgres").find_all(exp.Table))


@pytest.mark.parametrize("sql", [
    "SELECT * FROM wh.t", "SELECT * FROM WH.t", "SELECT * FROM fedgate.wh.t",
    "SELECT * FROM pg.a JOIN wh.missing ON true", "SELECT * FROM (SELECT * FROM wh.t) s",
])
def test_a_hidden_schema_is_refused(sql: str) -> None:
    with pytest.raises(PgError) as caught:
        check_schemas(tables(sql), frozenset({"wh"}))
    assert (caught.value.sqlstate, caught.value.message) == ("42501", "permission denied for schema wh")


def test_visible_and_unqualified_names_pass() -> None:
    check_schemas(tables('SELECT * FROM pg.a, b, "Wh".c'), frozenset({"wh"}))


@pytest.mark.parametrize(("sql", "called"), [
    ("SELECT pg_read_file('x') FROM t", ("pg_read_file",)),
    ("SELECT pg_catalog.PG_LS_DIR('.')", ("pg_ls_dir",)),
    ("SELECT query_to_xml('select 1', true, true, '')", ("query_to_xml",)),
    ("SELECT dblink_exec('c', 'x')", ("dblink_exec",)),
    ("SELECT lower(name), now() FROM t", ()),
])
def test_admin_calls_are_found_by_parsed_name(sql: str, called: tuple[str, ...]) -> None:
    assert admin_calls(sqlglot.parse_one(sql, read="postgres")) == called


def test_set_config_is_allowed_on_the_catalog_only() -> None:
    tree = sqlglot.parse_one("SELECT set_config('search_path', '', false)", read="postgres")
    check_functions(tree, {"pg_catalog"})
    with pytest.raises(PgError) as caught:
        check_functions(tree, {"pg"})
    assert (caught.value.sqlstate, caught.value.message) == (
        "42501", "permission denied for function set_config")
    # A comment or string is not a call.
    check_functions(sqlglot.parse_one("SELECT 'pg_read_file(x)' /* pg_ls_dir() */", read="postgres"), {"pg"})
