"""gateway.state.access: a user's access from [[users]], and PostgreSQL's wording of refusals."""

from __future__ import annotations

import pytest

from gateway.config import parse_config
from gateway.state.access import access_for, command_name, read_only_refused, schema_denied

SOURCES = {"wh": {"kind": "duckdb", "path": "w.duckdb"}, "pg": {"kind": "postgres", "dsn": "d"}}


def config(*users: dict):
    return parse_config({"sources": SOURCES, "catalog": {"search_path": ["pg"]},
                         "users": list(users)})


def test_a_listed_user_sees_its_sources_only() -> None:
    access = access_for(config({"name": "a", "sources": ["pg"], "read_only": True}), "a")
    assert access.sees("pg") and not access.sees("wh")
    assert access.hidden(["pg", "wh"]) == frozenset({"wh"})
    assert access.read_only and not access.admin


def test_star_sees_everything_and_roles_are_kept() -> None:
    access = access_for(config({"name": "a", "sources": ["*"], "admin": True,
                                "source_roles": {"pg": "a_ro"}}), "a")
    assert access.hidden(["pg", "wh"]) == frozenset()
    assert access.admin and access.source_roles == {"pg": "a_ro"}


def test_an_unlisted_name_sees_nothing_and_no_users_means_trust() -> None:
    assert access_for(config({"name": "a", "sources": ["*"]}), "zed").hidden(["pg"]) == {"pg"}
    trusted = access_for(parse_config({}), "anyone")
    assert trusted.visible is None and trusted.admin and not trusted.read_only


@pytest.mark.parametrize(("sql", "name"), [
    ("INSERT INTO t VALUES (1)", "INSERT"),
    ("/* c */ update t set a = 1", "UPDATE"),
    ("CREATE TABLE t (a int)", "CREATE TABLE"),
    ("CREATE UNIQUE INDEX i ON t (a)", "CREATE INDEX"),
    ("CREATE OR REPLACE VIEW v AS SELECT 1", "CREATE VIEW"),
    ("DROP TABLE t", "DROP TABLE"),
    ("COPY t FROM STDIN", "COPY FROM"),
    ("TRUNCATE t", "TRUNCATE"),
    ("WITH x AS (SELECT 'update') DELETE FROM t", "DELETE"),
])
def test_the_read_only_error_names_the_command_as_postgresql(sql: str, name: str) -> None:
    err = read_only_refused(sql)
    assert (err.sqlstate, err.message) == ("25006", f"cannot execute {name} in a read-only transaction")
    assert command_name(sql) == name


def test_schema_denied_wording() -> None:
    err = schema_denied("wh")
    assert (err.sqlstate, err.message) == ("42501", "permission denied for schema wh")
