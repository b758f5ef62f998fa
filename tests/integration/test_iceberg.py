"""Apache Iceberg tables (kind = "iceberg") through the gateway: a SQL catalog over SQLite
with a local warehouse, written by pyiceberg as users write it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from tests.support.answers import sqlstate_of
from tests.support.gateway_proc import GatewayProcess, start_gateway


@dataclass
class Warehouse:
    gateway: GatewayProcess
    catalog: SqlCatalog
    snapshots: list[int]  # of sales.orders, oldest first


def _orders(first: int, count: int, region: str) -> pa.Table:
    return pa.table({"id": pa.array(range(first, first + count), pa.int64()),
                     "region": pa.array([region] * count, pa.string())})


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    root = tmp_path_factory.mktemp("iceberg")
    catalog = SqlCatalog("shop", uri=f"sqlite:///{root}/catalog.db",
                         warehouse=f"file://{root}/warehouse")
    catalog.create_namespace("sales")
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "region", StringType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000,
                                        transform=IdentityTransform(), name="region"))
    orders = catalog.create_table("sales.orders", schema=schema, partition_spec=spec)
    orders.append(_orders(0, 10, "eu"))
    orders.append(_orders(100, 10, "us"))
    orders.append(_orders(200, 10, "eu"))
    snapshots = [s.snapshot_id for s in catalog.load_table("sales.orders").snapshots()]
    catalog.create_table("sales.empty", schema=schema)
    config = (f'[catalog]\nsearch_path = ["ice"]\nrefresh_seconds = 0\n'
              f'[sources.ice]\nkind = "iceberg"\ncatalog_uri = "sqlite:///catalog.db"\n'
              f'catalog_name = "shop"\nnamespace = "sales"\nwarehouse = "file://{root}/warehouse"\n'
              f'[sources.bare]\nkind = "iceberg"\ncatalog_uri = "sqlite:///catalog.db"\n'
              f'catalog_name = "shop"\nnamespace = "sales"\n'
              f'[sources.nons]\nkind = "iceberg"\ncatalog_uri = "sqlite:///catalog.db"\n'
              f'catalog_name = "shop"\nnamespace = "nowhere"\n')
    # The catalog's relative path is relative to the configuration file's folder.
    gw_dir = root
    gateway = start_gateway(config, gw_dir)
    try:
        yield Warehouse(gateway, catalog, snapshots)
    finally:
        gateway.stop()


def _query(warehouse: Warehouse, sql: str) -> list[tuple]:
    with psycopg.connect(warehouse.gateway.dsn, autocommit=True) as conn:
        return conn.execute(sql).fetchall()


def test_the_namespace_tables_with_postgres_types(warehouse: Warehouse) -> None:
    assert _query(warehouse, "select table_name from information_schema.tables "
                             "where table_schema = 'ice' order by 1") == [("empty",), ("orders",)]
    assert _query(warehouse, "select column_name, data_type from information_schema.columns "
                             "where table_schema = 'ice' and table_name = 'orders' "
                             "order by ordinal_position") == [("id", "bigint"), ("region", "text")]
    assert _query(warehouse, "select count(*), sum(id) from orders") == [
        (30, sum(range(10)) + sum(range(100, 110)) + sum(range(200, 210)))]
    assert _query(warehouse, "select count(*) from empty") == [(0,)]


def test_filters_plan_fewer_files(warehouse: Warehouse) -> None:
    sql = "select count(*) from orders where region = 'eu' and id >= 200"
    assert _query(warehouse, sql) == [(10,)]
    lines = [row[0].strip() for row in _query(warehouse, f"EXPLAIN {sql}")]
    files = [line for line in lines if line.startswith("Files of ice.orders")]
    # Three files, one per append: the region prunes the "us" file by partition, the id
    # statistics the first "eu" one.
    assert len(files) == 1 and ": 1 of 3 read, 2 skipped by the Iceberg filter" in files[0], lines


def test_a_self_join_reads_the_rows_twice(warehouse: Warehouse) -> None:
    assert _query(warehouse, "select count(*) from orders a join orders b on a.id = b.id") == [
        (30,)]


def test_an_older_snapshot_by_its_name(warehouse: Warehouse) -> None:
    first = warehouse.snapshots[0]
    assert _query(warehouse, f'select count(*) from ice."orders@s{first}"') == [(10,)]
    with pytest.raises(psycopg.errors.UndefinedTable):
        _query(warehouse, 'select count(*) from ice."orders@s12345"')


def test_a_new_snapshot_is_read_by_the_next_statement(warehouse: Warehouse) -> None:
    warehouse.catalog.load_table("sales.orders").append(_orders(300, 5, "us"))
    assert _query(warehouse, "select count(*) from orders where id >= 300") == [(5,)]
    first = warehouse.snapshots[0]
    assert _query(warehouse, f'select count(*) from ice."orders@s{first}"') == [(10,)]


def test_a_missing_namespace_names_the_source(warehouse: Warehouse) -> None:
    with pytest.raises(psycopg.errors.SqlclientUnableToEstablishSqlconnection) as caught:
        _query(warehouse, "select * from nons.orders")
    message = str(caught.value)
    assert 'source "nons" is unavailable' in message and "nowhere" in message, message
    assert "Traceback" not in warehouse.gateway.log()


def test_a_catalog_database_that_cannot_be_read_mounts_the_source_down(tmp_path: Path) -> None:
    """A catalog database without Iceberg's tables (or not there at all): the gateway
    starts, the source is down with the reason, and the gateway writes nothing into it."""
    empty = tmp_path / "not_a_catalog.db"
    gateway = start_gateway(f'[sources.ice]\nkind = "iceberg"\ncatalog_uri = "sqlite:///{empty}"\n'
                            f'namespace = "sales"\n', tmp_path / "gw")
    try:
        with psycopg.connect(gateway.dsn, autocommit=True) as conn:
            with pytest.raises(psycopg.errors.SqlclientUnableToEstablishSqlconnection) as caught:
                conn.execute("select * from ice.orders")
        assert "its catalog cannot be read" in str(caught.value), str(caught.value)
        assert "Traceback" not in gateway.log()
    finally:
        gateway.stop()
    with sqlite3.connect(empty) as con:
        assert con.execute("select count(*) from sqlite_master").fetchone() == (0,)


@pytest.mark.parametrize("table", ["orders", "empty"])  # partitioned, and not
def test_a_move_appends_in_one_commit(warehouse: Warehouse, table: str) -> None:
    def snapshots() -> int:
        return len(warehouse.catalog.load_table(f"sales.{table}").history())
    with psycopg.connect(warehouse.gateway.dsn, autocommit=True) as conn:
        before = conn.execute(f"select count(*) from {table}").fetchone()[0]
        commits = snapshots()
        cur = conn.execute(f"INSERT INTO ice.{table} (id, region) "
                           "SELECT g.i + 5000, 'ap' FROM generate_series(1, 3) AS g(i)")
        assert cur.statusmessage == "INSERT 0 3"
        assert snapshots() == commits + 1
        assert conn.execute(f"select count(*) from {table}").fetchone()[0] == before + 3
        assert conn.execute(f"select id, region from {table} where id > 5000 order by id"
                            ).fetchall() == [(5001, "ap"), (5002, "ap"), (5003, "ap")]
        assert conn.execute(f"INSERT INTO ice.{table} (id) VALUES (6000)").statusmessage == "INSERT 0 1"
        assert conn.execute(f"select region from {table} where id = 6000").fetchone() == (None,)
        commits = snapshots()
        # Conversions and failures commit nothing; neither does an empty INSERT.
        assert sqlstate_of(conn, f"INSERT INTO ice.{table} (id) SELECT 'x'") == "22P02"
        assert sqlstate_of(conn, f"INSERT INTO ice.{table} (id) SELECT region FROM ice.orders") == "42804"
        assert sqlstate_of(conn, f"INSERT INTO ice.{table} (id) SELECT 1 / (20000 - g.i) "
                               "FROM generate_series(1, 20000) AS g(i)") == "22012"
        assert conn.execute(f"INSERT INTO ice.{table} (id) SELECT id FROM ice.orders WHERE id < 0"
                            ).statusmessage == "INSERT 0 0"
        assert snapshots() == commits
        assert sqlstate_of(conn, f'INSERT INTO ice."{table}@s{warehouse.snapshots[0]}" (id) SELECT 1') \
            == "0A000"
        conn.execute("BEGIN")
        assert sqlstate_of(conn, f"INSERT INTO ice.{table} (id) SELECT 1") == "0A000"
        conn.execute("ROLLBACK")
        assert snapshots() == commits


def test_create_table_as_makes_an_iceberg_table_with_its_rows(warehouse: Warehouse) -> None:
    with psycopg.connect(warehouse.gateway.dsn, autocommit=True) as conn:
        try:
            cur = conn.execute("CREATE TABLE ice.made AS SELECT id, region, id * 2 AS twice "
                               "FROM ice.orders WHERE id < 5")
            assert cur.statusmessage == "SELECT 5"
            made = warehouse.catalog.load_table("sales.made")
            assert len(made.history()) == 1  # the table and its rows: one commit
            assert conn.execute("select sum(twice) from ice.made").fetchone()[0] == 20
            assert sqlstate_of(conn, "CREATE TABLE ice.made AS SELECT 1 AS id") == "42P07"
            assert sqlstate_of(conn, "INSERT INTO ice.nothing SELECT 1") == "42P01"
            assert sqlstate_of(conn, "CREATE TABLE bare.made2 AS SELECT 1 AS id") == "0A000"
            failing = ("CREATE TABLE ice.unmade AS SELECT 1 / (20000 - g.i) AS q "
                       "FROM generate_series(1, 20000) AS g(i)")
            assert sqlstate_of(conn, failing) == "22012"
            assert not warehouse.catalog.table_exists("sales.unmade")
        finally:
            if warehouse.catalog.table_exists("sales.made"):
                warehouse.catalog.drop_table("sales.made")
