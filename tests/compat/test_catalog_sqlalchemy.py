"""SQLAlchemy 2's inspector (what Superset and Alembic use) over psycopg and asyncpg.

Schema names, table names, columns with their types, primary keys and has_table. The
demo has no primary keys, so `keyed_gateway` also mounts a small DuckDB file, written by
the fixture, whose tables declare them.
"""

from __future__ import annotations

import asyncio

import duckdb
import pytest
from sqlalchemy import create_engine, inspect
from sqlalchemy.ext.asyncio import create_async_engine

from tests.support.gateway_proc import start_gateway

SHOP_SQL = (
    "CREATE TABLE accounts (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
    "balance DECIMAL(12, 2))",
    "CREATE TABLE entries (account INTEGER, line INTEGER, amount DOUBLE, note VARCHAR, "
    "PRIMARY KEY (account, line))",
    "INSERT INTO accounts VALUES (1, 'alice', 10.50), (2, 'bob', 0)",
    "INSERT INTO entries VALUES (1, 1, 2.5, 'x'), (1, 2, 3.5, NULL)",
)


@pytest.fixture(scope="module")
def keyed_gateway(tmp_path_factory):
    """The gateway serving source `shop` (a DuckDB file with primary keys)."""
    workdir = tmp_path_factory.mktemp("keyed")
    with duckdb.connect(str(workdir / "shop.duckdb")) as con:
        for statement in SHOP_SQL:
            con.execute(statement)
    config = ('[catalog]\nsearch_path = ["shop"]\n\n'
              '[sources.shop]\nkind = "duckdb"\npath = "shop.duckdb"\n')
    proc = start_gateway(config, workdir)
    yield proc
    proc.stop()


def _url(gateway, driver: str) -> str:
    return f"postgresql+{driver}://fedgate@{gateway.host}:{gateway.port}/{gateway.database}"


def _inspect_all(inspector) -> dict:
    return {
        "schemas": inspector.get_schema_names(),
        "tables": inspector.get_table_names(schema="shop"),
        "default_tables": inspector.get_table_names(),
        "columns": [(c["name"], str(c["type"]), c["nullable"])
                    for c in inspector.get_columns("accounts", schema="shop")],
        "pk": inspector.get_pk_constraint("entries", schema="shop"),
        "pk_single": inspector.get_pk_constraint("accounts", schema="shop"),
        "has": (inspector.has_table("accounts", schema="shop"),
                inspector.has_table("nope", schema="shop"), inspector.has_table("entries")),
        "views": inspector.get_view_names(schema="shop"),
        "indexes": inspector.get_indexes("accounts", schema="shop"),
        "foreign_keys": inspector.get_foreign_keys("accounts", schema="shop"),
    }


def _check(found: dict) -> None:
    assert "shop" in found["schemas"] and "information_schema" in found["schemas"]
    assert not any(s.startswith("pg_") for s in found["schemas"])
    assert found["tables"] == ["accounts", "entries"]
    assert found["default_tables"] == ["accounts", "entries"]
    assert found["columns"] == [("id", "INTEGER", False), ("name", "TEXT", True),
                                ("balance", "NUMERIC(12, 2)", True)]
    assert found["pk"]["constrained_columns"] == ["account", "line"]
    assert found["pk"]["name"] == "entries_pkey"
    assert found["pk_single"]["constrained_columns"] == ["id"]
    assert found["has"] == (True, False, True)
    assert found["views"] == [] and found["foreign_keys"] == []
    assert found["indexes"] == []  # the primary key's index is not listed, as in PostgreSQL


def test_sqlalchemy_inspector_psycopg(keyed_gateway):
    engine = create_engine(_url(keyed_gateway, "psycopg"))
    try:
        with engine.connect() as conn:
            _check(_inspect_all(inspect(conn)))
    finally:
        engine.dispose()


def test_sqlalchemy_inspector_asyncpg(keyed_gateway):
    async def run() -> dict:
        engine = create_async_engine(_url(keyed_gateway, "asyncpg"))
        try:
            async with engine.connect() as conn:
                return await conn.run_sync(lambda sync: _inspect_all(inspect(sync)))
        finally:
            await engine.dispose()

    _check(asyncio.run(run()))


def test_sqlalchemy_demo_columns_have_types(gateway):
    engine = create_engine(_url(gateway, "psycopg"))
    try:
        columns = inspect(engine).get_columns("lineitem", schema="demo")
    finally:
        engine.dispose()
    types = {c["name"]: str(c["type"]) for c in columns}
    assert types["l_orderkey"] == "BIGINT"
    assert types["l_quantity"] == "NUMERIC(15, 2)"
    assert types["l_shipdate"] == "DATE"
    assert types["l_comment"] == "TEXT"
