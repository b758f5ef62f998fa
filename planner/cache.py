"""A bounded LRU cache of plans, keyed by everything a plan depends on.

Plans are keyed by the statement's text, or, for a statement whose numbers were lifted
into parameters (`shape`), by the lifted text and the parameters' declared types: then
statements that differ only in those numbers share one plan (planner.literal_shapes says
where that is exact).
"""

from __future__ import annotations

from collections import OrderedDict

from planner.catalog import CatalogSnapshot
from planner.literal_shapes import bindable
from planner.plan import PlanSettings, plan
from planner.query_plan import QueryPlan


class PlanCache:
    def __init__(self, capacity: int = 2048) -> None:
        self.capacity = capacity
        self._plans: OrderedDict[tuple, QueryPlan] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.shape_hits = 0  # of the hits, statements planned by their lifted shape
        self._bindable: OrderedDict[str, bool] = OrderedDict()  # per lifted text

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

    def shape(self, lifted: str, catalog: CatalogSnapshot, settings: PlanSettings) -> QueryPlan | None:
        """The plan of `lifted` (numbers as $n, declared in `settings`), or None where
        binding them could change the plan: the caller then plans the statement's text."""
        key = (lifted, catalog.version, settings)
        found = self._plans.get(key)
        if found is not None:
            self.hits += 1
            self.shape_hits += 1
            self._plans.move_to_end(key)
            return found
        verdict = self._bindable.get(lifted)
        if verdict is None:
            verdict = self._bindable[lifted] = bindable(lifted)
            if len(self._bindable) > self.capacity:
                self._bindable.popitem(last=False)
        if not verdict:
            return None
        return self.get(lifted, catalog, settings)

    def clear(self) -> None:
        self._plans.clear()
