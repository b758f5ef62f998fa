"""`python -m tests.conformance.generate [--seed N] [--seconds S]`: generate, judge, reduce.

Starts a throwaway PostgreSQL and the two gateways of the differential suite, runs
generated statements from each seed for the time given, prints the counts per route and
check and every finding reduced, and exits 1 when a statement differs whose reduced form
is not a known difference (tests/conformance/known_differences.json).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import tempfile
from pathlib import Path

from tests.conformance.generate.explore import Tally, explore
from tests.conformance.suite import ROUTES, load_known, write_generated_section
from tests.conformance.verdicts import Session
from tests.conformance.world import World, conformance_world
from tests.support.postgres import start_postgres

ENGINE_ROUTE = "parquet source"


async def run(world: World, seeds: list[int], seconds: float) -> list[Tally]:
    truth = Session(world.truth)
    routes = {route: Session(getattr(world, gateway).dsn, *setup)
              for route, (gateway, setup) in ROUTES.items()}
    try:
        return [await explore(truth, routes, ENGINE_ROUTE, seed, seconds=seconds / len(seeds))
                for seed in seeds]
    finally:
        for session in (truth, *routes.values()):
            await session.close()


def report(tallies: list[Tally]) -> str:
    counts: dict[tuple[str, str], int] = {}
    for tally in tallies:
        for key, n in tally.counts.items():
            counts[key] = counts.get(key, 0) + n
    lines = [f"{sum(t.statements for t in tallies)} generated statements"]
    for route in sorted({r for r, _ in counts}):
        kinds = ", ".join(f"{counts.get((route, k), 0)} {k}" for k in ("identical", "refused", "different"))
        lines.append(f"{route}: {kinds}")
    for tally in tallies:
        for f in tally.findings:
            lines.append(f"DIFFERENT [{f.route}, {f.check}] {f.sql}\n    {f.detail}\n    from: {f.original}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, action="append", help="a seed (repeatable; default 1)")
    parser.add_argument("--seconds", type=float, default=600.0, help="time for all seeds (600)")
    parser.add_argument("--write", action="store_true",
                        help="write the counts into docs/compatibility.md (what make conformance does)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fedgate-generate-") as tmp:
        server = start_postgres(Path(tmp) / "pg")
        try:
            with conformance_world(server, Path(tmp)) as world:
                tallies = asyncio.run(run(world, args.seed or [1], args.seconds))
        finally:
            server.stop()
    print(report(tallies))
    if args.write:
        seeds = ", ".join(str(seed) for seed in args.seed or [1])
        write_generated_section(
            "## Generated statements\n\n"
            f"The last long run of the query generator (`python -m tests.conformance.generate`, seeds "
            f"{seeds}, {args.seconds:.0f} s), {dt.date.today().isoformat()}: each statement on PostgreSQL "
            "and both routes, TLP and NoREC on the Parquet route. A difference found is reduced to a "
            "minimal statement and kept in the written suite (category generated findings).\n\n"
            + "\n".join(f"- {line}" for line in report(tallies).splitlines()))
    known = load_known()  # the written suite's known differences, by their reduced form
    raise SystemExit(1 if any((f.route, f.sql) not in known for t in tallies for f in t.findings) else 0)


if __name__ == "__main__":
    main()
