"""Delta Lake tables (kind = "delta") through the gateway: written by `deltalake` as users
write them, in a local folder and in a bucket of the S3 protocol server on 127.0.0.1
(tests/support/s3_server.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import shutil

import psycopg
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.support.answers import sqlstate_of
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.s3_server import S3Server, start_s3_server

ROWS = 40


@dataclass
class Deltas:
    gateway: GatewayProcess
    local: Path  # the folder of source `dl`
    s3: S3Server
    bucket: Path  # the bucket folder of source `ds3`


def _sales(first: int, count: int) -> pa.Table:
    ids = range(first, first + count)
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "region": pa.array(["eu" if i % 2 else "us" for i in ids]),
                     "amount": pa.array([i * 1.5 for i in ids], pa.float64()),
                     "day": pa.array([f"2024-01-{1 + i % 28:02d}" for i in ids]).cast(pa.string())})


@pytest.fixture(scope="module")
def deltas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deltas]:
    root = tmp_path_factory.mktemp("delta")
    local = root / "tables"
    # Version 0, then 1: two appends, each writing one file per region.
    write_deltalake(str(local / "sales"), _sales(0, ROWS), partition_by=["region"])
    write_deltalake(str(local / "sales"), _sales(ROWS, ROWS), mode="append",
                    partition_by=["region"])
    write_deltalake(str(local / "tiny"), pa.table({"k": pa.array([1, 2, 3], pa.int32())}))
    (local / "not_a_table").mkdir()
    s3 = start_s3_server(root / "store")
    bucket = s3.bucket("warehouse")
    write_deltalake(str(bucket / "delta" / "orders"),
                    pa.table({"o": pa.array([10, 20, 30], pa.int64()),
                              "status": ["open", "done", "open"]}), partition_by=["status"])
    config = (f'[catalog]\nsearch_path = ["dl"]\nrefresh_seconds = 0\n'
              f'[sources.dl]\nkind = "delta"\npath = "{local}"\n'
              f'[sources.ds3]\nkind = "delta"\n' + s3.config("s3://warehouse/delta/") +
              f'[sources.dbad]\nkind = "delta"\n'
              + s3.config("s3://warehouse/delta/", secret_access_key="not-the-secret") +
              f'[sources.dnob]\nkind = "delta"\n' + s3.config("s3://no-warehouse/"))
    gateway = start_gateway(config, root / "gw")
    try:
        yield Deltas(gateway, local, s3, bucket)
    finally:
        gateway.stop()
        s3.stop()


def _query(deltas: Deltas, sql: str) -> list[tuple]:
    with psycopg.connect(deltas.gateway.dsn, autocommit=True) as conn:
        return conn.execute(sql).fetchall()


def test_each_delta_table_is_a_table_with_postgres_types(deltas: Deltas) -> None:
    assert _query(deltas, "select table_name from information_schema.tables "
                          "where table_schema = 'dl' order by 1") == [("sales",), ("tiny",)]
    columns = _query(deltas, "select column_name, data_type from information_schema.columns "
                             "where table_schema = 'dl' and table_name = 'sales' "
                             "order by ordinal_position")
    assert dict(columns) == {"id": "bigint", "region": "text", "amount": "double precision",
                             "day": "text"}
    assert _query(deltas, "select count(*), sum(id) from sales") == [
        (2 * ROWS, sum(range(2 * ROWS)))]
    assert _query(deltas, "select k from tiny order by k") == [(1,), (2,), (3,)]


def test_filters_prune_files_by_partition_and_statistics(deltas: Deltas) -> None:
    sql = "select count(*) from sales where region = 'eu' and id < 10"
    assert _query(deltas, sql) == [(5,)]
    lines = [row[0].strip() for row in _query(deltas, f"EXPLAIN {sql}")]
    files = [line for line in lines if line.startswith("Files of dl.sales")]
    # Four files (two versions x two regions); the region keeps two, the id statistics
    # of the second append (ids 40-79) drop one of those.
    assert files == [files[0]] and "(version 1): 1 of 4 read, 3 skipped" in files[0], lines
    assert any("pushed exact" in line for line in lines), lines


def test_an_older_version_is_read_by_its_name(deltas: Deltas) -> None:
    assert _query(deltas, 'select count(*) from dl."sales@v0"') == [(ROWS,)]
    assert _query(deltas, 'select count(*) from "sales@v1"') == [(2 * ROWS,)]
    with pytest.raises(psycopg.errors.UndefinedTable):
        _query(deltas, 'select * from dl."sales@v9"')


def test_a_new_version_is_read_by_the_next_statement(deltas: Deltas) -> None:
    before = _query(deltas, "select count(*) from sales")[0][0]
    write_deltalake(str(deltas.local / "sales"), _sales(1000, 4), mode="append",
                    partition_by=["region"])
    assert _query(deltas, "select count(*) from sales") == [(before + 4,)]
    # The version named before the append does not move.
    assert _query(deltas, 'select count(*) from "sales@v0"') == [(ROWS,)]


def test_a_delta_table_in_the_bucket(deltas: Deltas) -> None:
    assert _query(deltas, "select o from ds3.orders where status = 'open' order by o") == [
        (10,), (30,)]
    lines = [row[0].strip() for row in _query(
        deltas, "EXPLAIN select o from ds3.orders where status = 'open'")]
    assert any(line.startswith("Files of ds3.orders (version 0): 1 of 2 read") for line in lines), \
        lines


def test_a_join_across_delta_sources(deltas: Deltas) -> None:
    rows = _query(deltas, "select t.k, o.o from dl.tiny t join ds3.orders o on o.o = t.k * 10 "
                          "order by t.k")
    assert rows == [(1, 10), (2, 20), (3, 30)]


@pytest.mark.parametrize(("source", "reason"), [
    ("dbad", "access denied"), ("dnob", "the bucket does not exist")])
def test_a_store_that_refuses_names_the_source(deltas: Deltas, source: str, reason: str) -> None:
    with pytest.raises(psycopg.errors.SqlclientUnableToEstablishSqlconnection) as caught:
        _query(deltas, f"select * from {source}.orders")
    message = str(caught.value)
    assert f'source "{source}" is unavailable' in message and reason in message, message
    assert "Traceback" not in deltas.gateway.log()
    assert _query(deltas, "select count(*) from ds3.orders") == [(3,)]


def test_a_move_appends_one_version_or_makes_a_table(deltas: Deltas) -> None:
    sales = deltas.local / "sales"
    with psycopg.connect(deltas.gateway.dsn, autocommit=True) as conn:
        before = conn.execute("select count(*) from sales").fetchone()[0]
        version = DeltaTable(str(sales)).version()
        cur = conn.execute("INSERT INTO dl.sales (id, region, amount) "
                           "SELECT g.i + 5000, 'eu', g.i * 1.5 FROM generate_series(1, 3) AS g(i)")
        assert cur.statusmessage == "INSERT 0 3"
        assert DeltaTable(str(sales)).version() == version + 1  # one commit
        assert conn.execute("select count(*) from sales").fetchone()[0] == before + 3
        assert conn.execute("select id, region, amount, day from sales where id > 5000 "
                            "order by id").fetchall() == [
            (5001, "eu", 1.5, None), (5002, "eu", 3.0, None), (5003, "eu", 4.5, None)]
        added = DeltaTable(str(sales)).file_uris()
        assert all("region=" in uri for uri in added)  # the table's partitioning kept
        # Conversions and failures commit nothing.
        assert sqlstate_of(conn, "INSERT INTO dl.sales (id, region) SELECT 'x', 'eu'") == "22P02"
        assert sqlstate_of(conn, "INSERT INTO dl.sales (id, region) SELECT region, region "
                               "FROM dl.sales") == "42804"
        assert sqlstate_of(conn, "INSERT INTO dl.sales (id, region) SELECT 1 / (20000 - g.i), 'eu' "
                               "FROM generate_series(1, 20000) AS g(i)") == "22012"
        assert conn.execute("INSERT INTO dl.sales (id) SELECT k FROM dl.tiny WHERE k < 0"
                            ).statusmessage == "INSERT 0 0"
        assert DeltaTable(str(sales)).version() == version + 1
        # What takes no writes.
        assert sqlstate_of(conn, 'INSERT INTO dl."sales@v0" (id) SELECT 1') == "0A000"
        assert sqlstate_of(conn, "INSERT INTO ds3.orders SELECT 40, 'open'") == "0A000"
        assert sqlstate_of(conn, "INSERT INTO dl.nothing SELECT 1") == "42P01"
        conn.execute("BEGIN")
        assert sqlstate_of(conn, "INSERT INTO dl.sales (id) SELECT 1") == "0A000"
        conn.execute("ROLLBACK")
        # CREATE TABLE AS makes a table of one version.
        try:
            cur = conn.execute("CREATE TABLE dl.made AS SELECT k, k * 2 AS twice FROM dl.tiny")
            assert cur.statusmessage == "SELECT 3"
            assert DeltaTable(str(deltas.local / "made")).version() == 0
            assert conn.execute("select sum(twice) from dl.made").fetchone()[0] == 12
            assert sqlstate_of(conn, "CREATE TABLE dl.made AS SELECT 1 AS k") == "42P07"
            assert conn.execute("INSERT INTO dl.made VALUES (4, 8)").statusmessage == "INSERT 0 1"
            assert conn.execute("select sum(twice) from dl.made").fetchone()[0] == 20
        finally:
            shutil.rmtree(deltas.local / "made", ignore_errors=True)
