"""Aggregates pre-computed below a cross-source join (planner/rules/push_aggregate_below_join.py),
through the real gateway against real PostgreSQL.

`orders` (a primary key, NULL customer keys, NULL quantities) lives in a PostgreSQL database
of our own; `customer` (with customers that have no orders) is a Parquet file, and a copy
of it sits in the database's `truth` schema, so every query also runs on PostgreSQL alone.
The gateway must answer each one with PostgreSQL's rows and column types while shipping
`orders` grouped by its join key (EXPLAIN shows the pre-aggregate, EXPLAIN ANALYZE the rows
it fetched). The pre-aggregate stays right when its rows hold a key several times, as when
a fragment is read in page-range parts that each aggregate their own pages
(connectors.postgres.parallel): the residual re-aggregates per key.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import duckdb
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot
from sqlglot import exp

from connectors.postgres import parallel as pg_parallel
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, fresh_database

ORDERS = 40_000
CUSTOMERS = 1_200  # customers 997 .. 1199 have no orders at all

Q13 = ("select c_count, count(*) as custdist from (select c.id, count(o.id) from customer c "
       "left outer join orders o on c.id = o.cust and o.note not like '%special%requests%' "
       "group by c.id) as c_orders (id, c_count) group by c_count order by custdist desc, c_count desc")
QUERIES = {
    "q13": Q13,
    "left_join_all_aggregates": "select c.id, count(*) n, count(o.qty) nq, sum(o.qty) s, min(o.qty) lo, "
                                "max(o.day) hi from customer c left join orders o on o.cust = c.id "
                                "group by c.id order by c.id",
    "inner_global": "select count(*) n, sum(o.qty) s, max(o.qty) m, min(o.day) d "
                    "from customer c join orders o on o.cust = c.id",
    "grouped_by_the_joined_side": "select o.day, count(*) n, sum(o.qty) s from customer c "
                                  "join orders o on o.cust = c.id where c.seg = 'a' group by o.day order by o.day",
    "having_and_on_filter": "select c.seg, count(o.id) n, count(*) + 1 m from customer c left join orders o "
                            "on o.cust = c.id and o.qty > 3 group by c.seg having max(o.qty) > 5 order by 1",
    "no_rows": "select count(*) n, sum(o.qty) s, count(o.id) c from customer c join orders o "
               "on o.cust = c.id where c.id < 0",
}


@dataclass
class World:
    truth: str  # the PostgreSQL database's DSN
    gateway: GatewayProcess
    customer: pa.Table


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("push_aggregate")
    truth = fresh_database(postgres_server, "pab")
    customer = pa.table({"id": pa.array(range(CUSTOMERS), pa.int32()),
                         "seg": pa.array(["abc"[i % 3] for i in range(CUSTOMERS)])})
    with psycopg.connect(truth, autocommit=True) as conn:
        conn.execute(f"""
            CREATE TABLE orders (id int8 PRIMARY KEY, cust int4, qty int4, note text, day date);
            INSERT INTO orders SELECT i, CASE WHEN i % 50 = 0 THEN NULL ELSE i % 997 END,
                CASE WHEN i % 7 = 0 THEN NULL ELSE i % 13 END,
                CASE WHEN i % 9 = 0 THEN 'a special order with requests' ELSE 'note ' || (i % 11) END,
                DATE '2024-01-01' + (i % 40) FROM generate_series(1, {ORDERS}) AS i;
            ANALYZE orders;
            CREATE SCHEMA truth;
            CREATE TABLE truth.customer (id int4, seg text);""")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO truth.customer VALUES (%s, %s)",
                            list(zip(customer["id"].to_pylist(), customer["seg"].to_pylist())))
    files = root / "files"
    files.mkdir()
    pq.write_table(customer, files / "customer.parquet")
    gateway = start_gateway(
        '[catalog]\nsearch_path = ["pg", "files"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{truth}"\nschema = "public"\n'
        f'[sources.files]\nkind = "parquet"\npath = "{files}"\n', root / "gw")
    try:
        yield World(truth, gateway, customer)
    finally:
        gateway.stop()


PRE_AGGREGATE = "SET fedgate.pre_aggregate = on"  # the rule is opt-in


async def _answer(dsn: str, sql: str, *setup: str) -> tuple[list[str], list[tuple]]:
    """Column types (as described) and rows of `sql`."""
    conn = await asyncpg.connect(dsn)
    try:
        for statement in setup:
            await conn.execute(statement)
        prepared = await conn.prepare(sql)
        return [a.type.name for a in prepared.get_attributes()], \
            [tuple(r.values()) for r in await prepared.fetch()]
    finally:
        await conn.close()


async def _explain(dsn: str, sql: str, analyze: bool = False) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(PRE_AGGREGATE)
        return [r[0] for r in await conn.fetch(("explain analyze " if analyze else "explain ") + sql)]
    finally:
        await conn.close()


@pytest.mark.parametrize("name", list(QUERIES))
async def test_answers_and_types_are_postgresql_s(world: World, name: str) -> None:
    sql = QUERIES[name]
    want = await _answer(world.truth, sql, "SET search_path = truth, public")
    got = await _answer(world.gateway.dsn, sql, PRE_AGGREGATE)
    assert got == want
    explain = "\n".join(await _explain(world.gateway.dsn, sql))
    assert "SubqueryAlias: partial_o" in explain, explain
    remote = next(line for line in explain.splitlines() if line.strip().startswith("Remote ")
                  and " on pg: " in line)
    assert 'GROUP BY "o"."cust"' in remote or "GROUP BY o.cust" in remote, remote


async def test_explain_analyze_fetches_one_row_per_key(world: World) -> None:
    lines = await _explain(world.gateway.dsn, Q13, analyze=True)
    line = next(x for x in lines if x.startswith("Analyze frag_") and " on pg:" in x)
    fetched = int(line.split(": ")[1].split(" rows")[0])
    assert fetched == 998, lines  # 997 customer keys and the NULL key, not 40,000 orders


async def test_several_rows_per_key_are_re_aggregated(world: World) -> None:
    """The pre-aggregated fragment cut into page ranges (each part aggregates its own pages,
    so a key comes back once per part) and fed to the residual as one table: the answer
    is still PostgreSQL's."""
    sql = QUERIES["left_join_all_aggregates"]
    plan_lines = await _explain(world.gateway.dsn, sql)
    residual = next(x for x in plan_lines if x.startswith("Engine: ")).removeprefix("Engine: ")
    remote = {x.split(" on ")[0].strip().removeprefix("Remote "): x.split(": ", 1)[1]
              for x in plan_lines if x.strip().startswith("Remote ")}
    pg_name = next(n for n, q in remote.items() if "orders" in q)
    files_name = next(n for n in remote if n != pg_name)
    tree = sqlglot.parse_one(remote[pg_name], read="postgres")
    assert isinstance(tree, exp.Select)
    assert pg_parallel.scanned(tree).args.get("group") is not None  # the ranges go inside
    conn = await asyncpg.connect(world.truth)
    try:
        pages = await conn.fetchval("SELECT pg_relation_size('orders') / current_setting('block_size')::int")
        parts = [await conn.fetch(piece) for piece in pg_parallel.split_sql(tree, pages, 3)]
    finally:
        await conn.close()
    assert all(parts) and len({r[0] for p in parts for r in p}) < sum(len(p) for p in parts)
    columns = list(parts[0][0].keys())
    rows = [r for p in parts for r in p]
    fragment = pa.table({c: [r[i] for r in rows] for i, c in enumerate(columns)})
    con = duckdb.connect()
    con.register(pg_name, fragment)
    con.register(files_name, world.customer.select(["id"]))
    got = [tuple(r) for r in con.sql(residual).fetchall()]
    _, want = await _answer(world.truth, sql, "SET search_path = truth, public")
    assert got == want
