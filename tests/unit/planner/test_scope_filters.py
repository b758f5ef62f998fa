"""Dynamic filters inside scopes the plan does not model (planner.scope_filters).

With the catalog facts the SF 1 benchmark's sources report (tests/unit/
test_tpch_sf1_choices.py), the TPC-H queries whose subqueries make them Opaque get the
builds and probes their SQL allows, and none it does not:

- Q11: a chain, nation narrows supplier, whose narrowed rows narrow partsupp (in the
  outer scope and, separately, in the HAVING subquery);
- Q16: part narrows partsupp; the NOT IN subquery's supplier is never narrowed;
- Q17: part narrows both lineitem scans, the outer one and the correlated subquery's;
- Q22: NOT EXISTS: customer narrows orders, never the other way round;
- a build estimated above `MAX_BUILD_ROWS` is not read first (Q21's orders).
"""

from __future__ import annotations

import re

from planner import PlanSettings, plan
from planner.dynamic_filters import DynamicFilter
from tests.unit.planner.test_tpch_sf1_choices import QUERIES, sf1_catalog


def _filters(number: int) -> tuple[dict[str, str], list[DynamicFilter]]:
    """(fragment name -> 'source:first table', dynamic filters) of TPC-H query `number`."""
    query_plan = plan((QUERIES / f"q{number:02d}.sql").read_text(), sf1_catalog(),
                      PlanSettings(("pg", "files")))
    names = {f.name: f"{f.source}:{_table(f.sql)}" for f in query_plan.fragments}
    return names, list(query_plan.dynamic_filters)


def _table(sql: str) -> str:
    match = re.search(r'FROM (?:"\w+"\.)?"(\w+)"', sql)
    assert match is not None, sql
    return match.group(1)


def _edges(number: int) -> list[tuple[str, str, tuple[str, ...]]]:
    """(build table, probe table, probe columns) per dynamic filter."""
    names, filters = _filters(number)
    return sorted((names[f.build], names[f.probe], tuple(c[1] for _, c in f.keys)) for f in filters)


def test_q11_chains_nation_supplier_partsupp_in_both_scopes() -> None:
    assert _edges(11) == sorted(2 * [
        ("files:nation", "files:supplier", ("s_nationkey",)),
        ("files:supplier", "pg:partsupp", ("ps_suppkey",)),
    ])


def test_q16_part_narrows_partsupp_and_not_in_narrows_nothing() -> None:
    assert _edges(16) == [("files:part", "pg:partsupp", ("ps_partkey",))]


def test_q17_part_narrows_the_outer_and_the_correlated_lineitem() -> None:
    assert _edges(17) == 2 * [("files:part", "pg:lineitem", ("l_partkey",))]


def test_q22_not_exists_narrows_only_the_subquery() -> None:
    assert _edges(22) == [("files:customer", "pg:orders", ("o_custkey",))]


def test_q21_big_builds_are_not_read_first() -> None:
    # orders (o_orderstatus = 'F', estimated 500,000 rows) could narrow l1 but is too big;
    # supplier, narrowed by nation, is small and narrows l1 by l_suppkey.
    edges = _edges(21)
    assert ("files:nation", "files:supplier", ("s_nationkey",)) in edges
    assert ("files:supplier", "pg:lineitem", ("l_suppkey",)) in edges
    assert not any(build == "pg:orders" for build, _, _ in edges)


def test_every_chain_is_acyclic_and_every_build_narrows_a_probe_once() -> None:
    # A probe may take several builds (a star's fact: one per dimension that drops rows).
    for number in range(1, 23):
        _, filters = _filters(number)
        edges = [(f.build, f.probe) for f in filters]
        assert len(edges) == len(set(edges)), number
        builds_of: dict[str, set[str]] = {}
        for build, probe in edges:
            builds_of.setdefault(probe, set()).add(build)

        def visit(node: str, path: frozenset[str]) -> None:
            assert node not in path, f"q{number}: a cycle through {node}"
            for build in builds_of.get(node, ()):
                visit(build, path | {node})

        for start in builds_of:
            visit(start, frozenset())
