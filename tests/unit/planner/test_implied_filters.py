"""A WHERE disjunction over two sources implies a filter on each (rules/push_filter_through_join).

TPC-H Q19 ORs three conjunctions, each naming part and lineitem. With the SF 1 split
(lineitem in PostgreSQL, part as Parquet), each fragment gets the OR of what every
disjunct says about its own table, so part keeps a few hundred rows to narrow lineitem
with, and lineitem's quantity ranges run in PostgreSQL; the full condition stays in the
engine's join.
"""

from __future__ import annotations

from planner import PlanSettings, plan
from tests.unit.planner.test_tpch_sf1_choices import QUERIES, sf1_catalog


def test_q19_each_side_gets_its_part_of_every_disjunct() -> None:
    query_plan = plan((QUERIES / "q19.sql").read_text(), sf1_catalog(), PlanSettings(("pg", "files")))
    by_source = {f.source: f.sql for f in query_plan.fragments}
    part, lineitem = by_source["files"], by_source["pg"]
    for brand in ("Brand#12", "Brand#23", "Brand#34"):
        assert f"part.p_brand = '{brand}'" in part
    assert " OR " in part and "l_" not in part.split(" WHERE ")[1]
    assert "lineitem.l_quantity <= 11" in lineitem and " OR " in lineitem
    assert "p_" not in lineitem.split(" WHERE ")[1]
    assert "part.p_brand = 'Brand#12'" in query_plan.residual_sql  # the join keeps it all
    assert [(f.build, f.probe) for f in query_plan.dynamic_filters] == [("frag_1", "frag_0")]
