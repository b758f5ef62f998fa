"""The catalog's sqlglot schema: a source without tables must not stop `*` expansion."""

from __future__ import annotations

import pyarrow as pa

from connectors.base import TableInfo, TableRef
from connectors.dialects.postgres import DIALECT as PG
from connectors.dialects.sqlite import DIALECT as SQLITE
from planner import CatalogSnapshot, PlanSettings, SourceEntry, plan
from tests.support.planning import ENGINE_DIALECTS


def test_star_expands_when_another_source_is_empty() -> None:
    lt = TableInfo(TableRef("lite", "lt"), pa.schema([("a", pa.int64())]))
    catalog = CatalogSnapshot(1, {"pg": SourceEntry("pg", PG, {}),
                                  "lite": SourceEntry("lite", SQLITE, {"lt": lt})},
                              engine_dialects=ENGINE_DIALECTS)
    result = plan("select * from lite.lt", catalog, PlanSettings(search_path=("pg",)))
    assert "`a`" in result.fragments[0].sql and "*" not in result.fragments[0].sql
