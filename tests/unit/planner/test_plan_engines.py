"""Residual SQL per engine: the same plan rendered for DuckDB and for Spark.

Fixtures are tests/fixtures/planner/e2e_engines.sql, planned against the two-source DuckDB
catalog of the end-to-end fixtures (tests/unit/planner/test_plan_e2e.py: `main` holds orders and
items, `side` holds customers), so every case has a residual. A case is a `-- name:` line,
the SQL, `----`, then one line per engine, `duckdb: <SQL>` and `spark: <SQL>`: what each
engine is asked to run, with the rewrites that give PostgreSQL's answers there
(connectors/dialects/duckdb/__init__.py, connectors/dialects/spark.py).
FEDGATE_UPDATE_FIXTURES=1 rewrites the expected lines from what the planner renders now.
"""

from __future__ import annotations


import pytest

from planner import PlanSettings, plan
from tests.unit.planner.test_plan_e2e import FIXTURES, catalog_for, check_case, read_cases

PATH = FIXTURES / "e2e_engines.sql"
ENGINES = ("duckdb", "spark")
CASES = read_cases(PATH)


def residuals(sql: str) -> list[str]:
    query_plan = plan(sql, catalog_for("duckdb"), PlanSettings(("main", "side")))
    return [f"{engine}: {query_plan.residual_for(engine)}" for engine in ENGINES]


@pytest.mark.parametrize(("name", "sql", "expected"), CASES, ids=[c[0] for c in CASES])
def test_engine_residual(name: str, sql: str, expected: list[str]) -> None:
    check_case(PATH, name, sql, expected, residuals(sql))
