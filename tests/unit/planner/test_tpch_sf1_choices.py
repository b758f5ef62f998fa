"""Planner choices for TPC-H at scale factor 1 with the catalog facts real sources report.

The benchmark's split (tests/bench/bench_tpch.py): lineitem, orders, partsupp in PostgreSQL
(primary keys, row estimates), the other five tables as Parquet files (row estimates, no
keys). These tests pin the choices that decide how many rows travel:

- Q21: the EXISTS / NOT EXISTS subqueries fetch only the lineitem columns they name,
  their single-table conjunct runs in PostgreSQL, and filter-only columns stay there.
- Q5: customer and supplier, joined only on their nation (no key of either), are not
  grouped into one files fragment (12M rows at SF 1); supplier with its nation and
  region (a lookup of small tables) still is.
- Key joins are still grouped: orders with lineitem on the orders key.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
from sqlglot import exp

from connectors.base import TableInfo, TableRef
from connectors.dialects import files as files_dialect
from connectors.dialects import postgres as pg_dialect
from gateway.server.demo import TPCH_SCHEMA
from planner import CatalogSnapshot, PlanSettings, SourceEntry, plan
from tests.support.planning import ENGINE_DIALECTS

QUERIES = Path(__file__).resolve().parents[2] / "fixtures" / "tpch"
ROWS = {"lineitem": 6_001_215, "orders": 1_500_000, "partsupp": 800_000, "customer": 150_000,
        "part": 200_000, "supplier": 10_000, "nation": 25, "region": 5}
KEYS = {"lineitem": ("l_orderkey", "l_linenumber"), "orders": ("o_orderkey",),
        "partsupp": ("ps_partkey", "ps_suppkey")}
SPLIT = {"pg": ("lineitem", "orders", "partsupp"),
         "files": ("part", "supplier", "customer", "nation", "region")}
_ARROW = {"BIGINT": pa.int64(), "INTEGER": pa.int32(), "DATE": pa.date32(), "VARCHAR": pa.string()}


def _arrow(sql_type: str) -> pa.DataType:
    if sql_type.startswith("DECIMAL"):
        precision, scale = sql_type.removeprefix("DECIMAL(").rstrip(")").split(",")
        return pa.decimal128(int(precision), int(scale))
    return _ARROW[sql_type]


def sf1_catalog() -> CatalogSnapshot:
    dialects = {"pg": pg_dialect.DIALECT, "files": files_dialect.DIALECT}
    return CatalogSnapshot(1, {
        source: SourceEntry(source, dialects[source], {
            table: TableInfo(TableRef(source, table, "public" if source == "pg" else None, table),
                             pa.schema([(c, _arrow(t)) for c, t in TPCH_SCHEMA[table]]),
                             row_estimate=ROWS[table], primary_key=KEYS.get(table, ()))
            for table in tables})
        for source, tables in SPLIT.items()}, engine_dialects=ENGINE_DIALECTS)


def remote_sql(number: int) -> list[tuple[str, str]]:
    """(source, remote SQL) of every fragment of TPC-H query `number`."""
    text = (QUERIES / f"q{number:02d}.sql").read_text()
    query_plan = plan(text, sf1_catalog(), PlanSettings(("pg", "files")))
    return [(f.source, f.sql) for f in query_plan.fragments]


def _tables(sql: str) -> set[str]:
    return {t.name for t in exp.maybe_parse(sql, dialect="postgres").find_all(exp.Table)}


def _columns(sql: str) -> list[str]:
    select = exp.maybe_parse(sql, dialect="postgres")
    return [e.alias_or_name for e in select.expressions]


def test_q21_subqueries_fetch_only_the_columns_they_use() -> None:
    lineitem = [sql for source, sql in remote_sql(21) if _tables(sql) == {"lineitem"}]
    assert len(lineitem) == 3
    for sql in lineitem:
        assert sorted(_columns(sql)) == ["l_orderkey", "l_suppkey"], sql
    filtered = [sql for sql in lineitem if "l_receiptdate > " in sql]
    assert len(filtered) == 2  # l1 and l3: the same read apart from the alias
    assert re.sub(r"\bl[13]\b", "l", filtered[0]) == re.sub(r"\bl[13]\b", "l", filtered[1])


def test_q5_does_not_group_a_join_that_multiplies_rows() -> None:
    fragments = remote_sql(5)
    grouped = [_tables(sql) for source, sql in fragments if source == "files"]
    assert not any({"customer", "supplier"} <= tables for tables in grouped), grouped
    assert {"supplier", "nation", "region"} in grouped
    assert {"orders", "lineitem"} in [_tables(sql) for source, sql in fragments if source == "pg"]


def test_key_joins_are_still_grouped() -> None:
    for number in (3, 7, 8, 10):
        pg_tables = [_tables(sql) for source, sql in remote_sql(number) if source == "pg"]
        assert {"orders", "lineitem"} in pg_tables, (number, pg_tables)
