"""Planner fixtures: each case is a query and the exact plan text EXPLAIN prints for it.

Fixture files live in tests/fixtures/planner/*.sql. A case is a `-- name:` line, the SQL
(one or more lines), a line `----`, and the expected plan lines; cases are separated by
blank lines. Run with FEDGATE_UPDATE_FIXTURES=1 to rewrite the expected text from what
the planner prints now (then read the diff before committing it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from connectors.base import TableInfo, TableRef
from connectors.dialects import duckdb as duckdb_dialect
from pgwire.errors import PgError
from planner import CatalogSnapshot, PlanSettings, SourceEntry, plan
from tests.support.planning import ENGINE_DIALECTS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "planner"

LINEITEM = pa.schema([("l_orderkey", pa.int64()), ("l_linenumber", pa.int32()),
                      ("l_quantity", pa.decimal128(15, 2)), ("l_shipdate", pa.date32()),
                      ("l_comment", pa.string())])
NATION = pa.schema([("n_nationkey", pa.int32()), ("n_name", pa.string())])


def demo_catalog() -> CatalogSnapshot:
    def table(source: str, name: str, schema: pa.Schema) -> TableInfo:
        return TableInfo(TableRef(source, name, "main", name), schema)
    return CatalogSnapshot(1, {
        "demo": SourceEntry("demo", duckdb_dialect.DIALECT, {
            "lineitem": table("demo", "lineitem", LINEITEM),
            "nation": table("demo", "nation", NATION)}),
        "other": SourceEntry("other", duckdb_dialect.DIALECT, {
            "nation2": table("other", "nation2", NATION)}),
    }, engine_dialects=ENGINE_DIALECTS)


def read_cases(path: Path) -> list[tuple[str, str, list[str]]]:
    cases = []
    for block in path.read_text().strip().split("\n\n"):
        lines = block.strip().splitlines()
        name = lines[0].removeprefix("-- name:").strip()
        split = lines.index("----")
        cases.append((name, "\n".join(lines[1:split]), lines[split + 1:]))
    return cases


def explain(sql: str) -> list[str]:
    try:
        return plan(sql, demo_catalog(), PlanSettings(("demo",), user="alice")).explain()
    except PgError as err:
        return [f"ERROR {err.sqlstate}: {err.message}"]


# Rule fixtures (<rule>.sql) and end-to-end fixtures (e2e_*.sql) share the folder but have
# their own harnesses (test_rule_fixtures.py, test_plan_e2e.py) and catalogs.
RULE_MODULES = Path(__file__).resolve().parents[3] / "planner" / "rules"
ROUTING = [path for path in sorted(FIXTURES.glob("*.sql"))
           if not path.stem.startswith("e2e_") and not (RULE_MODULES / f"{path.stem}.py").exists()]
CASES = [(path, *case) for path in ROUTING for case in read_cases(path)]


@pytest.mark.parametrize(("path", "name", "sql", "expected"), CASES,
                         ids=[f"{c[0].stem}:{c[1]}" for c in CASES])
def test_plan_fixture(path: Path, name: str, sql: str, expected: list[str]) -> None:
    got = explain(sql)
    if os.environ.get("FEDGATE_UPDATE_FIXTURES"):
        text = path.read_text()
        old = "\n".join([f"-- name: {name}", sql, "----", *expected])
        path.write_text(text.replace(old, "\n".join([f"-- name: {name}", sql, "----", *got])))
        return
    assert got == expected
