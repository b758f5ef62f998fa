"""gateway.relay.respell: which qualifiers are respelled for the source, and nothing else."""

from __future__ import annotations

import pytest
import sqlglot

from gateway.relay.respell import respelled


def respell(sql: str, schema: str = "public") -> str | None:
    found = respelled(sql, sqlglot.parse_one(sql, read="postgres"), "pg", schema, "fedgate")
    return None if found is None else found.sql


@pytest.mark.parametrize("sql, remote", [
    ("SELECT abalance FROM pg.pgbench_accounts WHERE aid = 1",
     'SELECT abalance FROM "public".pgbench_accounts WHERE aid = 1'),
    ('SELECT abalance FROM "pg"."pgbench_accounts" WHERE aid = $1',
     'SELECT abalance FROM "public"."pgbench_accounts" WHERE aid = $1'),
    ("select a.x from FEDGATE.PG.T a where a.y = 'pg.t'",
     """select a.x from "public".T a where a.y = 'pg.t'"""),  # a string keeps its characters
    ("SELECT pg.t.x, fedgate.pg.t.y, pg.t.* FROM pg.t",
     'SELECT "public".t.x, "public".t.y, "public".t.* FROM "public".t'),
    # Calls keep the client's spelling: sqlglot would write CURRENT_TIMESTAMP and SUBSTRING,
    # and PostgreSQL names the columns after the call (now, substr).
    ("SELECT now(), substr(x, 1, 2), x !~ 'a' FROM pg.t",
     """SELECT now(), substr(x, 1, 2), x !~ 'a' FROM "public".t"""),
    ("UPDATE pg.t SET x = x + 1 FROM pg.u WHERE pg.u.id = t.id RETURNING pg.t.x",
     'UPDATE "public".t SET x = x + 1 FROM "public".u WHERE "public".u.id = t.id RETURNING "public".t.x'),
    ("SELECT * FROM pg.t JOIN other.t ON true", 'SELECT * FROM "public".t JOIN other.t ON true'),
])
def test_qualifiers_of_the_source_are_respelled(sql: str, remote: str) -> None:
    assert respell(sql) == remote


def test_the_remote_schema_is_quoted_as_sqlglot_renders_it() -> None:
    assert respell("SELECT * FROM pg.t", schema='Sales "EU"') == 'SELECT * FROM "Sales ""EU""".t'


@pytest.mark.parametrize("sql", [
    "SELECT * FROM other.pg.t",         # another database: PostgreSQL refuses it
    "SELECT pg.f(x) FROM pg.t",         # a function qualified with the source's name
    "SELECT x::pg.mytype FROM pg.t",    # a type
    'SELECT * FROM "PG".t',             # another schema (quoted names keep their case)
    "SELECT * FROM t",                  # nothing to respell
])
def test_what_respelling_does_not_reach_is_left_to_the_planner(sql: str) -> None:
    assert respell(sql) is None


def test_positions_map_back_into_the_client_text() -> None:
    sql = "SELECT nope FROM fedgate.pg.t WHERE pg.t.x = 1 AND zz = 2"
    found = respelled(sql, sqlglot.parse_one(sql, read="postgres"), "pg", "public", "fedgate")
    assert found is not None
    for word in ("nope", "t WHERE", ".t.x", "zz"):
        assert sql[found.position(found.sql.index(word) + 1) - 1:].startswith(word)
    assert found.position(found.sql.index('"public"') + 4) == sql.index("fedgate") + 1
