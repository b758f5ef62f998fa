"""A whole-row reference, `SELECT t FROM t`, answered as PostgreSQL answers it.

Over a PostgreSQL source (relayed, or shipped whole with `fedgate.relay = off`) the value
is the table's row type in the gateway's own catalog: asyncpg decodes it into a Record
(it reads pg_type.typtype as "char" and the fields from pg_attribute), psycopg loads it
as a composite after CompositeInfo.fetch, its binary form is PostgreSQL's record_send
byte for byte and its text psql's. Compared with a real PostgreSQL 15 over the
conformance tables (tests/conformance/world.py). Over the Parquet copy, a row that is
an output column by itself is the file source's struct of it, described as the same row
type of the gateway's catalog (planner.whole_rows). Where the gateway cannot give the
same value (a row inside an expression on the engine's route, a field of an enum) it
refuses with 0A000. An array of rows (`array_agg(t)`) is answered as the row type's array
where PostgreSQL holds the table.
"""

from __future__ import annotations

import shutil
import struct
import subprocess

import asyncpg
import psycopg
import pytest
from psycopg.types.composite import CompositeInfo, register_composite

from tests.conformance.world import World, conformance_world
from tests.support.answers import assert_described_alike, error_of, execute

RELAY_OFF = ("SET fedgate.relay = off",)
ROUTES = {"relayed": (), "shipped": RELAY_OFF}
WHOLE_ROWS = "SELECT t FROM t ORDER BY id"


@pytest.fixture(scope="module")
def world(postgres_server, tmp_path_factory):
    with conformance_world(postgres_server, tmp_path_factory.mktemp("whole_row")) as world:
        yield world


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("sql", [WHOLE_ROWS, "SELECT t, id FROM t WHERE id IN (4, 6, 9) ORDER BY id",
                                 "SELECT u FROM u ORDER BY g NULLS FIRST, name",
                                 "SELECT (t).id, (t).s FROM t ORDER BY id",
                                 "SELECT t IS NULL, t = t FROM t ORDER BY id",
                                 "SELECT array_agg(t ORDER BY id) FROM t",
                                 "SELECT g, array_agg(u ORDER BY name) FROM u GROUP BY g ORDER BY g"])
async def test_asyncpg_reads_records(world: World, route: str, sql: str) -> None:
    await assert_described_alike(world.truth, world.pg_gateway.dsn, sql, *ROUTES[route])


PARQUET_ROWS = [WHOLE_ROWS, "SELECT t, id FROM t WHERE id IN (4, 6, 9) ORDER BY id",
                "SELECT u FROM u ORDER BY g NULLS FIRST, name", "SELECT t AS whole FROM t WHERE id = 6",
                "SELECT t FROM t, u WHERE t.g = u.g AND u.name = 'two' ORDER BY id"]


@pytest.mark.parametrize("sql", PARQUET_ROWS)
async def test_a_file_sources_rows(world: World, sql: str) -> None:
    """Over the Parquet copy: the file source's struct of the row, the same row type."""
    await assert_described_alike(world.truth, world.parquet_gateway.dsn, sql)


def _rows(dsn: str, setup: tuple[str, ...], *, binary: bool, composite: bool,
          sql: str = WHOLE_ROWS) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in setup:
            conn.execute(statement)
        if composite:
            register_composite(CompositeInfo.fetch(conn, "t"), conn)
        with conn.cursor(binary=binary) as cursor:
            cursor.execute(sql)
            return cursor.fetchall()


@pytest.mark.parametrize(("route", "sql"), [(route, sql) for route in sorted(ROUTES) for sql in (
    WHOLE_ROWS, "SELECT array_agg(t ORDER BY id) FROM t")] + [("parquet", WHOLE_ROWS)])
@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
@pytest.mark.parametrize("composite", [False, True], ids=["raw", "registered"])
def test_psycopg_text_binary_and_composite(world: World, route: str, binary: bool,
                                           composite: bool, sql: str) -> None:
    """Raw: record_out's (array_out's) text or record_send's (array_send's) bytes;
    registered: the fields' values."""
    gateway = world.parquet_gateway.dsn if route == "parquet" else world.pg_gateway.dsn
    got = _rows(gateway, ROUTES.get(route, ()), binary=binary, composite=composite, sql=sql)
    want = _rows(world.truth, (), binary=binary, composite=composite, sql=sql)
    if binary and not composite and sql != WHOLE_ROWS:
        # array_send names its element type: each catalog its own row type's OID
        # (test_an_array_of_rows_names_the_gateways_row_type)
        got, want = ([(_without_element_oid(value),) for (value,) in rows] for rows in (got, want))
    assert got == want


def _without_element_oid(value: bytes) -> bytes:
    return value[:8] + b"\0\0\0\0" + value[12:]


def test_an_array_of_rows_names_the_gateways_row_type(world: World) -> None:
    """Shipped, array_send's element type is the gateway catalog's row type of t (what a
    client finds in the gateway's pg_type), not the source's."""
    [(value,)] = _rows(world.pg_gateway.dsn, RELAY_OFF, binary=True, composite=False,
                       sql="SELECT array_agg(t ORDER BY id) FROM t")
    with psycopg.connect(world.pg_gateway.dsn, autocommit=True) as conn:
        row_type = conn.execute("SELECT to_regtype('t')::oid").fetchone()[0]
    assert struct.unpack_from("!I", value, 8)[0] == row_type


def test_psql_prints_the_record_text(world: World) -> None:
    psql = shutil.which("psql")
    assert psql, "psql is not on PATH (install postgresql-client)"

    def run(dsn: str, *setup: str) -> str:
        commands = [arg for s in (*setup, WHOLE_ROWS) for arg in ("-c", s)]
        return subprocess.run([psql, "-X", "-At", "-d", dsn, *commands], capture_output=True,
                              text=True, timeout=60, check=True).stdout

    want = run(world.truth)
    assert '(6,3,30,,0,"",2024-01-01,"2024-01-01 00:00:00.5",t)' in want
    assert run(world.pg_gateway.dsn) == want
    assert run(world.pg_gateway.dsn, *RELAY_OFF) == "SET\n" + want
    assert run(world.parquet_gateway.dsn) == want


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_the_catalog_has_the_row_type(world: World, route: str) -> None:
    """pg_class.reltype, pg_type (typtype "char" 'c', typrelid, its array) and
    to_regtype() agree as PostgreSQL's do."""
    sql = ("SELECT ty.typtype, ty.typcategory, c.relkind, ty.typrelid = c.oid, "
           "arr.typelem = ty.oid, to_regtype('t') = ty.oid, "
           "format_type(ty.oid, NULL), format_type(ty.typarray, NULL) "
           "FROM pg_class c JOIN pg_type ty ON ty.oid = c.reltype "
           "JOIN pg_type arr ON arr.oid = ty.typarray WHERE c.relname = 't'")
    await assert_described_alike(world.truth, world.pg_gateway.dsn, sql, *ROUTES[route])


async def test_a_relayed_row_is_described_with_the_gateways_oid(world: World) -> None:
    """Relayed as the source sent it, but described with the gateway catalog's OID of
    the row type, not the source's: the two differ once the gateway numbers a new table
    before t, and drivers still decode the row."""
    truth = await asyncpg.connect(world.truth)
    try:
        await truth.execute("CREATE TABLE a_first (x int)")
        source_oid = await truth.fetchval("SELECT 't'::regtype::oid")
    finally:
        await truth.close()
    gateway = await asyncpg.connect(world.pg_gateway.dsn)
    try:
        await gateway.fetch("SELECT * FROM a_first")  # the gateway reads its catalog again
        assert await gateway.fetchval("SELECT to_regtype('t')::oid") != source_oid
    finally:
        await gateway.close()
    await assert_described_alike(world.truth, world.pg_gateway.dsn, WHOLE_ROWS)
    for binary in (False, True):
        assert _rows(world.pg_gateway.dsn, (), binary=binary, composite=True) == \
            _rows(world.truth, (), binary=binary, composite=True)


@pytest.mark.parametrize("sql", [
    "SELECT array_agg(t) FROM t",  # an array of rows
    # DuckDB's struct of the row is NULL only when the row is: PostgreSQL's row of NULLs is
    "SELECT id FROM t WHERE t IS NOT NULL ORDER BY id",
    "SELECT (t).* FROM t",
])
async def test_the_engine_refuses(world: World, sql: str) -> None:
    """Over the Parquet copy (the engine's route), a row inside an expression: 0A000,
    never another answer."""
    assert (await error_of(world.parquet_gateway.dsn, sql)).sqlstate == "0A000"


async def test_what_the_source_cannot_give_alike_is_refused(world: World) -> None:
    """A row with a field of a type the gateway does not describe with the source's OID
    (an enum) would come back as a row of another type: 0A000 on the shipped route."""
    await execute(world.truth, "CREATE TYPE mood AS ENUM ('sad', 'happy')",
                  "CREATE TABLE moods (id int, m mood)", "INSERT INTO moods VALUES (1, 'sad')")
    error = await error_of(world.pg_gateway.dsn, "SELECT moods FROM moods", *RELAY_OFF)
    assert error.sqlstate == "0A000", str(error)
    assert "whole-row reference" in str(error)


async def test_field_errors_are_postgres_words(world: World) -> None:
    """A field a row lacks: 42703 in PostgreSQL's words on the engine's route."""
    for dsn, setup in ((world.truth, ()), (world.parquet_gateway.dsn, ())):
        error = await error_of(dsn, "SELECT x.nope FROM t x", *setup)
        assert (error.sqlstate, str(error)) == ("42703", "column x.nope does not exist")
