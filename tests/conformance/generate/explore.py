"""Run generated statements on PostgreSQL and both gateway routes; reduce what differs.

Each statement from `grammar.statement` runs on the truth and on each route of
tests/conformance/suite.py, and is judged as a written one is (identical, refused or
different). Two more checks need no PostgreSQL, so they catch the planner's own bugs on
the engine route (the Parquet source) even where PostgreSQL would agree by chance:

- TLP (ternary logic partitioning): a statement's rows are the rows of the same statement
  under `WHERE p`, `WHERE NOT p` and `WHERE p IS NULL` together, for a generated p;
- NoREC: `SELECT ... WHERE p` has as many rows as `SELECT p FROM ...` has true values,
  the second not letting the planner push p anywhere.

A statement that differs is reduced (`reduce`): parts of its tree are dropped or replaced
by a child while it still differs on that route and PostgreSQL still answers it, so what
is recorded is small enough to read.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from tests.conformance.generate.grammar import Builder, scope_of, statement
from tests.conformance.verdicts import Outcome, Session, judge

# A check of one statement on one route: the verdict kind and its detail.
Check = Callable[[str], Awaitable[tuple[str, str]]]


@dataclass
class Finding:
    route: str
    check: str  # "postgres", "tlp" or "norec"
    sql: str  # reduced
    original: str
    detail: str


@dataclass
class Tally:
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (route, kind) -> n
    findings: list[Finding] = field(default_factory=list)
    statements: int = 0

    def add(self, route: str, kind: str) -> None:
        self.counts[(route, kind)] = self.counts.get((route, kind), 0) + 1


def _rows_key(outcome: Outcome) -> list:
    return sorted((repr(row) for row in outcome.rows))


async def against_postgres(truth: Session, route: Session, sql: str, ordered: bool) -> tuple[str, str]:
    expected, answer = await truth.run(sql), await route.run(sql)
    if expected.failed and answer.failed and answer.sqlstate != "0A000":
        # Both reject it: the statement is outside what the grammar should build (an
        # overflow, a division by zero): the same SQLSTATE is enough, messages vary by engine.
        return ("identical", "") if expected.sqlstate == answer.sqlstate else \
            ("different", f"{answer.sqlstate} {answer.message} instead of {expected.sqlstate} {expected.message}")
    verdict = judge(expected, answer, ordered=ordered)
    return verdict.kind, verdict.detail


def _partitions(tree: exp.Select, predicate: exp.Expression) -> list[exp.Select]:
    parts = []
    for condition in (predicate.copy(), exp.Not(this=exp.Paren(this=predicate.copy())),
                      exp.Is(this=exp.Paren(this=predicate.copy()), expression=exp.Null())):
        part = tree.copy()
        part.set("where", exp.Where(this=condition))
        parts.append(part)
    return parts


async def tlp(route: Session, tree: exp.Select, predicate: exp.Expression) -> tuple[str, str]:
    """The whole statement's rows against its three partitions' (as multisets)."""
    whole = tree.copy()
    whole.set("where", None)
    base = await route.run(whole.sql("postgres"))
    if base.failed:
        return ("refused", base.message or "") if base.sqlstate == "0A000" else ("identical", "")
    rows: list = []
    for part in _partitions(tree, predicate):
        got = await route.run(part.sql("postgres"))
        if got.failed:
            return ("refused", got.message or "") if got.sqlstate == "0A000" else \
                ("different", f"a partition failed: {got.sqlstate} {got.message}")
        rows += [repr(r) for r in got.rows]
    if sorted(rows) != _rows_key(base):
        return "different", f"{len(rows)} rows in the partitions, {len(base.rows)} in the whole"
    return "identical", ""


async def norec(route: Session, tree: exp.Select, predicate: exp.Expression) -> tuple[str, str]:
    """Rows under WHERE p against the count of true p over the unfiltered rows."""
    filtered = tree.copy()
    filtered.set("where", exp.Where(this=predicate.copy()))
    counted = exp.Select().select(exp.alias_(exp.Paren(this=predicate.copy()), "p"))
    counted.set("from_", tree.args["from_"].copy())
    counted.set("joins", [j.copy() for j in tree.args.get("joins") or []])
    a, b = await route.run(filtered.sql("postgres")), await route.run(counted.sql("postgres"))
    if a.failed or b.failed:
        refused = [o for o in (a, b) if o.sqlstate == "0A000"]
        return ("refused", refused[0].message or "") if refused else ("identical", "")
    true = sum(1 for row in b.rows if row[0] is True)
    if len(a.rows) != true:
        return "different", f"{len(a.rows)} rows under WHERE p, p true in {true}"
    return "identical", ""


def _candidates(tree: exp.Expression):
    """Smaller trees: each node dropped from a list it is in, or replaced by a child."""
    nodes = list(tree.walk())
    for index, node in enumerate(nodes):
        if node is tree:
            continue
        parent = node.parent
        if parent is None:
            continue
        key = node.arg_key
        siblings = parent.args.get(key)
        if isinstance(siblings, list) and len(siblings) > 1:
            smaller = tree.copy()
            target = list(smaller.walk())[index]
            target.pop()
            yield smaller
        elif key in ("where", "order", "limit", "offset", "having", "group", "distinct", "joins"):
            smaller = tree.copy()
            list(smaller.walk())[index].pop()
            yield smaller
        for child in node.iter_expressions():
            if isinstance(child, exp.Expression) and type(child) is not type(node) and \
                    not isinstance(child, (exp.Identifier, exp.DataType)):
                smaller = tree.copy()
                target = list(smaller.walk())[index]
                copy = list(target.iter_expressions())[list(node.iter_expressions()).index(child)]
                target.replace(copy.copy())
                yield smaller


async def reduce(sql: str, still_differs: Callable[[str], Awaitable[bool]], steps: int = 400) -> str:
    """Delta debugging over the sqlglot tree, greedily, trying at most `steps` smaller
    statements (a count, not a time, so that a seed reduces to the same statement on any
    machine)."""
    tree = sqlglot.parse_one(sql, read="postgres")
    improved = True
    while improved and steps > 0:
        improved = False
        for smaller in _candidates(tree):
            text = smaller.sql("postgres")
            if len(text) >= len(tree.sql("postgres")):
                continue
            steps -= 1
            if await still_differs(text):
                tree, improved = smaller, True
                break
            if steps <= 0:
                break
    return tree.sql("postgres")


async def explore(truth: Session, routes: dict[str, Session], engine_route: str, seed: int,
                  *, seconds: float, limit: int | None = None, reduce_steps: int = 400) -> Tally:
    """Generate statements from `seed` for `seconds` (or `limit` statements)."""
    rng = random.Random(seed)
    tally = Tally()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (limit is None or tally.statements < limit):
        shape, tree, ordered = statement(rng)
        sql = tree.sql("postgres")
        tally.statements += 1
        for name, session in routes.items():
            kind, detail = await against_postgres(truth, session, sql, ordered)
            tally.add(name, kind)
            if kind == "different":
                sqlstate = (await truth.run(sql)).sqlstate

                async def differs(text: str, session: Session = session, sqlstate: str | None = sqlstate) -> bool:
                    # Still different, and PostgreSQL still answers it (or still rejects it
                    # with the same SQLSTATE).
                    if (await truth.run(text)).sqlstate != sqlstate:
                        return False
                    return (await against_postgres(truth, session, text, ordered))[0] == "different"
                small = await reduce(sql, differs, reduce_steps)
                tally.findings.append(Finding(name, "postgres", small, sql, detail))
        # TLP and NoREC on the engine route, with a predicate of the statement's own scope.
        if shape == "plain" and isinstance(tree, exp.Select) and not tree.args.get("distinct") \
                and not tree.args.get("limit"):
            joined = bool(tree.args.get("joins"))
            scope = scope_of(("t", "t"), ("u", "u")) if joined else scope_of(("t", "t"))
            predicate = Builder(rng).predicate(scope, 2)
            for check_name, check in (("tlp", tlp), ("norec", norec)):
                kind, detail = await check(routes[engine_route], tree, predicate)
                tally.add(f"{engine_route} ({check_name})", kind)
                if kind == "different":
                    filtered = tree.copy()
                    filtered.set("where", exp.Where(this=predicate.copy()))
                    tally.findings.append(Finding(engine_route, check_name, filtered.sql("postgres"), sql, detail))
    return tally
