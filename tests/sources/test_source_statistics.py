"""Column statistics a MariaDB (MySQL) source reports with its catalog: its indexes'
cardinality as the leading column's distinct count (connectors.mysql.column_stats), and
the selectivity the planner takes from it (planner.selectivity)."""

from __future__ import annotations

import asyncmy
import pytest
import sqlglot

from connectors.mysql.source import MySQLSource
from planner.selectivity import UNKNOWN, selectivity
from tests.support.mariadb import MariaDBServer

ROWS = 2000


async def test_index_cardinality_is_a_distinct_count(mariadb_server: MariaDBServer) -> None:
    conn = await asyncmy.connect(host=mariadb_server.host, port=mariadb_server.port, user="root",
                                 autocommit=True)
    try:
        async with conn.cursor() as cur:
            await cur.execute("DROP DATABASE IF EXISTS estimates")
            await cur.execute("CREATE DATABASE estimates")
            await cur.execute("CREATE TABLE estimates.orders (id int PRIMARY KEY, status char(1), "
                              "cust int, note text, KEY by_status (status), KEY by_cust (cust, status))")
            await cur.executemany("INSERT INTO estimates.orders VALUES (%s, %s, %s, %s)",
                                  [(i, "FOP"[i % 3], i % 40, None) for i in range(ROWS)])
            await cur.execute("ANALYZE TABLE estimates.orders")
    finally:
        conn.close()
    source = MySQLSource("my", mariadb_server.dsn("estimates"))
    try:
        orders, = await source.tables()
    finally:
        await source.close()
    assert orders.row_estimate is not None and orders.row_estimate > 0
    counts = {name: stats.n_distinct for name, stats in orders.column_stats}
    assert counts["id"] == pytest.approx(ROWS, rel=0.2)
    # InnoDB's cardinality is sampled from a few pages (3 statuses may read as 6, 40
    # customers as 80): an estimate, taken as the engine gives it.
    assert 2 <= counts["status"] <= 10
    assert 20 <= counts["cust"] <= 120
    assert "note" not in counts  # no index leads with it
    status = selectivity(sqlglot.parse_one("status = 'F'", read="postgres"), orders)
    assert status == pytest.approx(1 / counts["status"])
    assert selectivity(sqlglot.parse_one("note = 'x'", read="postgres"), orders) == UNKNOWN


async def test_parquet_row_groups_give_low_high_and_nulls(tmp_path) -> None:
    """Parquet footers (connectors.files.parquet_stats): min/max over every row group of
    every file, nulls counted; booleans, bytes and nested columns keep none."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    from connectors.files.source import FilesSource

    table = pa.table({"amount": pa.array([None if i % 10 == 0 else i for i in range(1000)], pa.int64()),
                      "name": [f"n{i:04d}" for i in range(1000)],
                      "day": [dt.date(2020, 1, 1) + dt.timedelta(days=i % 366) for i in range(1000)],
                      "flag": [i % 2 == 0 for i in range(1000)],
                      "blob": [b"x"] * 1000,
                      "pair": [{"a": i} for i in range(1000)]})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=300)
    folder = tmp_path / "more"
    folder.mkdir()
    pq.write_table(table.slice(0, 500), folder / "a.parquet", row_group_size=100)
    pq.write_table(table.slice(500), folder / "b.parquet")
    source = FilesSource("files", tmp_path)
    try:
        infos = {info.ref.name: info for info in await source.tables()}
    finally:
        await source.close()
    for name in ("t", "more"):
        info = infos[name]
        assert info.row_estimate == 1000
        amount = info.stats("amount")
        assert amount is not None and (amount.low, amount.high) == ("1", "999")
        assert amount.null_frac == pytest.approx(0.1)
        assert info.stats("name").low == "n0000"
        assert (info.stats("day").low, info.stats("day").high) == ("2020-01-01", "2020-12-31")
        assert all(info.stats(c) is None for c in ("flag", "blob", "pair"))
        kept = selectivity(sqlglot.parse_one("amount < 500", read="postgres"), info)
        assert kept == pytest.approx(0.9 * 499 / 998)


async def test_sqlite_never_analyzed_has_no_statistics(tmp_path) -> None:
    """No sqlite_stat1: the row estimate is the largest rowid, and no column has statistics
    (analyzed: tests/integration/test_source_estimates.py)."""
    import sqlite3

    from connectors.sqlite.source import SQLiteSource

    with sqlite3.connect(tmp_path / "a.db") as con:
        con.execute("create table t (id integer primary key, s text)")
        con.execute("create index t_s on t (s)")
        con.executemany("insert into t values (?, ?)", [(i, str(i % 3)) for i in range(1, 101)])
    info, = await SQLiteSource("lite", tmp_path / "a.db").tables()
    assert info.row_estimate == 100 and info.column_stats == ()
