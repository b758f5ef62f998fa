"""Generated statements (tests/conformance/generate): identical or refused, never different.

A fixed seed and a fixed number of statements, so every run judges the same statements:
each on PostgreSQL and both routes, and TLP and NoREC on the engine route. A statement
that differs is reduced and fails the test, unless its reduced form is a known difference
(tests/conformance/known_differences.json, the written suite's list, which only shrinks).
`python -m tests.conformance.generate --seed N --seconds S` explores further.
"""

from __future__ import annotations

from tests.conformance.generate.__main__ import ENGINE_ROUTE, report
from tests.conformance.generate.explore import explore
from tests.conformance.suite import ROUTES, load_known
from tests.conformance.verdicts import Session

SEED = 20261202
STATEMENTS = 250  # about a minute on the CI machine
CAP_S = 600.0  # a bound on a slow machine: fewer statements then, never a hang


async def test_generated_statements_are_identical_or_refused(world) -> None:
    truth = Session(world.truth)
    routes = {route: Session(getattr(world, gateway).dsn, *setup)
              for route, (gateway, setup) in ROUTES.items()}
    try:
        tally = await explore(truth, routes, ENGINE_ROUTE, SEED, seconds=CAP_S, limit=STATEMENTS)
    finally:
        for session in (truth, *routes.values()):
            await session.close()
    print(report([tally]))
    known = load_known()
    new = [f for f in tally.findings if (f.route, f.sql) not in known]
    assert tally.statements >= 100, tally.statements
    assert not new, "\n".join(f"[{f.route}, {f.check}] {f.sql}\n    {f.detail}\n    from: {f.original}"
                              for f in new)
