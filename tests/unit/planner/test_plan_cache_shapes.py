"""PlanCache.shape: one plan per lifted shape and declared types, None where it may not stand."""

from __future__ import annotations

from planner import PlanCache, PlanSettings
from tests.unit.planner.test_tpch_planning import SPLITS, tpch_catalog

SPLIT = "facts|dimensions"
SHAPE = ("SELECT o.o_totalprice, c.c_name FROM orders o JOIN customer c ON c.c_custkey = o.o_custkey "
         "WHERE o.o_orderkey = $1")


def test_a_shape_is_planned_once_per_declared_types() -> None:
    catalog = tpch_catalog(SPLITS[SPLIT])
    cache = PlanCache()
    int4 = PlanSettings(tuple(SPLITS[SPLIT]), declared_param_types=("int4",))
    first = cache.shape(SHAPE, catalog, int4)
    assert first is not None and len(first.param_types) == 1
    assert cache.shape(SHAPE, catalog, int4) is first
    assert (cache.hits, cache.shape_hits, cache.misses) == (1, 1, 1)
    numeric = PlanSettings(tuple(SPLITS[SPLIT]), declared_param_types=("numeric",))
    assert cache.shape(SHAPE, catalog, numeric) is not first  # another type: its own plan
    assert cache.misses == 2


def test_a_shape_with_a_number_outside_a_filter_is_not_planned() -> None:
    catalog = tpch_catalog(SPLITS[SPLIT])
    cache = PlanCache()
    settings = PlanSettings(tuple(SPLITS[SPLIT]), declared_param_types=("int4", "int4"))
    sql = SHAPE.replace("o.o_totalprice,", "o.o_totalprice + $2,")
    assert cache.shape(sql, catalog, settings) is None
    assert (cache.hits, cache.misses) == (0, 0)
