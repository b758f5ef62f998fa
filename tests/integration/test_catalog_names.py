"""The system catalog's `name` columns answered as PostgreSQL answers them.

`SELECT relname FROM pg_class` is of type `name` (OID 19) in PostgreSQL; the gateway's
catalog stores such columns as text, which is what its engine reads, and describes a
column that is one of them (directly, through a subquery or CTE, or as coalesce, NULLIF,
CASE, array_agg of it) as `name`, and any function of it (upper, ||, max) as text, as
PostgreSQL resolves them. Compared with a real PostgreSQL 15 on rows both catalogs hold
(the built-in types), through asyncpg's extended protocol and psycopg's simple Query.
"""

from __future__ import annotations

import pytest

from tests.conformance.world import World, conformance_world
from tests.support.answers import assert_described_alike, simple

STATEMENTS = [
    "SELECT typname, t.typname AS n FROM pg_catalog.pg_type t WHERE oid IN (16, 23) ORDER BY 1",
    "SELECT upper(typname), typname || '!', max(typname), typname::text FROM pg_type WHERE oid = 25 "
    "GROUP BY typname",
    "SELECT coalesce(typname, 'x'), nullif(typname, 'x'), CASE WHEN oid = 25 THEN typname "
    "ELSE 'other' END FROM pg_type WHERE oid = 25",
    "SELECT array_agg(typname ORDER BY typname) FROM pg_type WHERE oid IN (16, 23)",
    "SELECT x.n FROM (SELECT typname AS n FROM pg_type WHERE oid = 16) x",
    "SELECT n.nspname FROM pg_namespace n WHERE n.nspname = 'pg_catalog'",
]


@pytest.fixture(scope="module")
def world(postgres_server, tmp_path_factory):
    with conformance_world(postgres_server, tmp_path_factory.mktemp("catalog_names")) as world:
        yield world


@pytest.mark.parametrize("sql", STATEMENTS)
async def test_described_as_postgres_describes_them(world: World, sql: str) -> None:
    await assert_described_alike(world.truth, world.pg_gateway.dsn, sql)


@pytest.mark.parametrize("sql", STATEMENTS[:2])
def test_text_protocol_types(world: World, sql: str) -> None:
    assert simple(world.parquet_gateway.dsn, sql) == simple(world.truth, sql)
