"""The differential suite against PostgreSQL 15: identical or refused, never different.

Each statement of statements.py runs on PostgreSQL and through the gateway on two routes to
the same tables (world.py); its verdict there is identical, refused (0A000) or different
(verdicts.py). A test per route and category fails on a statement that is different and
not in known_differences.json, and on one listed there that is no longer different (then
the entry must go: the list only shrinks).

By default a deterministic sample of the statements runs (one in SAMPLE_ONE_IN, chosen by
the digest of the SQL, so the same ones every run); FEDGATE_CONFORMANCE=all runs all of
them. `make conformance` runs all of them through suite.py and rewrites
docs/compatibility.md with the counts.
"""

from __future__ import annotations

import os

import pytest

from tests.conformance.statements import all_statements, sample
from tests.conformance.suite import ROUTES, load_known, run_suite, surprises

SAMPLE_ONE_IN = 8
STATEMENTS = all_statements()
SELECTED = STATEMENTS if os.environ.get("FEDGATE_CONFORMANCE") == "all" else sample(STATEMENTS, SAMPLE_ONE_IN)
CATEGORIES = sorted({s.category for s in SELECTED})


@pytest.fixture(scope="module")
async def results(world):
    return await run_suite(world, SELECTED)


def test_suite_is_large_enough() -> None:
    assert len(STATEMENTS) >= 1500
    assert len(sample(STATEMENTS, SAMPLE_ONE_IN)) >= 200


@pytest.mark.parametrize("category", CATEGORIES)
@pytest.mark.parametrize("route", list(ROUTES))
def test_identical_or_refused(route: str, category: str, results) -> None:
    mine = [r for r in results if r.route == route and r.statement.category == category]
    assert mine, "the sample holds statements of every category it names"
    new, fixed = surprises(mine, load_known())
    problems = [f"different (not in known_differences.json): {r.statement.sql}\n    {r.verdict.detail}" for r in new]
    problems += [f"now {r.verdict.kind}, remove from known_differences.json: {r.statement.sql}" for r in fixed]
    kinds = {kind: sum(r.verdict.kind == kind for r in mine) for kind in ("identical", "refused", "different")}
    print(f"{route} / {category}: {kinds['identical']} identical, {kinds['refused']} refused, "
          f"{kinds['different']} different (known)")
    assert not problems, "\n".join(problems)
