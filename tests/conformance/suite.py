"""Runs the differential suite: each statement on PostgreSQL and on both gateway routes.

Also the known-differences file (statements whose verdict on a route is "different" today,
each with the difference observed) and the report in docs/compatibility.md. The test
(test_differential.py) and `python -m tests.conformance.suite` (what `make conformance`
runs, with --write-known to rewrite the file after a fix, or --prune-known to drop the entries
no longer different) share this code.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from tests.conformance.statements import Statement
from tests.conformance.verdicts import Session, Verdict, judge
from tests.conformance.world import World

HERE = Path(__file__).resolve().parent
KNOWN_DIFFERENCES = HERE / "known_differences.json"
REPORT = HERE.parents[1] / "docs" / "compatibility.md"

# Route name → how a session on that route starts.
ROUTES = {
    "postgres source, relay off": ("pg_gateway", ("SET fedgate.relay = off",)),
    "parquet source": ("parquet_gateway", ()),
}


@dataclass(frozen=True)
class Result:
    route: str
    statement: Statement
    verdict: Verdict


async def run_suite(world: World, statements: list[Statement], progress: bool = False) -> list[Result]:
    truth = Session(world.truth)
    routes = {route: Session(getattr(world, gateway).dsn, *setup) for route, (gateway, setup) in ROUTES.items()}
    results = []
    try:
        for index, statement in enumerate(statements):
            expected, *answers = await asyncio.gather(truth.run(statement.sql),
                                                      *(s.run(statement.sql) for s in routes.values()))
            for route, answer in zip(routes, answers):
                results.append(Result(route, statement, judge(expected, answer, ordered=statement.ordered)))
            if progress and index % 100 == 99:
                print(f"  {index + 1}/{len(statements)} statements", flush=True)
    finally:
        for session in [truth, *routes.values()]:
            await session.close()
    return results


def load_known() -> dict[tuple[str, str], str]:
    """(route, sql) → the difference observed when it was recorded."""
    if not KNOWN_DIFFERENCES.exists():
        return {}
    return {(entry["route"], entry["sql"]): entry["difference"] for entry in json.loads(KNOWN_DIFFERENCES.read_text())}


def write_known(results: list[Result]) -> None:
    entries = sorted(({"route": r.route, "category": r.statement.category, "sql": r.statement.sql,
                       "difference": r.verdict.detail} for r in results if r.verdict.kind == "different"),
                     key=lambda e: (e["route"], e["category"], e["sql"]))
    # One entry a line: a fix that removes entries shows as removed lines in the diff.
    lines = ",\n".join(json.dumps(entry, ensure_ascii=False) for entry in entries)
    KNOWN_DIFFERENCES.write_text(f"[\n{lines}\n]\n")


def prune_known(results: list[Result]) -> int:
    """Drop the known differences that are no longer different (and nothing else: a new
    difference is never added); return how many went."""
    different = {(r.route, r.statement.sql) for r in results if r.verdict.kind == "different"}
    ran = {(r.route, r.statement.sql) for r in results}
    entries = json.loads(KNOWN_DIFFERENCES.read_text())
    kept = [e for e in entries if (e["route"], e["sql"]) not in ran or (e["route"], e["sql"]) in different]
    lines = ",\n".join(json.dumps(entry, ensure_ascii=False) for entry in kept)
    KNOWN_DIFFERENCES.write_text(f"[\n{lines}\n]\n")
    return len(entries) - len(kept)


def surprises(results: list[Result], known: dict[tuple[str, str], str]) -> tuple[list[Result], list[Result]]:
    """(new differences, known differences that are now identical or refused)."""
    new = [r for r in results if r.verdict.kind == "different" and (r.route, r.statement.sql) not in known]
    fixed = [r for r in results if r.verdict.kind != "different" and (r.route, r.statement.sql) in known]
    return new, fixed


def counts(results: list[Result]) -> dict[tuple[str, str], Counter]:
    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r in results:
        table[(r.route, r.statement.category)][r.verdict.kind] += 1
        table[(r.route, "all")][r.verdict.kind] += 1
    return table


def _line(counter: Counter) -> str:
    return f"{counter['identical']} identical, {counter['refused']} refused, {counter['different']} different"


def write_report(results: list[Result]) -> None:
    table = counts(results)
    categories = sorted({r.statement.category for r in results})
    lines = [
        "# Compatibility with PostgreSQL",
        "",
        "Written by `make conformance` (`python -m tests.conformance.suite`); do not edit by hand.",
        "",
        "The contract is *identical or refused*: a statement the gateway's engine answers gives",
        "PostgreSQL's answer (rows, type OIDs, column names; for an error its SQLSTATE and message),",
        "or the gateway refuses it with 0A000 naming the construct. The differential suite",
        "(tests/conformance) runs each statement on PostgreSQL 15 and through two routes to the same",
        "tables: a PostgreSQL source with `SET fedgate.relay = off`, and a Parquet source. On the first,",
        "what reads only that source (or no table: it is first on the search path) is that source's",
        "to answer, shipped whole; the second is the engine's. A statement",
        "that is neither identical nor refused is *different*; the ones known today are listed in",
        "tests/conformance/known_differences.json, which may only shrink.",
        "",
        f"{len({r.statement.sql for r in results})} statements.",
        "",
        "| category | " + " | ".join(ROUTES) + " |",
        "|---|" + "---|" * len(ROUTES),
    ]
    for category in categories + ["all"]:
        label = f"**{category}**" if category == "all" else category
        lines.append(f"| {label} | " + " | ".join(_line(table[(route, category)]) for route in ROUTES) + " |")
    lines += _function_table(results)
    lines += ["", "## Different today", "",
              "Grouped by the kind of difference; each statement with what the gateway answered.", ""]
    differing = [r for r in results if r.verdict.kind == "different"]
    by_kind: dict[str, list[Result]] = defaultdict(list)
    for r in differing:
        by_kind[_kind(r.verdict.detail)].append(r)
    for kind in sorted(by_kind, key=lambda k: -len(by_kind[k])):
        lines += [f"### {kind} ({len(by_kind[kind])})", ""]
        for r in sorted(by_kind[kind], key=lambda r: (r.statement.category, r.statement.sql, r.route)):
            lines.append(f"- [{r.route}] `{r.statement.sql}` — {r.verdict.detail.replace('|', '¦')}")
        lines.append("")
    lines += _refusals(results)
    REPORT.write_text("\n".join(lines) + _generated_section())


def _refusals(results: list[Result]) -> list[str]:
    """Each refusal's reason (its 0A000 message, which names the construct and why) and
    how many statements of which categories it refuses, per route: the refused column of
    the table above, written down."""
    by_reason: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for r in results:
        if r.verdict.kind == "refused":
            reason = " ".join(r.verdict.detail.split()) or "(no message)"
            by_reason[(r.route, reason if len(reason) <= 240 else reason[:240] + " …")].append(r)
    if not by_reason:
        return []
    lines = ["", "## Refused, and why", "",
             "Each reason is the refusal's own message (0A000); the count is of statements, with the",
             "categories they come from."]
    for route in ROUTES:
        mine = sorted(((reason, rs) for (rt, reason), rs in by_reason.items() if rt == route),
                      key=lambda item: (-len(item[1]), item[0]))
        if not mine:
            continue
        lines += ["", f"### {route} ({sum(len(rs) for _, rs in mine)})", "",
                  "| statements | reason | categories |", "|---|---|---|"]
        for reason, rs in mine:
            categories = ", ".join(sorted({r.statement.category for r in rs}))
            lines.append(f"| {len(rs)} | {reason.replace('|', '¦')} | {categories} |")
    return lines


# The section the query generator's long runs write (tests/conformance/generate): kept
# when the written suite's report is rewritten.
GENERATED_BEGIN, GENERATED_END = "<!-- generated:begin -->", "<!-- generated:end -->"


def _generated_section() -> str:
    text = REPORT.read_text() if REPORT.exists() else ""
    if GENERATED_BEGIN not in text or GENERATED_END not in text:
        return ""
    return "\n\n" + GENERATED_BEGIN + text.split(GENERATED_BEGIN, 1)[1].split(GENERATED_END, 1)[0] \
        + GENERATED_END + "\n"


def write_generated_section(section: str) -> None:
    """Put the generator's counts at the end of the report, replacing the last ones."""
    text = REPORT.read_text() if REPORT.exists() else ""
    if GENERATED_BEGIN in text and GENERATED_END in text:
        head, rest = text.split(GENERATED_BEGIN, 1)
        text = head.rstrip("\n") + "\n\n" + rest.split(GENERATED_END, 1)[1].lstrip("\n")
    REPORT.write_text(text.rstrip("\n") + "\n\n" + GENERATED_BEGIN + "\n" + section.rstrip("\n")
                      + "\n" + GENERATED_END + "\n")


WORST_FIRST = ["different", "refused", "identical"]


def _function_table(results: list[Result]) -> list[str]:
    """Each probed function's verdict per route: the worst of its calls'."""
    calls: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        if r.statement.function:
            calls[(r.statement.category.removeprefix("functions: "), r.statement.function)][r.route].append(r.verdict.kind)
    if not calls:
        return []
    lines = ["", "## Functions", "",
             "The function probe (tests/conformance/functions.py) calls each function with edge-case",
             "arguments; a function is *different* on a route when any call is, *refused* when any call is",
             "refused and none is different, else *identical*. The count is of its calls.", "",
             "| category | function | " + " | ".join(ROUTES) + " |", "|---|---|" + "---|" * len(ROUTES)]
    for (category, function), by_route in sorted(calls.items()):
        cells = []
        for route in ROUTES:
            kinds = by_route[route]
            worst = next(k for k in WORST_FIRST if k in kinds)
            cells.append(f"{worst} ({kinds.count('identical')}/{len(kinds)} identical)")
        lines.append(f"| {category} | `{function}` | " + " | ".join(cells) + " |")
    return lines


def _kind(detail: str) -> str:
    if detail.startswith("names"):
        return "column names"
    if detail.startswith("type OIDs"):
        return "result types"
    if detail.startswith("error"):
        return "an error where PostgreSQL answers, or another error"
    if detail.startswith("rows instead of error"):
        return "rows where PostgreSQL raises an error"
    return "rows"


def main() -> None:
    import argparse
    import tempfile

    from tests.conformance.statements import all_statements
    from tests.conformance.world import conformance_world
    from tests.support.postgres import start_postgres

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write-known", action="store_true",
                        help="rewrite known_differences.json with today's differences")
    parser.add_argument("--prune-known", action="store_true",
                        help="remove from known_differences.json the statements no longer different")
    args = parser.parse_args()
    statements = all_statements()
    with tempfile.TemporaryDirectory(prefix="fedgate-conformance-") as tmp:
        server = start_postgres(Path(tmp) / "pg")
        try:
            with conformance_world(server, Path(tmp)) as world:
                results = asyncio.run(run_suite(world, statements, progress=True))
        finally:
            server.stop()
    write_report(results)
    if args.write_known:
        write_known(results)
    elif args.prune_known:
        print(f"{prune_known(results)} entries removed from known_differences.json")
    new, fixed = surprises(results, load_known())
    for route_category, counter in sorted(counts(results).items()):
        if route_category[1] == "all":
            print(f"{route_category[0]}: {_line(counter)}")
    for r in new:
        print(f"NEW DIFFERENCE [{r.route}] {r.statement.sql}: {r.verdict.detail}")
    for r in fixed:
        print(f"NO LONGER DIFFERENT ({r.verdict.kind}) [{r.route}] {r.statement.sql}: remove it from known_differences.json")
    raise SystemExit(1 if new or fixed else 0)


if __name__ == "__main__":
    main()
