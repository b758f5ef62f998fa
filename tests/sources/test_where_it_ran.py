"""Where each trap ran: answers through the real gateway, proven by the sources' own logs.

Every trap (docs/design.md §4) is sent through one gateway process that mounts the same `trap`
table from every source kind. For each source the test checks three things:
1. the answer equals PostgreSQL's for the same query over the same data (MySQL and
   SQLite cannot store NaN, SQLite has no time zones: their reference tables in
   PostgreSQL hold the values those sources really hold);
2. EXPLAIN gives each conjunct the fate the capability table promises (pushed exact,
   pushed inexact and re-checked by the engine, or local), per source;
3. the source's own statement log (PostgreSQL's log_statement, MariaDB's general log, our
   statement logs for the others) shows the SQL EXPLAIN announced, and the trap's
   predicate appears in it exactly when it was pushed: a local trap leaves only a scan.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import asyncpg
import psycopg
import pytest
from psycopg.types.string import TextLoader

from tests.sources.conftest import KINDS, SOURCE_OF, Federation
from tests.sources.statement_logs import LogTail

# The PostgreSQL table holding the same values as each kind's `trap`.
REFERENCE = {"postgres": "trap", "mysql": "trap_nonan", "sqlite": "trap_naive",
             "duckdb": "trap", "parquet": "trap", "csv": "trap"}

# name -> (predicate, regex that finds the predicate in any dialect's SQL, fates) where
# fates maps a kind to the sorted fates of the predicate's conjuncts; kinds not listed
# push every conjunct exactly.
E, I, L = "exact", "inexact", "local"
FILTER_TRAPS: dict[str, tuple[str, str, dict[str, list[str]]]] = {
    "like_escape": (r"s LIKE 'a\_%'", r"LIKE 'a\\+_%'", {"mysql": [I], "sqlite": [I]}),
    "like_case": ("s LIKE 'A%'", r"LIKE 'A%'", {"mysql": [I], "sqlite": [I]}),
    "ilike": ("s ILIKE 'a_c'", r"'a_c'", {"mysql": [I], "sqlite": [I]}),
    "eq_case": ("s = 'abc'", r"= 'abc'", {"mysql": [I]}),
    "eq_pad": ("s = 'a'", r"= 'a'", {"mysql": [I]}),
    "neq_case": ("s <> 'abc'", r"(<>|!=) 'abc'", {"mysql": [L]}),
    "in_case": ("s IN ('abc', 'a')", r"IN \('abc', 'a'\)", {"mysql": [I]}),
    "text_range": ("s > 'a' AND s < 'abd'", r"'abd'", {"mysql": [L, L]}),
    "text_between": ("s BETWEEN 'A' AND 'a_z'", r"'a_z'", {"mysql": [L]}),
    "not_in_null": ("n NOT IN (1, NULL)", r"NULL\)", {}),
    "not_in": ("n NOT IN (1, 2)", r"IN \(1, 2\)", {}),
    "nan_gt": ("f > 1", r"f\W* > 1", {}),
    "nan_eq": ("f = 'NaN'::float8", r"NaN", {"mysql": [L], "sqlite": [L]}),
    "int_div": ("n / 2 = -3", r"(/|//|DIV) 2 = -3", {}),
    "int_div_col": ("n <> 0 AND 7 / n = 3", r"7 (/|//|DIV) ", {"mysql": [E, L]}),
    "mod": ("n % 2 = 1", r"(%|MOD) 2 = 1", {}),
    "ts_range": ("ts >= '2024-03-10 07:00:00+00' AND ts < '2024-11-03 06:00:00+00'",
                 r"2024-11-03", {"mysql": [L, L], "sqlite": [L, L]}),
    "ts_offset": ("ts >= '2024-03-09 23:00:00-08'", r"2024-03-09",
                  {"mysql": [L], "sqlite": [L]}),
    "volatile": ("random() < 2", r"(?i)rand", {k: [L] for k in KINDS}),
    "now": ("ts < now()", r"(?i)now|current_timestamp", {k: [L] for k in KINDS}),
}
# Constant expressions: computed by the source wherever they are EXACT there (the whole
# query then ships), by the engine otherwise; the value must be PostgreSQL's either way.
# The third item lists the kinds that keep the expression local.
VALUE_TRAPS = {
    "seven_halves": ("7 / 2", r"7 (/|//|DIV) 2", ()),
    "minus_seven_halves": ("-7 / 2", r"-7 (/|//|DIV) 2", ()),
    "literal_case": ("'ABC' = 'abc'", r"'ABC' = 'abc'", ()),
    "literal_pad": ("'a ' = 'a'", r"'a ' = 'a'", ()),
    # SQLite's LIKE ignores case: not EXACT, so not computed there.
    "like_literal": (r"'a_b' LIKE 'a\_%'", r"'a_b' LIKE", ("sqlite",)),
    "like_literal_no": (r"'axb' LIKE 'a\_%'", r"'axb' LIKE", ("sqlite",)),
}


async def reference(pgref: asyncpg.Connection, sql: str, args: Sequence = ()) -> list | str:
    """PostgreSQL's own answer (rows, or the SQLSTATE of its error)."""
    try:
        return [tuple(r.values()) for r in await pgref.fetch(sql, *args)]
    except asyncpg.PostgresError as exc:
        return exc.sqlstate


DESCRIBE = re.compile(r"LIMIT 0\b")


class Traced:
    """One query through the gateway: its answer, EXPLAIN, and what the source logged."""

    def __init__(self, answer: list | str, explain: list[str], logged: list[str]) -> None:
        self.answer, self.explain, self.logged = answer, explain, logged

    def fates(self) -> list[str]:
        fates = []
        for line in self.explain:
            if line.startswith("Conjunct "):
                fates.append(E if "pushed exact" in line else I if "pushed inexact" in line else L)
        return sorted(fates)

    def remote_sql(self) -> list[str]:
        return [line.split(": ", 1)[1] for line in self.explain if "Remote frag_" in line]


async def traced(fed: Federation, gw: asyncpg.Connection, kind: str, sql: str,
                 args: Sequence = ()) -> Traced:
    # The gateway's EXPLAIN takes no parameters: queries with some go unexplained.
    explain = [] if args else [r[0] for r in await gw.fetch(f"EXPLAIN {sql}")]
    tail = LogTail(kind, fed.logs[kind])
    try:
        answer: list | str = [tuple(r.values()) for r in await gw.fetch(sql, *args)]
    except asyncpg.PostgresError as exc:
        answer = exc.sqlstate
    # Describing the statement (asyncpg prepares it) runs the zero-row form first.
    logged = [s for s in tail.wait_for("trap") if "trap" in s and not DESCRIBE.search(s)]
    return Traced(answer, explain, logged)


def assert_logged_as_explained(t: Traced) -> str:
    """The source ran the SQL EXPLAIN announced (its only statement on `trap`)."""
    assert len(t.logged) == 1, t.logged
    if t.explain:
        remote = t.remote_sql()
        assert len(remote) == 1, t.explain
        # PostgreSQL wraps it in COPY (...) TO STDOUT; the others log it as sent.
        assert remote[0] in t.logged[0], (remote[0], t.logged[0])
    return t.logged[0]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("trap", sorted(FILTER_TRAPS))
async def test_filter_trap_runs_where_explain_says(federation: Federation, gw, pgref,
                                                   kind: str, trap: str) -> None:
    predicate, needle, fates = FILTER_TRAPS[trap]
    query = "SELECT id FROM {} WHERE {} ORDER BY id"
    want = await reference(pgref, query.format(REFERENCE[kind], predicate))
    t = await traced(federation, gw, kind, query.format(f"{SOURCE_OF[kind]}.trap", predicate))
    assert t.answer == want, (kind, trap, t.explain)
    conjuncts = len(t.fates())
    expected = fates.get(kind, [E] * conjuncts)
    assert t.fates() == sorted(expected), t.explain
    ran = assert_logged_as_explained(t)
    pushed = any(f != L for f in expected)
    assert ("WHERE" in ran.upper()) == pushed, ran
    # The needle's conjunct ships unless its fates are local; on MySQL `n <> 0` ships
    # while `7 / n = 3` (a divisor that may be zero) stays local.
    needle_pushed = pushed and (trap, kind) != ("int_div_col", "mysql")
    assert bool(re.search(needle, ran)) == needle_pushed, (needle, ran)
    if I in expected:
        # Pushed inexact: the engine re-checks the same predicate over the source's rows.
        engine = next(line for line in t.explain if line.startswith("Engine:"))
        assert re.search(needle, engine), engine


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("trap", sorted(VALUE_TRAPS))
async def test_value_trap_computed_by_the_source(federation: Federation, gw, pgref,
                                                 kind: str, trap: str) -> None:
    expression, needle, local = VALUE_TRAPS[trap]
    query = f"SELECT {expression} AS v FROM {{}} WHERE id = 1"
    want = await reference(pgref, query.format(REFERENCE[kind]))
    t = await traced(federation, gw, kind, query.format(f"{SOURCE_OF[kind]}.trap"))
    assert t.answer == want, (kind, t.explain)
    ran = assert_logged_as_explained(t)
    assert bool(re.search(needle, ran)) == (kind not in local), ran
    if kind in local:
        engine = next(line for line in t.explain if line.startswith("Engine:"))
        assert re.search(needle, engine), engine


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sql", ["SELECT 1 / 0 AS v FROM {}.trap WHERE id = 1",
                                 "SELECT id FROM {}.trap WHERE id / n > 0"])
async def test_division_by_zero_is_22012_whatever_the_source(federation: Federation, gw, pgref,
                                                             kind: str, sql: str) -> None:
    assert await reference(pgref, sql.format("public")) == "22012"
    t = await traced(federation, gw, kind, sql.format(SOURCE_OF[kind]))
    assert t.answer == "22012", t.explain
    assert await gw.fetchval(f"SELECT count(*) FROM {SOURCE_OF[kind]}.trap") == 7


# Parameters arrive as CAST($n AS type) from the planner: integers and text ship to every
# source (MySQL binds them as literals, SQLite as ?n, which its log shows expanded);
# floats stay local on MySQL/SQLite (NaN has no literal there / binds as NULL). The regex
# finds the parameter in the logged SQL: a literal (MySQL, SQLite), CAST('v' AS t)
# (PostgreSQL: asyncpg inlines COPY's parameters) or CAST($n AS t) (DuckDB runs it bound).
V = r"(CAST\()?(\$\d|'?{}\b'?)"
PARAM_TRAPS = {
    "int_eq": ("id = $1", (3,), r"id\W* = " + V.format("3"), {}),
    "text_eq": ("s = $1", ("abc",), r"s\W* = " + V.format("abc"), {"mysql": [I]}),
    "int_in": ("n NOT IN ($1, $2)", (1, 2), r"IN \(" + V.format("1"), {}),
    "float_gt": ("f > $1", (1.0,), r"f\W* > " + V.format("1"), {"mysql": [L], "sqlite": [L]}),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("trap", sorted(PARAM_TRAPS))
async def test_parameter_casts_ship(federation: Federation, gw, pgref, kind: str,
                                    trap: str) -> None:
    predicate, args, needle, fates = PARAM_TRAPS[trap]
    query = "SELECT id FROM {} WHERE {} ORDER BY id"
    want = await reference(pgref, query.format(REFERENCE[kind], predicate), args)
    t = await traced(federation, gw, kind, query.format(f"{SOURCE_OF[kind]}.trap", predicate), args)
    assert t.answer == want
    expected = fates.get(kind, [E])
    ran = assert_logged_as_explained(t)
    pushed = any(f != L for f in expected)
    assert bool(re.search(needle, ran)) == pushed, (needle, ran)
    assert ("WHERE" in ran.upper()) == pushed, ran


def _text_rows(dsn: str, sql: str) -> list[tuple]:
    """Rows exactly as PostgreSQL's text format spells them, in a DST-observing zone."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET TimeZone = 'America/New_York'")
        for name in ("int4", "int8", "float8", "timestamp", "timestamptz"):
            conn.adapters.register_loader(name, TextLoader)
        return [tuple(r) for r in conn.execute(sql).fetchall()]


@pytest.mark.parametrize("kind", KINDS)
async def test_timestamps_and_floats_round_trip_as_postgres_prints_them(
        federation: Federation, gw, pgref, kind: str) -> None:
    """Instants either side of the 2024 US DST change and float text (shortest exact
    digits, NaN, 1e+300) come back as PostgreSQL prints them, in the client's zone."""
    query = "SELECT id, ts, f FROM {} ORDER BY id"
    want = _text_rows(federation.pg.dsn, query.format(REFERENCE[kind]))
    got = _text_rows(federation.gateway.dsn, query.format(f"{SOURCE_OF[kind]}.trap"))
    assert got == want
    # Binary format (asyncpg) too: the same instants.
    rows = await gw.fetch(query.format(f"{SOURCE_OF[kind]}.trap"))
    ref = await reference(pgref, f"SELECT id, ts, f FROM {REFERENCE[kind]} ORDER BY id")
    assert [(r["id"], r["ts"]) for r in rows] == [(i, ts) for i, ts, _ in ref]
