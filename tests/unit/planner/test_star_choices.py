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


def sf1_catalog(unanalyzed: bool = False) -> CatalogSnapshot:
    """`unanalyzed`: the facts as PostgreSQL reports them loaded and never analyzed
    (reltuples -1: no row estimate), with their primary keys."""
    dims = star_data.dimensions(0.0)
    schemas = {name: t.schema for name, t in (dims | star_data.facts(0.0001, 200, 1000)).items()}
    sources = {}
    for source, names, dialect in (("pg", star_data.FACTS, pg_dialect.DIALECT),
                                   ("files", star_data.DIMENSIONS, files_dialect.DIALECT)):
        sources[source] = SourceEntry(source, dialect, {name: TableInfo(
            TableRef(source, name, "public" if source == "pg" else None, name), schemas[name],
            row_estimate=None if unanalyzed and name in star_data.FACTS else ROWS[name],
            primary_key=tuple(k.strip() for k in star_data.KEYS[name].split(",")) if source == "pg" else ())
            for name in names})
    return CatalogSnapshot(1, sources, engine_dialects=ENGINE_DIALECTS)


def _plan(name: str, unanalyzed: bool = False):
    return plan(star_data.QUERIES[name], sf1_catalog(unanalyzed), PlanSettings(("pg", "files")))


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


# -- facts without row estimates (planner.ship_join, planner.dynamic_filters.unknown_order)


def test_q72_unanalyzed_facts_are_fetched_apart_by_their_keys() -> None:
    """Shipped whole, catalog_sales x inventory on the item sent ~50M rows at SF 1 that no
    dimension had narrowed: the join covers neither table's primary key."""
    query_plan = _plan("q72", unanalyzed=True)
    assert query_plan.joins == ("Join on pg: catalog_sales x inventory: fetched apart, each side narrowed "
                                "by other sources' keys where it can be (no row estimate for catalog_sales, "
                                "inventory; no side's primary key is covered, so the join may multiply rows)",)
    assert not any('"catalog_sales"' in f.sql and '"inventory"' in f.sql for f in query_plan.fragments)


def test_q72_unanalyzed_facts_are_narrowed_by_the_dimensions_then_each_other() -> None:
    edges = _edges(_plan("q72", unanalyzed=True))
    for build, column in (("date_dim", "cs_sold_date_sk"), ("household_demographics", "cs_bill_hdemo_sk"),
                          ("customer_demographics", "cs_bill_cdemo_sk")):
        assert (build, "catalog_sales", column) in edges, edges
    assert ("date_dim", "inventory", "inv_date_sk") in edges, edges
    # Narrowed by three dimensions, catalog_sales is read first and narrows inventory by
    # its items (so the engine also gets it whole, with its row count).
    assert ("catalog_sales", "inventory", "inv_item_sk") in edges, edges
    assert not any(build == "inventory" for build, _, _ in edges), edges


def test_a_fragment_of_unknown_size_is_never_read_before_it_is_narrowed() -> None:
    query_plan = _plan("q72", unanalyzed=True)
    facts = {f.name for f in query_plan.fragments if f.estimated_rows is None}
    narrowed = {f.probe for f in query_plan.dynamic_filters}
    assert facts and all(f.build in narrowed for f in query_plan.dynamic_filters if f.build in facts)
    # catalog_returns (left joined, nothing narrows it) builds for nobody.
    returns = next(f.name for f in query_plan.fragments if '"catalog_returns"' in f.sql)
    assert all(f.build != returns for f in query_plan.dynamic_filters)


def test_q25_unanalyzed_key_join_ships_whole_the_keyless_one_apart() -> None:
    query_plan = _plan("q25", unanalyzed=True)
    assert len(query_plan.joins) == 1 and query_plan.joins[0].startswith(
        "Join on pg: store_sales, store_returns x catalog_sales: fetched apart"), query_plan.joins
    assert any('"store_sales"' in f.sql and '"store_returns"' in f.sql and '"catalog_sales"' not in f.sql
               for f in query_plan.fragments)
    edges = _edges(query_plan)
    assert ("date_dim", "catalog_sales", "cs_sold_date_sk") in edges, edges
    assert ("store_sales", "catalog_sales", "cs_item_sk") in edges, edges


def test_with_estimates_the_plans_are_as_before() -> None:
    """The key rule applies only without estimates: Q25's facts ship whole together."""
    assert all(": shipped whole (estimated" in line for line in _plan("q25").joins)
