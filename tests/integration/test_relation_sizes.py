"""Relation sizes and view definitions from the emulated catalog, as the sources have them.

pg_relation_size, pg_table_size, pg_indexes_size, pg_total_relation_size and
pg_get_viewdef read, per query, what each source says now (gateway.pg_catalog.storage):
a PostgreSQL source's relations answer PostgreSQL's own numbers and view text, compared
here with a real PostgreSQL 15; a Parquet table its file's bytes; the catalog's own
relations NULL. By name ('t'), by OID over pg_class (as DBeaver asks), and live: rows
added to the source show in the next answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.world import World, conformance_world
from tests.support.answers import described, error_of, execute

RELAY_OFF = ("SET fedgate.relay = off",)
SIZES = ("SELECT pg_relation_size('t'), pg_total_relation_size('t'), pg_table_size('t'), "
         "pg_indexes_size('t'), pg_relation_size('t', 'main'), pg_relation_size('t', 'fsm'), "
         "pg_relation_size('t', 'vm'), pg_relation_size('t', 'init'), pg_relation_size('t', NULL)")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sizes")


@pytest.fixture(scope="module")
def world(postgres_server, root):
    with conformance_world(postgres_server, root) as world:
        yield world


async def test_sizes_of_a_postgres_table_are_postgres_own(world: World) -> None:
    want = await described(world.truth, SIZES)
    got = await described(world.pg_gateway.dsn, SIZES, *RELAY_OFF)
    assert (got.types, got.rows) == (want.types, want.rows)
    assert want.rows[0][0] == 8192  # one page: the statement above compares real numbers


async def test_sizes_are_live(world: World) -> None:
    """The catalog asks the source each time: a table that grew answers its new size."""
    await execute(world.truth, "CREATE TABLE grows (x int)")
    sql = "SELECT pg_relation_size('grows'), pg_total_relation_size('grows')"
    assert (await error_of(world.pg_gateway.dsn, "SELECT * FROM nothing_here", *RELAY_OFF)).sqlstate == "42P01"
    before = await described(world.pg_gateway.dsn, sql, *RELAY_OFF)  # a read of the catalog found it
    assert before.rows == (await described(world.truth, sql)).rows
    assert before.rows[0][0] == 0
    await execute(world.truth, "INSERT INTO grows SELECT generate_series(1, 5000)")
    after = await described(world.pg_gateway.dsn, sql, *RELAY_OFF)
    assert after.rows == (await described(world.truth, sql)).rows
    assert after.rows[0][0] > 8192


async def test_sizes_by_oid_over_pg_class(world: World) -> None:
    """As DBeaver lists tables: every row of pg_class with its size; the source's
    relations have PostgreSQL's numbers, the catalog's own NULL."""
    sql = ("SELECT c.relname::text, pg_total_relation_size(c.oid), pg_relation_size(c.oid), "
           "pg_table_size(c.oid), pg_indexes_size(c.oid) FROM pg_class c "
           "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = {} ORDER BY 1")
    got = await described(world.pg_gateway.dsn, sql.format("'pg'"), *RELAY_OFF)
    want = await described(world.truth, sql.format("'public'"))
    assert [r for r in got.rows if r[0] in ("t", "u")] == [r for r in want.rows if r[0] in ("t", "u")]
    system = await described(world.pg_gateway.dsn, sql.format("'pg_catalog'"), *RELAY_OFF)
    assert system.rows and all(r[1:] == (None, None, None, None) for r in system.rows)


async def test_view_definition_is_the_sources(world: World) -> None:
    await execute(world.truth, "CREATE VIEW small_ids AS SELECT id, s FROM t WHERE id < 3")
    assert (await error_of(world.pg_gateway.dsn, "SELECT * FROM not_yet_there", *RELAY_OFF)).sqlstate == "42P01"
    for sql in ("SELECT pg_get_viewdef('small_ids'::regclass)",
                "SELECT pg_get_viewdef('small_ids'::regclass, true)",
                "SELECT pg_get_viewdef('small_ids')",
                "SELECT pg_get_viewdef('t'::regclass)",
                "SELECT pg_relation_size('small_ids'), pg_total_relation_size('small_ids')"):
        want = await described(world.truth, sql)
        got = await described(world.pg_gateway.dsn, sql, *RELAY_OFF)
        assert (got.types, got.rows) == (want.types, want.rows), sql


async def test_a_parquet_table_is_its_file(world: World, root: Path) -> None:
    size = (root / "files" / "t.parquet").stat().st_size
    got = await described(world.parquet_gateway.dsn, SIZES)
    assert got.types == ["int8"] * 9
    assert got.rows == [(size, size, size, 0, size, 0, 0, 0, None)]
    assert (await described(world.parquet_gateway.dsn, "SELECT pg_get_viewdef('t'::regclass)")).rows == [(None,)]


@pytest.mark.parametrize("route", ["pg", "parquet"])
async def test_errors_are_postgres_own(world: World, route: str) -> None:
    dsn, setup = (world.pg_gateway.dsn, RELAY_OFF) if route == "pg" else (world.parquet_gateway.dsn, ())
    for sql, sqlstate in (("SELECT pg_relation_size('t', 'nofork')", "22023"),
                          ("SELECT pg_relation_size('nosuch')", "42P01")):
        want = await error_of(world.truth, sql)
        got = await error_of(dsn, sql, *setup)
        assert (got.sqlstate, str(got)) == (want.sqlstate, str(want)) == (sqlstate, str(want))


@pytest.mark.parametrize("sql", ["SELECT id, pg_relation_size('t') FROM t ORDER BY id",
                                 "SELECT id, pg_get_viewdef('t') FROM t ORDER BY id"])
async def test_beside_a_table(world: World, sql: str) -> None:
    """Over a PostgreSQL source's table the statement ships whole: PostgreSQL reads the
    name; over the Parquet copy the engine has no such function of its own (DuckDB's
    pg_get_viewdef look-alike read 't' as a bigint): refused."""
    want = await described(world.truth, sql)
    got = await described(world.pg_gateway.dsn, sql, *RELAY_OFF)
    assert (got.types, got.rows) == (want.types, want.rows)
    assert (await error_of(world.parquet_gateway.dsn, sql)).sqlstate == "0A000"
