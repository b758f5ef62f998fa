"""Planner choices for TPC-DS-like star joins at scale factor 1 (planner.ship_join,
planner.dynamic_filters), with the catalog facts the benchmark's sources report: facts in
PostgreSQL (primary keys, row estimates), dimensions as Parquet (row counts, no keys).
That the plans answer right is tests/federated/test_star_joins.py.
"""

from __future__ import annotations

from connectors.base import TableInfo, TableRef
from connectors.dialects import files as files_dialect
from connectors.dialects import postgres as pg_dialect
from planner import CatalogSnapshot, PlanSettings, SourceEntry, plan
from tests.federated import star_data
from tests.support.planning import ENGINE_DIALECTS

ROWS = {"catalog_sales": 1_536_900, "catalog_returns": 153_548, "inventory": 11_745_000,
        "store_sales": 2_880_404, "store_returns": 288_468, "date_dim": 2191, "item": 18_000,
        "warehouse": 5, "customer_demographics": 1_920_800, "household_demographics": 7200,
        "promotion": 300, "store": 12}


def sf1_catalog() -> CatalogSnapshot:
    dims = star_data.dimensions(0.0)
    schemas = {name: t.schema for name, t in (dims | star_data.facts(0.0001, 200, 1000)).items()}
    sources = {}
    for source, names, dialect in (("pg", star_data.FACTS, pg_dialect.DIALECT),
                                   ("files", star_data.DIMENSIONS, files_dialect.DIALECT)):
        sources[source] = SourceEntry(source, dialect, {name: TableInfo(
            TableRef(source, name, "public" if source == "pg" else None, name), schemas[name],
            row_estimate=ROWS[name],
            primary_key=tuple(k.strip() for k in star_data.KEYS[name].split(",")) if source == "pg" else ())
            for name in names})
    return CatalogSnapshot(1, sources, engine_dialects=ENGINE_DIALECTS)


def _plan(name: str):
    return plan(star_data.QUERIES[name], sf1_catalog(), PlanSettings(("pg", "files")))


def _edges(query_plan) -> set[tuple[str, str, str]]:
    """(build table, probe table, probe column) of every dynamic filter, by table name."""
    tables = {}
    for fragment in query_plan.fragments:
        tables[fragment.name] = next(t for t in ROWS if f'"{t}" AS' in fragment.sql)
    return {(tables[f.build], tables[f.probe], column[1]) for f in query_plan.dynamic_filters
            for _, column in f.keys}


def test_q72_fact_and_inventory_are_fetched_apart() -> None:
    query_plan = _plan("q72")
    assert len(query_plan.joins) == 1
    assert query_plan.joins[0].startswith("Join on pg: catalog_sales x inventory: fetched apart")
    assert "catalog_sales x inventory" in "\n".join(query_plan.explain())
    assert not any('"catalog_sales"' in f.sql and '"inventory"' in f.sql for f in query_plan.fragments)


def test_q72_the_fact_is_narrowed_by_every_selective_dimension() -> None:
    edges = _edges(_plan("q72"))
    for build, column in (("date_dim", "cs_sold_date_sk"), ("household_demographics", "cs_bill_hdemo_sk"),
                          ("customer_demographics", "cs_bill_cdemo_sk")):
        assert (build, "catalog_sales", column) in edges, edges
    # A chain: d1's weeks narrow d2, whose dates narrow inventory.
    assert ("date_dim", "date_dim", "d_week_seq") in edges, edges
    assert ("date_dim", "inventory", "inv_date_sk") in edges, edges


def test_q25_key_preserving_joins_ship_whole() -> None:
    query_plan = _plan("q25")
    assert all(": shipped whole" in line for line in query_plan.joins), query_plan.joins
    assert any('"store_sales"' in f.sql and '"store_returns"' in f.sql and '"catalog_sales"' in f.sql
               for f in query_plan.fragments)


def test_q26_star_narrows_the_fact_three_ways() -> None:
    edges = _edges(_plan("q26"))
    assert {probe for _, probe, _ in edges} == {"catalog_sales"}
    assert len(edges) == 3, edges


def test_integer_keys_carry_the_probe_columns_type() -> None:
    filters = _plan("q26").dynamic_filters
    assert filters and all(f.types == ("int32",) for f in filters)


def test_a_growing_join_of_one_source_alone_ships_whole() -> None:
    """Without another source's keys to narrow them, fetching the inputs apart only moves
    the join from the source's optimizer into the engine: the statement ships whole."""
    # A cross join (a cancel test's slow statement is one) grows the most of all.
    query_plan = plan("SELECT count(*) FROM catalog_returns a, catalog_returns b, inventory c",
                      sf1_catalog(), PlanSettings(("pg", "files")))
    assert not query_plan.joins
    assert len(query_plan.fragments) == 1
    assert query_plan.fragments[0].sql.count('"catalog_returns"') == 2
