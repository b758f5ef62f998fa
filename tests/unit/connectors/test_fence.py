"""Narrowed PostgreSQL scans behind a fence (planner.physical.fenced, connectors.postgres.parallel).

A one-table PostgreSQL fragment narrowed to an IN list keeps its own filters outside
`(SELECT ... WHERE keys OFFSET 0)`, so PostgreSQL tests the keys before decoding the
columns the other filters read; arrays, ranges, other sources and fragments without
filters stay as they were. The page-range split recognises the fence and cuts inside it.
"""

from __future__ import annotations

import sqlglot

from connectors.postgres import parallel as pg_parallel
from planner import PlanSettings, plan
from tests.unit.planner.test_tpch_sf1_choices import QUERIES, sf1_catalog


def _q19_lineitem():
    query_plan = plan((QUERIES / "q19.sql").read_text(), sf1_catalog(), PlanSettings(("pg", "files")))
    return next(f for f in query_plan.fragments if f.source == "pg")


def test_a_key_list_goes_inside_the_fence_and_the_filters_outside() -> None:
    sql = _q19_lineitem().narrow([(("lineitem", "l_partkey"), [7, 3, 5])])
    tree = sqlglot.parse_one(sql, read="postgres")
    inner = tree.args["from_"].this.this
    assert inner.args["offset"].expression.this == "0"
    assert inner.args["where"].sql("postgres") == 'WHERE "lineitem"."l_partkey" IN (7, 3, 5)'
    assert "l_shipmode" in tree.args["where"].sql("postgres")
    assert "l_partkey" not in tree.args["where"].sql("postgres")
    # the fence passes on what the outer level filters on and returns
    names = [e.alias_or_name for e in inner.expressions]
    assert names == ["l_partkey", "l_quantity", "l_extendedprice", "l_discount", "l_shipinstruct",
                     "l_shipmode"]
    assert [e.alias_or_name for e in tree.expressions] == names[:4]


def test_an_array_or_a_range_is_not_fenced() -> None:
    fragment = _q19_lineitem()
    assert "OFFSET 0" in fragment.narrow([(("lineitem", "l_partkey"), list(range(1000)))])
    array = fragment.narrow([(("lineitem", "l_partkey"), list(range(5000)))])
    assert "OFFSET" not in array and "BIGINT[]" in array
    ranged = fragment.narrow([(("lineitem", "l_partkey"), list(range(200_000)))])
    assert "OFFSET" not in ranged and "BETWEEN 0 AND 199999" in ranged


def test_a_fragment_without_filters_or_on_files_is_not_fenced() -> None:
    query_plan = plan((QUERIES / "q17.sql").read_text(), sf1_catalog(), PlanSettings(("pg", "files")))
    lineitem = next(f for f in query_plan.fragments if f.source == "pg")
    assert "OFFSET" not in lineitem.narrow([(("lineitem", "l_partkey"), [1, 2])])
    query_plan = plan((QUERIES / "q19.sql").read_text(), sf1_catalog(), PlanSettings(("pg", "files")))
    part = next(f for f in query_plan.fragments if f.source == "files")
    assert "OFFSET" not in part.narrow([(("part", "p_partkey"), [1, 2])])


def test_the_split_cuts_inside_the_fence() -> None:
    sql = _q19_lineitem().narrow([(("lineitem", "l_partkey"), [7, 3, 5])])
    tree = pg_parallel.single_table_scan(sql)
    assert tree is not None
    pieces = pg_parallel.split_sql(tree, 1000, 2)
    for piece in pieces:
        parsed = sqlglot.parse_one(piece, read="postgres")
        inner = parsed.args["from_"].this.this
        assert "ctid" in inner.args["where"].sql("postgres")
        assert "ctid" not in parsed.args["where"].sql("postgres")


def test_only_a_plain_fence_is_split() -> None:
    for sql in (
        "SELECT a.x FROM (SELECT a.x FROM t AS a WHERE a.k IN (1) OFFSET 1) AS a WHERE a.y = 1",
        "SELECT a.x FROM (SELECT a.x FROM t AS a WHERE a.k IN (1) LIMIT 5 OFFSET 0) AS a",
        "SELECT a.x FROM (SELECT a.x FROM t AS a JOIN u ON a.k = u.k OFFSET 0) AS a",
        "SELECT count(*) FROM (SELECT a.x FROM t AS a OFFSET 0) AS a",
        "SELECT a.x FROM (SELECT a.x FROM t AS a WHERE a.k IN (SELECT 1) OFFSET 0) AS a",
    ):
        assert pg_parallel.single_table_scan(sql) is None, sql
    assert pg_parallel.single_table_scan(
        "SELECT a.x FROM (SELECT a.x, a.y FROM t AS a WHERE a.k IN (1) OFFSET 0) AS a WHERE a.y = 1") is not None
