"""Drivers' own type introspection through the emulated catalog: asyncpg and psycopg 3.

asyncpg decodes a result column whose type it does not know built in (arrays such as
int4[] or text[] are resolved through pg_type: typelem, typarray, typreceive) by running
its introspection query; psycopg's `TypeInfo.fetch` reads pg_type with `::regtype`.
Also: session-dependent catalog answers (current_schemas, pg_stat_activity,
current_setting) and catalog refresh.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types import TypeInfo

from tests.compat.test_asyncpg import connect


async def test_asyncpg_int_and_text_arrays_and_json(gateway):
    conn = await connect(gateway)
    try:
        assert await conn.fetchval("select array[1,2]") == [1, 2]
        assert await conn.fetchval("select '{a,b}'::text[]") == ["a", "b"]
        assert await conn.fetchval("select array[1.5::float8]") == [1.5]
        assert await conn.fetchval("select '{\"a\": 1}'::json") == '{"a": 1}'
        assert await conn.fetchval("select $1::int[]", [3, 4]) == [3, 4]
        assert await conn.fetchval("select $1::text[]", ["x", None]) == ["x", None]
    finally:
        await conn.close()


async def test_asyncpg_introspection_query_itself(gateway):
    """The catalog answers asyncpg's type lookup for any OID, with the array element."""
    conn = await connect(gateway)
    try:
        rows = await conn.fetch(
            "select t.oid, t.typname, t.typelem, t.typarray, t.typreceive::text as recv, "
            "e.typname as elem from pg_catalog.pg_type t "
            "left join pg_catalog.pg_type e on e.oid = t.typelem "
            "where t.oid = any($1::oid[]) order by t.oid", [1007, 1009, 23])
        assert [(r["typname"], r["elem"]) for r in rows] == [
            ("int4", None), ("_int4", "int4"), ("_text", "text")]
        assert rows[0]["typarray"] == 1007
    finally:
        await conn.close()


def test_psycopg_typeinfo_fetch(gateway):
    with psycopg.connect(gateway.dsn, autocommit=True) as conn:
        for name, oid, array_oid in (("int4", 23, 1007), ("text", 25, 1009),
                                     ("numeric", 1700, 1231), ("jsonb", 3802, 3807)):
            info = TypeInfo.fetch(conn, name)
            assert info is not None, name
            assert (info.oid, info.array_oid) == (oid, array_oid)
        assert TypeInfo.fetch(conn, "no_such_type") is None


def test_psycopg_regtype_and_regclass(gateway):
    with psycopg.connect(gateway.dsn, autocommit=True) as conn:
        row = conn.execute("select 'int4'::regtype::oid, 'integer'::regtype::text, "
                           "'lineitem'::regclass::oid = (select oid from pg_class "
                           "where relname = 'lineitem')").fetchone()
        assert row == (23, "integer", True)
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("select 'no_such_table'::regclass")
        assert conn.execute("select 1").fetchone() == (1,)


def test_session_dependent_values(gateway):
    with psycopg.connect(gateway.dsn, autocommit=True, application_name="cat-a") as a, \
            psycopg.connect(gateway.dsn, autocommit=True, application_name="cat-b") as b:
        a.execute("set search_path = demo, public")
        assert a.execute("select current_schemas(true)").fetchone() == (["pg_catalog", "demo", "public"],)
        assert b.execute("select current_schemas(false)").fetchone() == (["demo"],)
        assert a.execute("select current_setting('application_name')").fetchone() == ("cat-a",)
        assert b.execute("select current_setting('application_name')").fetchone() == ("cat-b",)
        pid_a = a.execute("select pg_backend_pid()").fetchone()[0]
        assert pid_a == a.info.backend_pid
        rows = b.execute("select pid, application_name, state, query from pg_stat_activity "
                         "order by pid").fetchall()
        mine = {r[1]: r for r in rows}
        assert mine["cat-a"][0] == pid_a and mine["cat-a"][2] == "idle"
        assert mine["cat-b"][2] == "active" and "pg_stat_activity" in mine["cat-b"][3]
        with pytest.raises(psycopg.errors.UndefinedObject):
            a.execute("select current_setting('no.such_setting')")


def test_unqualified_catalog_names_resolve(gateway):
    with psycopg.connect(gateway.dsn, autocommit=True) as conn:
        assert conn.execute("select count(*) > 50 from pg_type").fetchone() == (True,)
        assert conn.execute("select count(*) from information_schema.tables "
                            "where table_schema = 'demo'").fetchone() == (8,)
        assert conn.execute("select typname from pg_type where oid = 16").fetchone() == ("bool",)
        # an oid column is described as oid (26), as PostgreSQL does
        cur = conn.execute("select oid from pg_class limit 1")
        assert cur.description[0].type_code == 26


async def test_catalog_refresh_follows_the_snapshot_version():
    """A new catalog version rebuilds pg_class (sources that gain tables show them)."""
    import pyarrow as pa

    from connectors.base import TableInfo, TableRef
    from connectors.dialects.duckdb import DIALECT
    from gateway.pg_catalog.mount import mount, with_catalog
    from planner import CatalogSnapshot, SourceEntry
    from tests.support.planning import ENGINE_DIALECTS

    def entry(names):
        return SourceEntry("shop", DIALECT, {n: TableInfo(TableRef("shop", n), pa.schema([("id", pa.int32())]))
                                             for n in names})

    sources, entries = {}, {"shop": entry(["a"])}
    catalog = await mount("fedgate", sources, entries, dict)
    first = CatalogSnapshot(1, entries, engine_dialects=ENGINE_DIALECTS)
    second = await with_catalog(CatalogSnapshot(2, {**first.sources, "shop": entry(["a", "b"])},
                                                engine_dialects=ENGINE_DIALECTS),
                                catalog)
    assert "pg_class" in second.sources["pg_catalog"].tables
    rows = catalog._runner.query_sync(
        "select relname from fg_pg.pg_class c join fg_pg.pg_namespace n "
        "on n.oid = c.relnamespace where nspname = 'shop' order by 1")
    assert rows["relname"].to_pylist() == ["a", "b"]
    await catalog.close()
