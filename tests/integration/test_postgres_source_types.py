"""bit, bit varying, time with time zone, money and the reg* types, as PostgreSQL has them.

A PostgreSQL source's columns of these types reach the gateway as PostgreSQL's text; they
are presented as the types they are (OID and name), and their values go out as
PostgreSQL's own bytes in text and in binary format (bit_send, timetz_send, cash_send,
regtype's OID), each compared byte for byte with a real PostgreSQL 15 over the
conformance tables (tests/conformance/world.py). The DuckDB engine (the Parquet copy)
has none of these types as PostgreSQL has them: it refuses them (0A000), never answers
otherwise. A row constructor's record (or array_agg of them) is answered by the
PostgreSQL source as PostgreSQL answers it, in text and in binary (each field's OID as
record_send writes it), over both the planner and the relay; the engine refuses it.
"""

from __future__ import annotations

import asyncpg
import psycopg
import pytest

from tests.conformance.world import World, conformance_world
from tests.support.answers import error_of

RELAY_OFF = ("SET fedgate.relay = off",)
# (arrays of them are decoded element by element with these codecs)
TYPES = ("bit", "varbit", "timetz", "money", "regtype", "regclass", "regproc", "regnamespace",
         "regprocedure", "oid")

# Over table t (the describe path) and without a table (a statement the source answers whole).
ANSWERED = {
    "bit_literals": "SELECT id, B'101', B'101'::bit(3), X'1F', B'' FROM t ORDER BY id",
    "bit_from_integers": "SELECT id, k::bit(12), CASE WHEN s IS NULL THEN NULL ELSE id::bit(32) END "
                         "FROM t ORDER BY 1",
    "varbit_and_operators": "SELECT id, B'1010101010'::varbit(12), B'101' & B'110', B'101' | B'010', "
                            "~B'1100', B'1011' << 1, length(B'10110'::varbit) FROM t ORDER BY id",
    "bit_varying_spelled": "SELECT id, '101'::bit varying, CAST('11' AS bit varying(5)) FROM t ORDER BY id",
    "timetz": "SELECT id, '12:00+02'::timetz, '08:15:30.25-05:30'::time with time zone, "
              "'23:59:59.999999+14'::timetz(3), '12:00+02'::timetz < '11:00+00'::timetz FROM t ORDER BY id",
    "money": "SELECT id, 12.5::money, (-1234.5)::money + 1.25::money, (id * 100)::money / 3, "
             "k::money FROM t ORDER BY id",
    "regtype": "SELECT id, 'int4'::regtype, 'bigint[]'::regtype, 'timestamptz'::regtype, "
               "'int4'::regtype::oid, 'int4'::regtype::text FROM t ORDER BY id",
    "oid_column": "SELECT id, id::oid FROM t ORDER BY 1",
    "arrays": "SELECT id, ARRAY[B'101', NULL], ARRAY['12:00+02'::timetz], ARRAY[12.5::money, NULL], "
              "ARRAY['int4'::regtype, 'float8'::regtype], '{101,11}'::varbit[] FROM t ORDER BY 1",
    "table_less_bit": "SELECT B'101'::bit(3), '101'::varbit",
    "table_less_timetz": "SELECT '12:00+02'::timetz",
    "table_less_money": "SELECT 12.5::money",
    "table_less_regtype": "SELECT 'int4'::regtype",
}
# The engine has no faithful counterpart: refused over the Parquet copy.
ENGINE_REFUSED = ["bit_literals", "bit_from_integers", "varbit_and_operators", "bit_varying_spelled",
                  "timetz", "money", "regtype", "arrays", "table_less_bit",
                  "table_less_timetz", "table_less_money"]


@pytest.fixture(scope="module")
def world(postgres_server, tmp_path_factory):
    with conformance_world(postgres_server, tmp_path_factory.mktemp("pg_types")) as world:
        yield world


async def _raw(dsn: str, sql: str, fmt: str, *setup: str) -> tuple[list, list, list]:
    """Names, type OIDs and each value's bytes as the server sent them in format `fmt`."""
    conn = await asyncpg.connect(dsn)
    try:
        for name in TYPES:
            await conn.set_type_codec(name, schema="pg_catalog", encoder=lambda v: v,
                                      decoder=lambda v: v, format=fmt)
        for statement in setup:
            await conn.execute(statement)
        prepared = await conn.prepare(sql)
        attributes = prepared.get_attributes()
        rows = [tuple(r.values()) for r in await prepared.fetch()]
        return [a.name for a in attributes], [a.type.oid for a in attributes], rows
    finally:
        await conn.close()


@pytest.mark.parametrize("fmt", ["text", "binary"])
@pytest.mark.parametrize("name", sorted(ANSWERED))
async def test_a_postgres_source_gives_postgres_bytes(world: World, name: str, fmt: str) -> None:
    sql = ANSWERED[name]
    want = await _raw(world.truth, sql, fmt)
    got = await _raw(world.pg_gateway.dsn, sql, fmt, *RELAY_OFF)
    assert got == want


# The OID of a relation or function is the source's own, unknown to the gateway: text
# format only, binary refused (0A000) rather than sent with an OID of the gateway's.
REGCLASS = "SELECT id, 't'::regclass, 'now'::regproc, 't'::regclass::oid > 0 FROM t ORDER BY id"


async def test_regclass_and_regproc_in_text_and_refused_in_binary(world: World) -> None:
    assert await _raw(world.pg_gateway.dsn, REGCLASS, "text", *RELAY_OFF) == \
        await _raw(world.truth, REGCLASS, "text")
    with pytest.raises(asyncpg.PostgresError) as refused:
        await _raw(world.pg_gateway.dsn, REGCLASS, "binary", *RELAY_OFF)
    assert refused.value.sqlstate == "0A000"
    assert (await error_of(world.parquet_gateway.dsn, REGCLASS)).sqlstate == "0A000"


@pytest.mark.parametrize("name", ENGINE_REFUSED)
async def test_the_engine_refuses(world: World, name: str) -> None:
    error = await error_of(world.parquet_gateway.dsn, ANSWERED[name])
    assert error.sqlstate == "0A000", str(error)


async def test_the_catalog_answers_a_regtype_as_a_regtype(world: World) -> None:
    """A table-less reg* cast is the emulated catalog's on both routes: named and typed
    as PostgreSQL's, its binary form the built-in type's OID."""
    for fmt in ("text", "binary"):
        want = await _raw(world.truth, ANSWERED["table_less_regtype"], fmt)
        assert await _raw(world.parquet_gateway.dsn, ANSWERED["table_less_regtype"], fmt) == want


async def test_the_catalog_answers_reg_types_as_themselves(world: World) -> None:
    """'t'::regclass without a table reads the gateway's catalog: typed and named as
    PostgreSQL's in text; its OID is the catalog's, so binary is refused. A function the
    emulated pg_proc lacks is refused, not said not to exist."""
    sql = "SELECT 't'::regclass, 'pg_catalog'::regnamespace, 'array_in'::regproc, 'array_in(cstring,oid,integer)'::regprocedure"
    for route in (world.pg_gateway.dsn, world.parquet_gateway.dsn):
        assert await _raw(route, sql, "text") == await _raw(world.truth, sql, "text")
        with pytest.raises(asyncpg.PostgresError) as refused:
            await _raw(route, sql, "binary")
        assert refused.value.sqlstate == "0A000"
        for missing in ("SELECT 'now'::regproc", "SELECT 'now()'::regprocedure"):
            assert (await error_of(route, missing)).sqlstate == "0A000"


# Row constructors: described as record / record[], each field's type in the binary form.
RECORDS = {
    "row_of_literals": "SELECT ROW(1, 'a')",  # 'a' and NULL are of type unknown in a row
    "row_of_typed_literals": "SELECT ROW('a'::text, NULL::int4, CASE WHEN true THEN 'b' END)",
    "implicit_row": "SELECT (1, 'a', NULL::int8, '') AS r",
    "rows_of_columns": "SELECT id, ROW(id, s, k) FROM t ORDER BY id",
    "rows_with_awkward_text": "SELECT ROW(s || ' ,()\"\\', 1.50::numeric(5,2), true, "
                              "'2024-01-01 10:00'::timestamp) FROM t ORDER BY id",
    "array_of_rows": "SELECT array_agg(ROW(id, s) ORDER BY id) FROM t",
    "array_of_rows_filtered": "SELECT array_agg((id, k) ORDER BY id) FILTER (WHERE id > 2) FROM t",
    "array_of_rows_of_literals": "SELECT array_agg(ROW('x', id, NULL) ORDER BY id) FROM t",
    "row_beside_a_typed_numeric": "SELECT ROW(id), 1.5::numeric(5,2), k::numeric(12,3) FROM t ORDER BY id",
    "array_of_rows_by_group": "SELECT k % 2, array_agg(ROW(id) ORDER BY id) FROM t GROUP BY 1 ORDER BY 1",
}
# Where the fields' types cannot be learnt: refused, not answered otherwise.
RECORDS_REFUSED = {
    "row_in_a_row": "SELECT ROW(1, ROW(2, 'b'))",
    "row_from_a_subquery": "SELECT (SELECT ROW(id, s) FROM t ORDER BY id LIMIT 1)",
}


def _records(dsn: str, sql: str, binary: bool, *setup: str) -> tuple[list, list]:
    """Type OIDs (and numeric typmods) and rows: in text, a simple Query (what psycopg
    sends for a statement without parameters); in binary, the extended protocol, where
    psycopg reads a record by the OIDs each value carries, so a wrong field OID reads as
    another value or fails."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in setup:
            conn.execute(statement)
        cursor = conn.cursor(binary=binary)
        cursor.execute(sql)
        return [(d.type_code, d.precision, d.scale) for d in cursor.description], cursor.fetchall()


@pytest.mark.parametrize("relay", ["relay_off", "relay_on"])
@pytest.mark.parametrize("fmt", ["text", "binary"])
@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_row_constructor_from_a_postgres_source(world: World, name: str, fmt: str,
                                                  relay: str) -> None:
    setup = RELAY_OFF if relay == "relay_off" else ()
    want = _records(world.truth, RECORDS[name], fmt == "binary")
    assert _records(world.pg_gateway.dsn, RECORDS[name], fmt == "binary", *setup) == want


@pytest.mark.parametrize("name", ["row_of_literals", "array_of_rows"])
async def test_asyncpg_reads_a_row_constructor(world: World, name: str) -> None:
    """asyncpg (binary, records as its Record tuples) prepared, relay on and off."""
    for setup in ((), RELAY_OFF):
        assert await _raw(world.pg_gateway.dsn, RECORDS[name], "binary", *setup) == \
            await _raw(world.truth, RECORDS[name], "binary")


@pytest.mark.parametrize("name", sorted(RECORDS_REFUSED))
async def test_a_record_of_unknown_fields_is_refused(world: World, name: str) -> None:
    error = await error_of(world.pg_gateway.dsn, RECORDS_REFUSED[name], *RELAY_OFF)
    assert error.sqlstate == "0A000", str(error)


async def test_the_engine_refuses_an_array_of_rows(world: World) -> None:
    error = await error_of(world.parquet_gateway.dsn, "SELECT array_agg(ROW(id, s)) FROM t")
    assert error.sqlstate == "0A000", str(error)


@pytest.mark.parametrize("route", ["pg", "parquet"])
async def test_current_time_is_refused_where_the_engine_computes_it(world: World, route: str) -> None:
    """current_time is a timetz, which the engine has not as PostgreSQL has it; being
    volatile, it is computed by the gateway's engine on the PostgreSQL route too."""
    dsn = world.pg_gateway.dsn if route == "pg" else world.parquet_gateway.dsn
    setup = RELAY_OFF if route == "pg" else ()
    error = await error_of(dsn, "SELECT id, current_time FROM t", *setup)
    assert error.sqlstate == "0A000", str(error)
