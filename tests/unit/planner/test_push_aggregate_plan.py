"""TPC-H Q13 at scale factor 1 with the benchmark's catalog facts: orders (PostgreSQL, primary
key o_orderkey) is pre-aggregated by its join key below the LEFT join with customer
(Parquet), and the residual re-aggregates the partial counts (planner/rules/
push_aggregate_below_join.py). A joined side grouped by its primary key keeps its plan."""

from __future__ import annotations

from planner import PlanSettings, plan
from tests.unit.planner.test_tpch_sf1_choices import QUERIES, sf1_catalog

SETTINGS = PlanSettings(("pg", "files"), pre_aggregate=True)


def test_q13_ships_orders_grouped_by_customer() -> None:
    query_plan = plan((QUERIES / "q13.sql").read_text(), sf1_catalog(), SETTINGS)
    pg = [f.sql for f in query_plan.fragments if f.source == "pg"]
    assert len(pg) == 1
    assert "GROUP BY orders.o_custkey" in pg[0] and "COUNT(orders.o_orderkey)" in pg[0], pg[0]
    assert "NOT LIKE '%special%requests%'" in pg[0]  # the ON conjunct filters before grouping
    assert "CAST(COALESCE(SUM(" in query_plan.residual_sql, query_plan.residual_sql
    assert any("SubqueryAlias: partial_orders" in line for line in query_plan.optimized)


def test_off_unless_the_session_asks() -> None:
    query_plan = plan((QUERIES / "q13.sql").read_text(), sf1_catalog(), PlanSettings(("pg", "files")))
    assert not any("partial_" in line for line in query_plan.optimized)


def test_grouping_by_the_primary_key_is_not_pre_aggregated() -> None:
    sql = ("select c.c_custkey, count(o.o_custkey) from customer c "
           "left join orders o on c.c_custkey = o.o_orderkey group by c.c_custkey")
    query_plan = plan(sql, sf1_catalog(), SETTINGS)
    assert not any("partial_" in line for line in query_plan.optimized)

