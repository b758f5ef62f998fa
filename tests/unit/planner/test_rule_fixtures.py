"""Rule fixtures: each optimizer rule alone, on the unoptimized plan of a query.

One fixture file per module of planner/rules/: tests/fixtures/planner/<rule>.sql. A case is
a `-- name:` line, optional `-- before: rule, rule` lines, the SQL, a line `----` and the
expected plan text. The harness builds the query's logical plan exactly as the planner
does before optimizing (parse, qualify, annotate types, `build`), runs each rule named on
the `-- before:` lines to its own fixed point (so a scan-level rule sees the shape it
acts on, e.g. filters already inside the scan), then runs the file's rule alone until it
stops changing, and compares the plan text. When the rule returned the very plan it was
given (the must-not-fire cases), the expected text starts with `(unchanged)`.

FEDGATE_UPDATE_FIXTURES=1 rewrites the expected text from what the rules do now (read the
diff before committing it). The catalog (also described in each file's header):
  s1 (DuckDB dialect): t1, t2, d1    s2 (DuckDB dialect): u1, u2
  lab (test dialect: LIKE is INEXACT, fuzzy() is UNSUPPORTED, ships what DuckDB ships): l1
  bare (test dialect: ships no operator at all, so not even a limit): b1
  every table: a bigint (its primary key, but d1 has none and 25 rows), b bigint, s text
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from sqlglot import exp

import planner.plan  # noqa: F401  (the module, shadowed on the package by the function)
import planner.rules
from connectors.base import (EXACT, Classification, Dialect, Pushdown, TableInfo, TableRef,
                             volatile_reason)
from connectors.dialects import duckdb as duckdb_dialect
from planner import CatalogSnapshot, PlanSettings, SourceEntry, pgcompat
from planner.build import build
from planner.logical import Node
from planner.optimizer import RuleContext, run_rule
from planner.parse import parse_query
from tests.support.planning import ENGINE_DIALECTS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "planner"
RULES = sorted(m.name for m in pkgutil.iter_modules(planner.rules.__path__))
_front = sys.modules["planner.plan"]  # the planner's own front half: names, tables, types
MAX_PASSES = 25  # a rule that keeps changing the plan this often never reaches a fixed point

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("s", pa.string())])


def _lab_classify(expression: exp.Expression, table: TableInfo | None = None) -> Classification:
    """A source whose LIKE may match extra rows and which has no fuzzy() at all."""
    reason = volatile_reason(expression)
    if reason is not None:
        return Classification(Pushdown.UNSUPPORTED, reason)
    if any(isinstance(n, exp.Anonymous) and n.name.lower() == "fuzzy" for n in expression.walk()):
        return Classification(Pushdown.UNSUPPORTED, "fuzzy() does not exist on lab")
    if expression.find(exp.Like, exp.ILike) is not None:
        return Classification(Pushdown.INEXACT, "LIKE ignores case on lab")
    return EXACT


LAB = Dialect("lab", "duckdb", classify=_lab_classify, render=duckdb_dialect.to_duckdb,
              ships=duckdb_dialect.DIALECT.ships)
BARE = Dialect("bare", "duckdb", classify=duckdb_dialect.classify, render=duckdb_dialect.to_duckdb,
               ships=frozenset())


def rule_catalog() -> CatalogSnapshot:
    def tables(source: str, *names: str) -> dict[str, TableInfo]:
        return {n: TableInfo(TableRef(source, n, None, n), SCHEMA, primary_key=("a",)) for n in names}
    return CatalogSnapshot(1, {
        "s1": SourceEntry("s1", duckdb_dialect.DIALECT, {
            **tables("s1", "t1", "t2"),
            # A small table whose source knows no key (like a Parquet file): 25 rows.
            "d1": TableInfo(TableRef("s1", "d1", None, "d1"), SCHEMA, row_estimate=25)}),
        "s2": SourceEntry("s2", duckdb_dialect.DIALECT, tables("s2", "u1", "u2")),
        "lab": SourceEntry("lab", LAB, tables("lab", "l1")),
        "bare": SourceEntry("bare", BARE, tables("bare", "b1")),
    }, engine_dialects=ENGINE_DIALECTS)


CATALOG = rule_catalog()
SETTINGS = PlanSettings(("s1", "s2", "lab", "bare"))


def logical_plan(sql: str) -> Node:
    """The unoptimized plan, built the way `planner.plan` builds it for a federated query."""
    text = pgcompat.normalize(sql)
    tree = pgcompat.rewrite(parse_query(text), CATALOG.catalog_functions)
    _front._name_outputs(tree, text)
    _front._session_values(tree, SETTINGS)
    _front._resolve_tables(tree, CATALOG, SETTINGS)
    return build(_front._annotate(tree, CATALOG), CATALOG)


def rule_function(name: str):
    return getattr(importlib.import_module(f"planner.rules.{name}"), name)


def to_fixed_point(rule, plan: Node) -> Node:
    context = RuleContext(CATALOG, pre_aggregate=True)  # opt-in rules fire in their fixtures
    for _ in range(MAX_PASSES):
        result = run_rule(rule, plan, context)
        if result is plan:
            return plan
        # A rule that builds a new plan printing the same text would spin the optimizer's
        # FixedPoint batches to their budget: rules must return the same object instead.
        assert str(result) != str(plan), f"{rule.__name__} rebuilt an unchanged plan:\n{plan}"
        plan = result
    raise AssertionError(f"{rule.__name__} still changes the plan after {MAX_PASSES} passes")


def read_cases(path: Path) -> list[tuple[str, list[str], str, list[str]]]:
    """(name, prerequisite rules, sql, expected lines); the file's leading comments are its header."""
    cases = []
    blocks = path.read_text().strip().split("\n\n")
    for block in blocks:
        lines = block.strip().splitlines()
        if not lines[0].startswith("-- name:"):
            continue  # the header
        name = lines[0].removeprefix("-- name:").strip()
        before = [r.strip() for line in lines[1:] if line.startswith("-- before:")
                  for r in line.removeprefix("-- before:").split(",")]
        sql_start = 1 + sum(1 for line in lines[1:] if line.startswith("-- before:"))
        split = lines.index("----")
        cases.append((name, before, "\n".join(lines[sql_start:split]), lines[split + 1:]))
    return cases


def apply(rule_name: str, before: list[str], sql: str) -> list[str]:
    plan = logical_plan(sql)
    for prerequisite in before:
        plan = to_fixed_point(rule_function(prerequisite), plan)
    result = to_fixed_point(rule_function(rule_name), plan)
    lines = result.explain()
    return ["(unchanged)", *lines] if result is plan else lines


CASES = [(rule, *case) for rule in RULES if (FIXTURES / f"{rule}.sql").exists()
         for case in read_cases(FIXTURES / f"{rule}.sql")]


def test_every_rule_has_fixtures() -> None:
    missing = [r for r in RULES if not (FIXTURES / f"{r}.sql").exists()]
    assert not missing, f"rules without a fixture file: {missing}"
    for rule in RULES:
        expected = [case for case in CASES if case[0] == rule]
        assert any(c[4][0] != "(unchanged)" for c in expected), f"{rule}: no case where it fires"
        assert any(c[4][0] == "(unchanged)" for c in expected), f"{rule}: no case where it must not fire"


@pytest.mark.parametrize(("rule", "name", "before", "sql", "expected"), CASES,
                         ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_rule_fixture(rule: str, name: str, before: list[str], sql: str, expected: list[str]) -> None:
    got = apply(rule, before, sql)
    if os.environ.get("FEDGATE_UPDATE_FIXTURES"):
        path = FIXTURES / f"{rule}.sql"
        head = [f"-- name: {name}", *([f"-- before: {', '.join(before)}"] if before else []), sql, "----"]
        path.write_text(path.read_text().replace("\n".join([*head, *expected]), "\n".join([*head, *got])))
        return
    assert got == expected
