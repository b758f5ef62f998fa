"""Estimates read from the sources' statistics (planner.selectivity), and a plan that
follows them when they change.

A database of our own on the session PostgreSQL holds `orders` (20,000 rows, 1% of them
status 'F'); a SQLite file holds `customers` (3,000 rows, analyzed). Joined on the
customer, `WHERE o.status = 'F'` keeps 200 orders by pg_stats' most common values, fewer
than the customers: the orders are read first and their keys narrow the customers. The
textbook third (6,667) would have had it the other way round. Once 90% of the orders are
'F' and ANALYZE ran again, the next catalog refresh has the customers read first.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
import sqlglot

from connectors.postgres.source import PostgresSource
from connectors.sqlite.source import SQLiteSource
from planner.selectivity import selectivity
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, new_database

DATABASE = "fedgate_estimates"
ORDERS, CUSTOMERS = 20_000, 3_000
STATUS = "case when id % 100 = 0 then 'F' when id % 2 = 0 then 'O' else 'P' end"
SQL = "select count(*) from orders o join customers c on o.cust = c.id where o.status = 'F'"


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("estimates")
    lite = root / "crm.db"
    with sqlite3.connect(lite) as con:
        con.execute("create table customers (id integer primary key, region text)")
        con.executemany("insert into customers values (?, ?)",
                        [(i, f"r{i % 5}") for i in range(CUSTOMERS)])
        con.execute("create index customers_region on customers (region)")
        con.execute("analyze")

    async def setup() -> str:
        dsn = await new_database(postgres_server, DATABASE)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("create table orders (id int primary key, cust int, status text, "
                               "amount int, note text)")
            await conn.execute(
                f"insert into orders select i, i % {CUSTOMERS}, "
                f"{STATUS.replace('id', 'i')}, "
                f"i % 1000, case when i % 4 = 0 then null else 'x' end "
                f"from generate_series(0, {ORDERS - 1}) i")
            await conn.execute("analyze orders")
        finally:
            await conn.close()
        return dsn

    yield asyncio.run(setup()), lite


async def test_postgres_statistics_are_read_with_the_catalog(world) -> None:
    dsn, _ = world
    source = PostgresSource("pg", dsn)
    try:
        orders = next(t for t in await source.tables() if t.ref.name == "orders")
    finally:
        await source.close()
    assert orders.row_estimate == ORDERS
    status = orders.stats("status")
    assert status is not None
    assert dict(status.most_common) == pytest.approx({"F": 0.01, "O": 0.49, "P": 0.5})
    ident = orders.stats("id")
    assert ident is not None and ident.n_distinct == pytest.approx(ORDERS)  # -1: all distinct
    amount = orders.stats("amount")
    assert amount is not None and amount.histogram[-1] == "999"
    # PostgreSQL's histogram leaves out the common values: both count in a range.
    for condition, kept in (("amount < 500", 0.5), ("amount >= 900", 0.1), ("status = 'F'", 0.01),
                            ("note is null", 0.25), ("id = 7", 1 / ORDERS)):
        assert selectivity(sqlglot.parse_one(condition, read="postgres"), orders) == \
            pytest.approx(kept, rel=0.05), condition
    note = orders.stats("note")
    assert note is not None and note.null_frac == pytest.approx(0.25)


async def test_a_login_that_may_not_read_the_table_gets_no_statistics(world) -> None:
    """pg_stats shows only the columns a login may read: the catalog is read all the same,
    and filters on that table keep the textbook third."""
    dsn, _ = world
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("drop role if exists fedgate_estimates_blind")
        await conn.execute("create role fedgate_estimates_blind login")
    finally:
        await conn.close()
    source = PostgresSource("pg", dsn.replace("postgres@", "fedgate_estimates_blind@", 1))
    try:
        orders = next(t for t in await source.tables() if t.ref.name == "orders")
    finally:
        await source.close()
    assert orders.row_estimate == ORDERS and orders.column_stats == ()
    assert selectivity(sqlglot.parse_one("status = 'F'", read="postgres"), orders) == pytest.approx(1 / 3)


async def test_sqlite_statistics_are_read_with_the_catalog(world) -> None:
    _, lite = world
    customers = (await SQLiteSource("lite", lite).tables())[0]
    assert customers.row_estimate == CUSTOMERS
    region = customers.stats("region")
    assert region is not None and region.n_distinct == pytest.approx(5)


async def _sides(gateway: GatewayProcess) -> tuple[str, str, int]:
    """(the source read first, the source narrowed, the count) of SQL, by EXPLAIN ANALYZE."""
    conn = await asyncpg.connect(gateway.dsn)
    try:
        lines = [r[0] for r in await conn.fetch("explain analyze " + SQL)]
        count = (await conn.fetchrow(SQL))[0]
    finally:
        await conn.close()
    sources = dict(re.findall(r"Remote (frag_\d+) on (\w+):", "\n".join(lines)))
    found = [re.match(r"Dynamic filter: (frag_\d+) (?:not )?narrowed .*?of (frag_\d+)", line)
             for line in lines]
    (probe, build), = [m.groups() for m in found if m]
    return sources[build], sources[probe], count


async def test_the_dynamic_filter_side_follows_analyze(world, tmp_path: Path) -> None:
    dsn, lite = world
    gateway = start_gateway('[catalog]\nsearch_path = ["pg", "lite"]\nrefresh_seconds = 1\n'
                            f'[sources.pg]\nkind = "postgres"\ndsn = "{dsn}"\n'
                            f'[sources.lite]\nkind = "sqlite"\npath = "{lite}"\n', tmp_path / "gw")
    try:
        assert await _sides(gateway) == ("pg", "lite", ORDERS // 100)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("update orders set status = 'F' where id % 10 < 9")
            await conn.execute("analyze orders")
            want = await conn.fetchval("select count(*) from orders where status = 'F'")
        finally:
            await conn.close()
        deadline = time.monotonic() + 60
        while (sides := await _sides(gateway))[:2] != ("lite", "pg") and time.monotonic() < deadline:
            await asyncio.sleep(0.5)  # until the periodic refresh has read the new statistics
        assert sides == ("lite", "pg", want)
    finally:
        gateway.stop()
        conn = await asyncpg.connect(dsn)  # the rows as the other tests know them
        try:
            await conn.execute(f"update orders set status = {STATUS}")
            await conn.execute("analyze orders")
        finally:
            await conn.close()
