"""Plan choices that follow the sources' column statistics (planner.selectivity): which
side of a cross-source join builds the dynamic filter, and whether a same-source join
ships whole (planner.ship_join), each through `plan` and its EXPLAIN lines."""

from __future__ import annotations

import pyarrow as pa

from connectors.base import ColumnStats, TableInfo, TableRef
from connectors.dialects import files as files_dialect
from connectors.dialects import postgres as pg_dialect
from planner import CatalogSnapshot, PlanSettings, SourceEntry, plan
from tests.support.planning import ENGINE_DIALECTS

ORDERS = pa.schema([("id", pa.int64()), ("cust", pa.int64()), ("status", pa.string()), ("g", pa.int64())])
LINES = pa.schema([("id", pa.int64()), ("g", pa.int64()), ("qty", pa.int64())])
CUSTOMERS = pa.schema([("id", pa.int64()), ("region", pa.string())])


def _catalog(status: ColumnStats | None = None, groups: float | None = None) -> CatalogSnapshot:
    stats = (("status", status),) if status is not None else ()
    if groups is not None:
        stats += (("g", ColumnStats(n_distinct=groups)),)
    pg = {"orders": TableInfo(TableRef("pg", "orders", "public", "orders"), ORDERS, row_estimate=20_000,
                              column_stats=stats, primary_key=("id",)),
          "lines": TableInfo(TableRef("pg", "lines", "public", "lines"), LINES, row_estimate=20_000,
                             column_stats=(("g", ColumnStats(n_distinct=groups)),) if groups else (),
                             primary_key=("id",))}
    files = {"customers": TableInfo(TableRef("files", "customers", None, "customers"), CUSTOMERS,
                                    row_estimate=3_000)}
    return CatalogSnapshot(1, {"pg": SourceEntry("pg", pg_dialect.DIALECT, pg),
                               "files": SourceEntry("files", files_dialect.DIALECT, files)},
                           engine_dialects=ENGINE_DIALECTS)


def _build_source(catalog: CatalogSnapshot) -> str:
    query_plan = plan("select count(*) from orders o join customers c on o.cust = c.id "
                      "where o.status = 'F'", catalog, PlanSettings(("pg", "files")))
    sources = {f.name: f.source for f in query_plan.fragments}
    dynamic, = query_plan.dynamic_filters
    return sources[dynamic.build]


def test_a_rare_value_has_its_side_build_the_dynamic_filter() -> None:
    # A third of 20,000 is more than the 3,000 customers: they build.
    assert _build_source(_catalog()) == "files"
    rare = ColumnStats(null_frac=0.0, n_distinct=3, most_common=(("O", 0.49), ("P", 0.5), ("F", 0.01)))
    assert _build_source(_catalog(rare)) == "pg"  # 200 orders
    common = ColumnStats(null_frac=0.0, n_distinct=3, most_common=(("F", 0.9), ("P", 0.1)))
    assert _build_source(_catalog(common)) == "files"


def _join_line(catalog: CatalogSnapshot) -> str:
    query_plan = plan("select count(*) from orders o join lines l on o.g = l.g "
                      "join customers c on o.cust = c.id", catalog, PlanSettings(("pg", "files")))
    line, = [x for x in query_plan.explain() if x.startswith("Join on pg:")]
    return line


def test_a_join_on_few_distinct_values_is_fetched_apart() -> None:
    # Without a distinct count, g may have as many values as rows: the join keeps its rows.
    assert ": shipped whole (estimated 20000 rows joined, 40000 apart)" in _join_line(_catalog())
    # 10 values of g: each order meets 2,000 lines.
    assert ": fetched apart" in _join_line(_catalog(groups=10))
    assert "estimated 40000000 rows joined" in _join_line(_catalog(groups=10))
