"""Spark reads the sources itself: JDBC (partitioned on a key range) and spark.read.

A gateway with `spark_reads_sources = "always"` and small partitions serves a federated
schema: `orders` in PostgreSQL (statement log on for its database), `customers` in
MariaDB (general log on, a password-protected user) and `items` as Parquet. The proof
that Spark read a fragment itself, in parallel, is in the sources' own logs: each shows
Spark's partition queries, the fragment SQL wrapped with one key range per partition;
the Parquet file's statement log stays empty for Spark's reads, and EXPLAIN ANALYZE says
how every fragment was read. Answers equal the Arrow-handover path (the same gateway's
DuckDB engine, whose fragments the gateway streams itself) and DuckDB over the same rows.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import asyncmy
import asyncpg
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connectors.engines.spark_jdbc import (
    DirectRead,
    ReadSettings,
    SourceCatalog,
    jdbc_target,
    plan_read,
)
from connectors.engines.spark_literals import Unbindable, bind
from connectors.mysql.source import MySQLSource
from connectors.postgres.source import PostgresSource
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.mariadb import MariaDBServer, start_mariadb
from tests.support.postgres import PostgresServer, new_database

ORDERS = 20_000
CUSTOMERS = 3_000
PASSWORD = "Pw-s3cret-42"
DATABASE = "fedgate_spark_jdbc"


def _orders() -> pa.Table:
    ids = list(range(1, ORDERS + 1))
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "cust": pa.array([i % CUSTOMERS + 1 for i in ids], pa.int32()),
                     "total": pa.array([Decimal(i * 37 % 100_000) / 100 for i in ids], pa.decimal128(10, 2)),
                     "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 366) for i in ids]),
                     "note": ["it's" if i % 10 == 0 else "plain" for i in ids]})


def _customers() -> pa.Table:
    ids = list(range(1, CUSTOMERS + 1))
    return pa.table({"id": pa.array(ids, pa.int32()), "name": [f"c{i}" for i in ids],
                     "tier": ["gold" if i % 3 == 0 else "basic" for i in ids]})


def _items() -> pa.Table:
    n = ORDERS // 2
    return pa.table({"order_id": pa.array([i * 2 for i in range(1, n + 1)], pa.int64()),
                     "qty": pa.array([i % 7 + 1 for i in range(n)], pa.int32())})


@dataclass
class Setup:
    gateway: GatewayProcess
    postgres: PostgresServer
    mariadb: MariaDBServer
    files_log: Path
    reference: duckdb.DuckDBPyConnection
    pg_dsn: str


async def _load_postgres(server: PostgresServer) -> str:
    dsn = await new_database(server, DATABASE, "log_statement = 'all'")
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE TABLE orders (id bigint PRIMARY KEY, cust int, "
                           "total numeric(10, 2), day date, note text)")
        await conn.copy_records_to_table("orders", records=[tuple(r.values()) for r in _orders().to_pylist()])
        await conn.execute("ANALYZE orders")
    finally:
        await conn.close()
    return dsn


async def _load_mariadb(server: MariaDBServer) -> str:
    conn = await asyncmy.connect(host=server.host, port=server.port, user="root", autocommit=True)
    try:
        async with conn.cursor() as cur:
            await cur.execute("CREATE DATABASE crm CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
            await cur.execute("CREATE TABLE crm.customers (id int PRIMARY KEY, name varchar(40), "
                              "tier varchar(10))")
            await cur.executemany("INSERT INTO crm.customers VALUES (%s, %s, %s)",
                                  [tuple(r.values()) for r in _customers().to_pylist()])
            await cur.execute("ANALYZE TABLE crm.customers")
            await cur.execute(f"CREATE USER 'fed'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'")
            await cur.execute("GRANT SELECT ON crm.* TO 'fed'@'127.0.0.1'")
    finally:
        conn.close()
    return f"mysql://fed:{PASSWORD}@{server.host}:{server.port}/crm"


@pytest.fixture(scope="module")
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("spark_jdbc")
    pg_dsn = asyncio.run(_load_postgres(postgres_server))
    mariadb = start_mariadb()
    try:
        my_dsn = asyncio.run(_load_mariadb(mariadb))
        (root / "files").mkdir()
        pq.write_table(_items(), root / "files" / "items.parquet", row_group_size=2_000)
        files_log = root / "files.log"
        gateway = start_gateway(
            '[catalog]\nsearch_path = ["pg", "crm", "files"]\n'
            '[engine]\ndefault = "spark"\nspark_reads_sources = "always"\n'
            "spark_partition_rows = 1000\n"
            f'[sources.pg]\nkind = "postgres"\ndsn = "{pg_dsn}"\n'
            f'[sources.crm]\nkind = "mysql"\ndsn = "{my_dsn}"\n'
            f'[sources.files]\nkind = "parquet"\npath = "{root / "files"}"\n'
            f'statement_log = "{files_log}"\n', root / "gw")
        reference = duckdb.connect()
        for name, table in (("orders", _orders()), ("customers", _customers()), ("items", _items())):
            reference.register(name, table)
        try:
            yield Setup(gateway, postgres_server, mariadb, files_log, reference, pg_dsn)
        finally:
            gateway.stop()
    finally:
        mariadb.stop()


@pytest.fixture(scope="module")
async def conn(setup: Setup) -> asyncpg.Connection:
    connection = await asyncpg.connect(setup.gateway.dsn, command_timeout=300)
    # Dynamic filtering reads the small side in the gateway first (its keys narrow the
    # other side): off here, so every fragment is Spark's to read.
    await connection.execute("SET fedgate.dynamic_filtering = off")
    yield connection
    await connection.close()


CROSS = ("select c.tier, count(*), sum(o.total) from pg.orders o join crm.customers c on o.cust = c.id "
         "where o.day >= date '2024-03-01' group by c.tier order by c.tier")
THREE = ("select c.tier, sum(i.qty), count(distinct o.id) from pg.orders o "
         "join crm.customers c on o.cust = c.id join files.items i on i.order_id = o.id "
         "where i.qty > 2 group by c.tier order by c.tier")
PARAMS = ("select count(*), sum(o.total) from pg.orders o join crm.customers c on o.cust = c.id "
          "where o.note <> $1 and o.id > $2 and c.tier = 'gold'")


async def _both(conn: asyncpg.Connection, sql: str, *args: object) -> tuple[list[tuple], list[tuple]]:
    """The answer on Spark (reading the sources itself) and on DuckDB (handed over)."""
    spark = [tuple(r.values()) for r in await conn.fetch(sql, *args)]
    await conn.execute("SET fedgate.engine = 'duckdb'")
    try:
        handed = [tuple(r.values()) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.execute("SET fedgate.engine = 'spark'")
    return spark, handed


def _partition_queries(log: str, marker: str) -> list[str]:
    return [line for line in log.splitlines() if "fedgate_q" in line and marker in line]


@pytest.mark.spark
async def test_jdbc_reads_are_partitioned_on_the_key_and_match_the_arrow_path(setup: Setup, conn) -> None:
    spark, handed = await _both(conn, CROSS)
    want = setup.reference.sql(CROSS.replace("pg.", "").replace("crm.", "")).fetchall()
    assert spark == handed == want

    lines = [r[0] for r in await conn.fetch("explain analyze " + CROSS)]
    reads = "\n".join(line for line in lines if line.startswith("Read "))
    assert re.search(r"Read frag_\d on pg: by spark itself, JDBC jdbc:postgresql://\S+, "
                     r"\d+ partitions on orders.id in \[1, 20000\]", reads), reads
    assert re.search(r"Read frag_\d on crm: by spark itself, JDBC jdbc:mysql://\S+, "
                     r"\d+ partitions on customers.id in \[1, 3000\]", reads), reads

    # PostgreSQL's statement log: Spark's partition queries, one key range each.
    # orders' fragment does not output its key, so it gains one to split on.
    pg = _partition_queries(setup.postgres.log(), '"orders"')
    assert any(re.search(r'"fedgate_key" < \d+ or "fedgate_key" is null', q) for q in pg), pg[-5:]
    assert any(re.search(r'"fedgate_key" >= \d+', q) for q in pg), pg[-5:]
    # MariaDB's general log: the same, with backquoted names (Spark's MySQL dialect).
    my = _partition_queries(setup.mariadb.general_log.read_text(errors="replace"), "customers")
    assert any(re.search(r"`id` < \d+ or `id` is null", q) for q in my), my[-5:]
    assert any(re.search(r"`id` >= \d+", q) for q in my), my[-5:]


@pytest.mark.spark
async def test_parquet_fragment_is_read_by_spark_read(setup: Setup, conn) -> None:
    logged_before = setup.files_log.read_text() if setup.files_log.exists() else ""
    spark = [tuple(r.values()) for r in await conn.fetch(THREE)]
    # The gateway's own file reader logs every statement it runs: it only described the
    # fragment's columns (LIMIT 0, for the client's Describe); Spark read the rows.
    logged_after = setup.files_log.read_text() if setup.files_log.exists() else ""
    new = logged_after[len(logged_before):].splitlines()
    assert all(line.endswith("LIMIT 0") for line in new), new
    want = setup.reference.sql(THREE.replace("pg.", "").replace("crm.", "").replace("files.", "")).fetchall()
    assert spark == want
    lines = [r[0] for r in await conn.fetch("explain analyze " + THREE)]
    assert any(re.match(r"Read frag_\d on files: by spark itself, spark\.read\.parquet of items\.parquet", x)
               for x in lines), lines


@pytest.mark.spark
async def test_parameters_are_bound_as_literals(setup: Setup, conn) -> None:
    spark, handed = await _both(conn, PARAMS, "it's", 15_000)
    want = setup.reference.execute(PARAMS.replace("pg.", "").replace("crm.", ""),
                                   ["it's", 15_000]).fetchall()
    assert spark == handed == want
    # Spark's partition queries carry the values as literals; the quote is doubled inside
    # the string literal, never loose in the SQL text.
    pg = _partition_queries(setup.postgres.log(), "(15000)")
    assert pg and all("('it''s')" in q for q in pg), pg[-3:]


@pytest.mark.spark
async def test_credentials_never_reach_logs_or_errors(setup: Setup, conn) -> None:
    lines = "\n".join(r[0] for r in await conn.fetch("explain analyze " + CROSS))
    assert PASSWORD not in lines
    # New JDBC connections now fail: the client gets an error without the password.
    root = await asyncmy.connect(host=setup.mariadb.host, port=setup.mariadb.port, user="root",
                                 autocommit=True)
    try:
        async with root.cursor() as cur:
            await cur.execute("ALTER USER 'fed'@'127.0.0.1' IDENTIFIED BY 'another-one'")
    finally:
        root.close()
    with pytest.raises(asyncpg.PostgresError) as failure:
        await conn.fetch(CROSS)
    assert "connect" in str(failure.value) and PASSWORD not in str(failure.value)
    assert PASSWORD not in setup.gateway.log()


def test_literals_are_rendered_by_sqlglot_per_dialect() -> None:
    assert bind("SELECT a FROM t WHERE b = $1 AND c = '$1'", ["x'); DROP TABLE t; --"], "postgres") == \
        "SELECT a FROM t WHERE b = ('x''); DROP TABLE t; --') AND c = '$1'"
    assert bind("SELECT a FROM t WHERE b = __fedgate_param_1__", ["a\\'b"], "mysql") == \
        "SELECT a FROM t WHERE b = ('a\\\\''b')"
    assert bind("SELECT a FROM t WHERE f = $1", [float("nan")], "postgres") == \
        "SELECT a FROM t WHERE f = (CAST('NaN' AS DOUBLE PRECISION))"
    with pytest.raises(Unbindable):
        bind("SELECT a FROM t WHERE f = __fedgate_param_1__", [float("nan")], "mysql")


def test_jdbc_urls_carry_no_credentials() -> None:
    url, credentials = jdbc_target("postgres", "postgresql://u:p%40ss@db.example:6432/shop?sslmode=require")
    assert url == "jdbc:postgresql://db.example:6432/shop?ApplicationName=fedgate-spark&ssl=true&sslmode=require"
    assert credentials == {"user": "u", "password": "p@ss"}
    url, credentials = jdbc_target("mysql", "mysql://fed:pw@127.0.0.1:3307/crm")
    assert url == "jdbc:mysql://127.0.0.1:3307/crm?permitMysqlScheme" and "pw" not in url
    with pytest.raises(ValueError):
        jdbc_target("postgres", "postgresql:///db?host=/run/postgresql")


@pytest.mark.spark
async def test_auto_hands_postgres_over_to_a_local_spark_and_a_cluster_reads_it(setup: Setup) -> None:
    """Under "auto", a local Spark gets PostgreSQL fragments from the gateway (its parallel
    COPY reads are faster than JDBC through the same machine); a cluster reads them itself,
    partitioned; a local Spark still reads a big MySQL fragment itself."""
    pg = PostgresSource("pg", setup.pg_dsn)
    # As root: test_credentials_never_reach_logs_or_errors changes the password of `fed`.
    my_dsn = f"mysql://root@{setup.mariadb.host}:{setup.mariadb.port}/crm"
    my = MySQLSource("crm", my_dsn)
    catalog = SourceCatalog()
    local = ReadSettings("auto", threshold_rows=1_000, partition_rows=1_000, cluster=False)
    cluster = ReadSettings("auto", threshold_rows=1_000, partition_rows=1_000, cluster=True)
    orders = 'SELECT "orders"."id", "orders"."total" FROM "public"."orders" AS "orders"'
    customers = "SELECT `customers`.`id`, `customers`.`tier` FROM `crm`.`customers` AS `customers`"
    try:
        handed = await plan_read("frag_0", pg, orders, (), setup.pg_dsn, local, catalog, 2)
        assert isinstance(handed, str) and "Spark runs locally" in handed, handed
        read = await plan_read("frag_0", pg, orders, (), setup.pg_dsn, cluster, catalog, 2)
        assert isinstance(read, DirectRead) and read.kind == "jdbc", read
        assert read.options["partitionColumn"] == "id" and read.options["numPartitions"] == "2"
        mysql = await plan_read("frag_1", my, customers, (), my_dsn, local, catalog, 2)
        assert isinstance(mysql, DirectRead) and mysql.kind == "jdbc", mysql
        always = ReadSettings("always", cluster=False)
        assert isinstance(await plan_read("frag_0", pg, orders, (), setup.pg_dsn, always, catalog, 2),
                          DirectRead)
    finally:
        await pg.close()
        await my.close()
