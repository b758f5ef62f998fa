"""What the gateway hands the planner through the catalog snapshot, besides the sources:
the residual engines' dialects and the emulated catalog's functions."""

from __future__ import annotations

from dataclasses import replace

import pytest

from connectors.dialects import duckdb, spark
from pgwire.errors import PgError
from planner import CatalogSnapshot, PlanSettings, plan
from tests.support.planning import ENGINE_DIALECTS
from tests.unit.planner.test_plan_e2e import catalog_for

SETTINGS = PlanSettings(("main", "side"))
JOIN = "select o.o_id, c.c_name from main.orders o join side.customers c on c.c_id = o.o_cust"


def test_a_snapshot_names_at_least_one_engine_dialect() -> None:
    with pytest.raises(ValueError, match="residual engine"):
        CatalogSnapshot(1, {}, engine_dialects=())


def test_the_residual_is_written_in_the_first_engine_dialect() -> None:
    catalog = catalog_for("duckdb")
    query_plan = plan(JOIN, catalog, SETTINGS)
    assert query_plan.residual_for("duckdb") == query_plan.residual_sql
    assert '"frag_0"' in query_plan.residual_sql and "`frag_0`" in query_plan.residual_for("spark")
    spark_first = plan(JOIN, replace(catalog, engine_dialects=(spark.DIALECT, duckdb.DIALECT)), SETTINGS)
    assert spark_first.residual_sql == query_plan.residual_for("spark")


def test_an_engine_the_snapshot_does_not_name_has_no_residual() -> None:
    query_plan = plan(JOIN, replace(catalog_for("duckdb"), engine_dialects=(duckdb.DIALECT,)), SETTINGS)
    with pytest.raises(KeyError, match="spark"):
        query_plan.residual_for("spark")


def test_a_table_less_call_reads_the_catalog_only_for_the_catalog_functions() -> None:
    catalog = catalog_for("duckdb")
    assert catalog.engine_dialects == ENGINE_DIALECTS and not catalog.catalog_functions
    alone = plan("select pg_backend_pid()", catalog, SETTINGS)
    assert alone.fragments == () and "_fedgate_one_row" not in (alone.residual_sql or "")
    with_catalog = replace(catalog, catalog_functions=frozenset({"pg_backend_pid"}))
    with pytest.raises(PgError, match="_fedgate_one_row"):  # no pg_catalog source in this snapshot
        plan("select pg_backend_pid()", with_catalog, SETTINGS)
