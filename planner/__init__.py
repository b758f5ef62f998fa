"""SQL text + catalog snapshot -> QueryPlan. Does no I/O (docs/design.md §1)."""

import planner.pg_escapes  # noqa: F401  first: PostgreSQL's E'...' escapes before any parse
from planner.cache import PlanCache
from planner.catalog import CatalogSnapshot, SourceEntry
from planner.plan import PlanSettings, plan
from planner.query_plan import QueryPlan, RemoteFragment

__all__ = ["CatalogSnapshot", "PlanCache", "PlanSettings", "QueryPlan", "RemoteFragment",
           "SourceEntry", "plan"]
