"""A bounded LRU cache of plans, keyed by everything a plan depends on."""

from __future__ import annotations

from collections import OrderedDict

from planner.catalog import CatalogSnapshot
from planner.plan import PlanSettings, plan
from planner.query_plan import QueryPlan


class PlanCache:
    def __init__(self, capacity: int = 2048) -> None:
        self.capacity = capacity
        self._plans: OrderedDict[tuple, QueryPlan] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, sql: str, catalog: CatalogSnapshot, settings: PlanSettings) -> QueryPlan:
        # PlanSettings is frozen and hashable: search_path, user, declared types all count.
        key = (sql, catalog.version, settings)
        found = self._plans.get(key)
        if found is not None:
            self.hits += 1
            self._plans.move_to_end(key)
            return found
        self.misses += 1
        result = plan(sql, catalog, settings)
        self._plans[key] = result
        if len(self._plans) > self.capacity:
            self._plans.popitem(last=False)
        return result

    def clear(self) -> None:
        self._plans.clear()
