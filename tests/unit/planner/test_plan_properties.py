"""Property: running the plan the planner makes gives the rows the query itself gives.

Four small tables with NULLs (t1, t2 in source s1; u1, u2 in source s2; both sources of the
DuckDB dialect, all held by one in-process DuckDB connection where a table's remote name is
its real name) and generated PostgreSQL queries over them: filters with AND/OR/NOT, NULL,
IN, BETWEEN, LIKE; joins of every type; derived tables; DISTINCT; aggregates with GROUP
BY/HAVING; UNION [ALL]; ORDER BY with LIMIT/OFFSET; subqueries in expressions and window
functions (which the plan runs whole in the engine). Each query is planned, and its
QueryPlan run the way the executor runs it: every fragment's SQL on the connection, its
Arrow result registered under the fragment's name, then the residual SQL (or the single
fragment's rows when there is no residual). The reference is the query itself, transpiled
to DuckDB by sqlglot. Results compare as multisets; a query with a top-level ORDER BY
orders by every output column, so its rows compare as lists (which checks PostgreSQL's
NULL ordering too). Any difference is a planner bug: optimizer rules must not change answers.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa
import sqlglot
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from connectors.base import TableInfo, TableRef
from connectors.dialects import duckdb as duckdb_dialect
from planner import CatalogSnapshot, PlanSettings, SourceEntry, plan
from tests.support.planning import ENGINE_DIALECTS

SOURCES = {"s1": ("t1", "t2"), "s2": ("u1", "u2")}
TABLES = [t for names in SOURCES.values() for t in names]
ARROW = pa.schema([("a", pa.int64()), ("b", pa.int32()), ("s", pa.string())])
COLUMNS = (("a", "int"), ("b", "int"), ("s", "text"))
INTS = st.one_of(st.none(), st.integers(-2, 3))
TEXTS = st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab", "B"]))
ROWS = st.lists(st.tuples(INTS, INTS, TEXTS), max_size=6)

CATALOG = CatalogSnapshot(1, {
    source: SourceEntry(source, duckdb_dialect.DIALECT, {
        name: TableInfo(TableRef(source, name, None, name), ARROW) for name in names})
    for source, names in SOURCES.items()}, engine_dialects=ENGINE_DIALECTS)
SETTINGS = PlanSettings(tuple(SOURCES))
EMPTY: dict[str, list[tuple]] = {name: [] for name in TABLES}


# --- query generation ---------------------------------------------------------------------

@dataclass
class Scope:
    """What a FROM clause offers: (column reference, type) pairs."""

    cols: list[tuple[str, str]]
    sources: frozenset[str] = frozenset()


@dataclass
class Names:
    """Fresh aliases, so every table reference and derived table is unambiguous."""

    counter: itertools.count = field(default_factory=itertools.count)
    ctes: list[str] = field(default_factory=list)  # "name AS (query)", for the top's WITH
    params: list[int] = field(default_factory=list)  # values of $1, $2, ... in order

    def __call__(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"


def _int_literal(draw, names: Names | None = None) -> str:
    """A small integer; in a filter, sometimes a bind parameter carrying it instead, so the
    numbering of each fragment's and the residual's parameters is checked too. Only where
    the planner infers the parameter's type from its context (comparisons, arithmetic):
    inside coalesce()/nullif()/CASE it types $n as text (a known planner bug)."""
    value = draw(st.integers(-2, 3))
    if names is not None and draw(st.integers(0, 5)) == 0:
        if names.params and draw(st.booleans()):  # the same parameter used twice
            number = draw(st.integers(1, len(names.params)))
            return f"${number}"
        names.params.append(value)
        return f"${len(names.params)}"
    return str(value)


def _text_literal(draw) -> str:
    return "'" + draw(st.sampled_from(["", "a", "b", "ab", "B"])) + "'"


def _of_type(cols: list[tuple[str, str]], kind: str) -> list[str]:
    return [c for c, t in cols if t == kind]


def atom(draw, scope: Scope, names: Names) -> str:
    ints, texts = _of_type(scope.cols, "int"), _of_type(scope.cols, "text")
    kinds = ["const"] + (["int"] * 6 if ints else []) + (["text"] * 3 if texts else []) + \
        (["subquery"] if ints else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "const":
        return draw(st.sampled_from(["TRUE", "FALSE", "NULL IS NULL", "1 = 1", "random() >= 0"]))
    if kind == "int":
        c = draw(st.sampled_from(ints))
        shape = draw(st.integers(0, 10))
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        if shape == 0:
            return f"{c} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
        if shape == 1:
            values = ", ".join(draw(st.lists(st.sampled_from(["0", "1", "2", "-1", "NULL"]),
                                             min_size=1, max_size=3)))
            return f"{c} {draw(st.sampled_from(['IN', 'NOT IN']))} ({values})"
        if shape == 2:
            low = draw(st.integers(-2, 2))
            return f"{c} {draw(st.sampled_from(['', 'NOT ']))}BETWEEN {low} AND {low + draw(st.integers(0, 2))}"
        if shape == 3 and len(ints) > 1:
            return f"{c} {op} {draw(st.sampled_from(ints))}"
        if shape == 4:
            return f"coalesce({c}, {_int_literal(draw)}) {op} {_int_literal(draw)}"
        if shape == 5:
            return f"{c} + 1 {op} {_int_literal(draw, names)}"
        if shape == 6:
            return f"{c} IS {draw(st.sampled_from(['', 'NOT ']))}DISTINCT FROM {_int_literal(draw, names)}"
        if shape == 7:
            return f"CASE WHEN {c} {op} {_int_literal(draw)} THEN 1 ELSE 0 END = 1"
        if shape == 8:
            return f"nullif({c}, {_int_literal(draw)}) IS NULL"
        return f"{c} {op} {_int_literal(draw, names)}"
    if kind == "text":
        c = draw(st.sampled_from(texts))
        shape = draw(st.integers(0, 4))
        if shape == 0:
            return f"{c} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
        if shape == 1:
            return f"{c} {draw(st.sampled_from(['LIKE', 'NOT LIKE']))} " \
                   f"'{draw(st.sampled_from(['a%', '%b', '_', '%', 'a_']))}'"
        if shape == 2:
            return f"{c} IN ({_text_literal(draw)}, {_text_literal(draw)})"
        return f"{c} {draw(st.sampled_from(['=', '<>', '<', '>=']))} {_text_literal(draw)}"
    # An expression subquery: the scope becomes opaque and runs whole in the engine.
    c = draw(st.sampled_from(ints))
    alias = names("x")
    table = draw(st.sampled_from(TABLES))
    if draw(st.booleans()):
        return f"{c} IN (SELECT {alias}.a FROM {table} AS {alias} WHERE {alias}.b > {_int_literal(draw, names)})"
    return f"{draw(st.sampled_from(['', 'NOT ']))}EXISTS (SELECT 1 FROM {table} AS {alias} " \
           f"WHERE {alias}.a = {c})"


def predicate(draw, scope: Scope, names: Names, depth: int = 2) -> str:
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return atom(draw, scope, names)
    shape = draw(st.sampled_from(["AND", "OR", "NOT"]))
    if shape == "NOT":
        return f"NOT ({predicate(draw, scope, names, depth - 1)})"
    return f"({predicate(draw, scope, names, depth - 1)} {shape} {predicate(draw, scope, names, depth - 1)})"


SOURCE_OF = {t: source for source, names in SOURCES.items() for t in names}


def from_item(draw, names: Names, depth: int, join_ok: bool = True,
              avoid: frozenset[str] = frozenset()) -> tuple[str, Scope]:
    # Joins are drawn most: tables from both sources are what makes a plan federated.
    kinds = ["table", "join", "join", "join", "derived", "cte", "values"] if join_ok else \
        ["table", "table", "derived", "cte", "values"]
    kind = draw(st.sampled_from(kinds if depth > 0 else ["table", "table", "table", "values"]))
    if kind == "values":
        alias = names("v")
        rows = draw(st.lists(st.tuples(st.sampled_from(["1", "2", "NULL", "-1"]),
                                       st.sampled_from(["'a'", "'b'", "NULL"])), min_size=1, max_size=3))
        # The first row types the columns, as in PostgreSQL: keep it typed.
        body = ", ".join(f"({x if i or x != 'NULL' else '0'}, {y if i or y != 'NULL' else chr(39) * 2})"
                         for i, (x, y) in enumerate(rows))
        return f"(VALUES {body}) AS {alias}(a, s)", Scope([(f"{alias}.a", "int"), (f"{alias}.s", "text")])
    if kind == "cte":
        sql, types = select(draw, names, depth - 1)
        name, alias = names("w"), names("d")
        names.ctes.append(f"{name}(" + ", ".join(f"c{i}" for i in range(len(types))) + f") AS ({sql})")
        return f"{name} AS {alias}", Scope([(f"{alias}.c{i}", t) for i, t in enumerate(types)],
                                           frozenset(SOURCE_OF[t] for t in TABLES if f" {t} AS " in sql))
    if kind == "table":
        alias = names("r")
        # Mostly a table of a source the other join input does not use: a federated join.
        other = [t for t in TABLES if SOURCE_OF[t] not in avoid]
        table = draw(st.sampled_from(other if other and draw(st.integers(0, 3)) else TABLES))
        return f"{table} AS {alias}", Scope([(f"{alias}.{c}", t) for c, t in COLUMNS],
                                            frozenset({SOURCE_OF[table]}))
    if kind == "derived":
        sql, types = select(draw, names, depth - 1)
        alias = names("d")
        return f"({sql}) AS {alias}", Scope([(f"{alias}.c{i}", t) for i, t in enumerate(types)],
                                            frozenset(SOURCE_OF[t] for t in TABLES if f" {t} AS " in sql))
    left_sql, left = from_item(draw, names, depth - 1)
    # Left-deep: a join's right input is a table or a derived table, never a bare join.
    right_sql, right = from_item(draw, names, depth - 1, join_ok=False, avoid=left.sources)
    both = Scope(left.cols + right.cols, left.sources | right.sources)
    join = draw(st.sampled_from(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "CROSS JOIN"]))
    if join == "CROSS JOIN":
        return f"{left_sql} CROSS JOIN {right_sql}", both
    left_ints, right_ints = _of_type(left.cols, "int"), _of_type(right.cols, "int")
    if left_ints and right_ints:
        on = f"{draw(st.sampled_from(left_ints))} = {draw(st.sampled_from(right_ints))}"
    else:
        on = "TRUE"
    if draw(st.booleans()):  # an extra conjunct on one side, the other, or both
        side = draw(st.sampled_from([left, right, both]))
        on = f"{on} AND {predicate(draw, side, names, 1)}"
    return f"{left_sql} {join} {right_sql} ON {on}", both


def order_by_all(draw, width: int) -> str:
    """ORDER BY every output column: a total order, so LIMIT/OFFSET pick determined rows."""
    keys = []
    for i in range(1, width + 1):
        direction = draw(st.sampled_from(["", " DESC"]))
        nulls = draw(st.sampled_from(["", "", " NULLS FIRST", " NULLS LAST"]))
        keys.append(f"{i}{direction}{nulls}")
    return "ORDER BY " + ", ".join(keys)


def limit_clause(draw) -> str:
    text = f" LIMIT {draw(st.integers(0, 4))}"
    return text + (f" OFFSET {draw(st.integers(1, 3))}" if draw(st.booleans()) else "")


def select(draw, names: Names, depth: int, signature: list[str] | None = None,
           plain: bool = False, top: bool = False) -> tuple[str, list[str]]:
    """A SELECT whose outputs are named c0, c1, ...; returns its SQL and output types.

    `plain`: a UNION branch (no set operation, aggregate, window or ORDER BY of its own);
    `top`: the outermost query, whose ORDER BY/LIMIT `queries` adds."""
    shapes = ["plain"] * 3 + ([] if plain or signature else ["aggregate", "union", "distinct"])
    shape = draw(st.sampled_from(shapes))
    if shape == "union":
        first, types = select(draw, names, depth, plain=True)
        second, _ = select(draw, names, depth, signature=types, plain=True)
        operator = draw(st.sampled_from(["UNION", "UNION ALL", "UNION", "UNION ALL", "INTERSECT",
                                         "EXCEPT", "INTERSECT ALL", "EXCEPT ALL"]))
        return f"{first} {operator} {second}", types
    from_sql, scope = from_item(draw, names, depth)
    where = f" WHERE {predicate(draw, scope, names)}" if draw(st.booleans()) else ""
    if shape == "aggregate":
        groups = draw(st.lists(st.sampled_from([c for c, _ in scope.cols]), max_size=2, unique=True))
        types = {c: t for c, t in scope.cols}
        items = [(g, types[g]) for g in groups]
        ints = _of_type(scope.cols, "int")
        for _ in range(draw(st.integers(1, 3))):
            pick = draw(st.sampled_from(["count(*)", "count", "sum", "min", "max"]))
            c, t = draw(st.sampled_from(scope.cols))
            if pick == "count(*)":
                items.append(("count(*)", "int"))
            elif pick == "sum" and ints:
                items.append((f"sum({draw(st.sampled_from(ints))})", "int"))
            elif pick in ("sum", "count"):
                items.append((f"count({c})", "int"))
            else:
                items.append((f"{pick}({c})", t))
        having = ""
        if draw(st.booleans()):
            having = " HAVING " + draw(st.sampled_from(
                ["count(*) > 1", "count(*) >= 1"] + [f"sum({c}) > 0" for c in ints[:2]] +
                [f"min({c}) IS NOT NULL" for c, _ in scope.cols[:2]]))
        group_by = f" GROUP BY {', '.join(groups)}" if groups else ""
        outputs = ", ".join(f"{e} AS c{i}" for i, (e, _) in enumerate(items))
        sql = f"SELECT {outputs} FROM {from_sql}{where}{group_by}{having}"
        types_out = [t for _, t in items]
    else:
        if signature is None:
            chosen = draw(st.lists(st.sampled_from(scope.cols), min_size=1, max_size=3))
            exprs = []
            for c, t in chosen:
                form = draw(st.integers(0, 6))
                if t == "int" and form == 0:
                    exprs.append((f"{c} + 1", t))
                elif t == "int" and form == 1:
                    exprs.append((f"coalesce({c}, 0)", t))
                elif t == "int" and form == 2 and not plain:
                    # A window function: the scope is not modelled and runs in the engine.
                    exprs.append((f"count(*) OVER (PARTITION BY {c})", t))
                elif t == "int" and form == 3 and not plain:
                    x = names("x")
                    exprs.append((f"(SELECT count(*) FROM {draw(st.sampled_from(TABLES))} AS {x} "
                                  f"WHERE {x}.a = {c})", t))
                elif t == "text" and form == 0:
                    exprs.append((f"{c} || 'x'", t))
                elif t == "text" and form == 1:
                    exprs.append((f"upper({c})", t))
                else:
                    exprs.append((c, t))
        else:
            exprs = []
            for t in signature:
                candidates = _of_type(scope.cols, t)
                literal = "7" if t == "int" else "'z'"
                exprs.append((draw(st.sampled_from(candidates)) if candidates else literal, t))
        distinct = "DISTINCT " if shape == "distinct" else ""
        outputs = ", ".join(f"{e} AS c{i}" for i, (e, _) in enumerate(exprs))
        sql = f"SELECT {distinct}{outputs} FROM {from_sql}{where}"
        types_out = [t for _, t in exprs]
    if not plain and not top and draw(st.integers(0, 3)) == 0:
        sql += f" {order_by_all(draw, len(types_out))}{limit_clause(draw)}"
    return sql, types_out


@dataclass(frozen=True)
class Query:
    """A generated query and how its answer is checked.

    multiset: same rows, any order. ordered: a total ORDER BY, same rows in the same order.
    some: a LIMIT without ORDER BY picks any rows: as many as the query gives, each one a
    row of `whole` (the query without its limit) - which is what lets limit pushdown
    (through projections, UNION ALL, outer joins, into scans) be checked at all.
    """

    sql: str
    check: str
    whole: str = ""
    params: tuple[int, ...] = ()


def limit_friendly(draw, names: Names) -> str:
    """A limit the rules may push: over an outer join's preserved side or UNION ALL branches
    of two sources, with filters the scans take first (then the limit goes into a scan)."""
    first, second = draw(st.sampled_from(SOURCES["s1"])), draw(st.sampled_from(SOURCES["s2"]))
    left, right = names("r"), names("r")
    left_scope = Scope([(f"{left}.{c}", t) for c, t in COLUMNS])
    right_scope = Scope([(f"{right}.{c}", t) for c, t in COLUMNS])
    left_where = f" WHERE {atom(draw, left_scope, names)}" if draw(st.booleans()) else ""
    if draw(st.booleans()):
        right_where = f" WHERE {atom(draw, right_scope, names)}" if draw(st.booleans()) else ""
        return f"SELECT {left}.a AS c0, {left}.s AS c1 FROM {first} AS {left}{left_where} UNION ALL " \
               f"SELECT {right}.b AS c0, {right}.s AS c1 FROM {second} AS {right}{right_where}"
    join = draw(st.sampled_from(["LEFT JOIN", "RIGHT JOIN"]))
    where = left_where if join == "LEFT JOIN" else \
        (f" WHERE {atom(draw, right_scope, names)}" if draw(st.booleans()) else "")
    return f"SELECT {left}.a AS c0, {right}.s AS c1 FROM {first} AS {left} {join} {second} AS {right} " \
           f"ON {left}.a = {right}.a{where}"


@st.composite
def queries(draw) -> Query:
    names = Names()
    if draw(st.integers(0, 5)) == 0:
        sql = limit_friendly(draw, names)
        return Query(sql + limit_clause(draw), "some", sql, tuple(names.params))
    sql, types = select(draw, names, depth=2, top=True)
    if names.ctes:
        sql = f"WITH {', '.join(names.ctes)} {sql}"
    params = tuple(names.params)
    check = draw(st.sampled_from(["multiset", "ordered", "some"]))
    if check == "ordered":
        return Query(f"{sql} {order_by_all(draw, len(types))}"
                     f"{limit_clause(draw) if draw(st.booleans()) else ''}", check, params=params)
    if check == "some":
        return Query(sql + limit_clause(draw), check, sql, params)
    return Query(sql, check, params=params)


# --- running -----------------------------------------------------------------------------

def _load(con: duckdb.DuckDBPyConnection, data: dict[str, list[tuple]]) -> None:
    for name, rows in data.items():
        columns = list(zip(*rows)) if rows else [[], [], []]
        table = pa.Table.from_arrays([pa.array(list(col), type=f.type) for col, f in zip(columns, ARROW)],
                                     schema=ARROW)
        con.register(name, table)


def _bound(numbers: tuple[int, ...], params: tuple[int, ...]) -> list[int]:
    """The statement parameters a text numbers $1, $2, ... (as gateway.executor.execute binds them)."""
    return [params[n - 1] for n in numbers]


def run_plan(con: duckdb.DuckDBPyConnection, sql: str, params: tuple[int, ...] = ()) -> list[tuple]:
    query_plan = plan(sql, CATALOG, SETTINGS)
    assert len(query_plan.param_types) == len(params)
    results = {}
    for fragment in query_plan.fragments:
        bound = _bound(fragment.param_numbers, params) if fragment.param_numbers else \
            list(params) if fragment.uses_params else []
        results[fragment.name] = con.sql(fragment.sql, params=bound or None).to_arrow_table()
    if query_plan.residual_sql is None:
        (only,) = results.values()
        return [tuple(row.values()) for row in only.to_pylist()]
    for name, table in results.items():
        con.register(name, table)
    try:
        return con.execute(query_plan.residual_sql,
                           _bound(query_plan.residual_params, params)).fetchall()
    finally:
        for name in results:
            con.unregister(name)


def run_reference(con: duckdb.DuckDBPyConnection, sql: str, params: tuple[int, ...] = ()) -> list[tuple]:
    return con.execute(sqlglot.transpile(sql, read="postgres", write="duckdb")[0], list(params)).fetchall()


@settings(derandomize=True, max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(data=st.fixed_dictionaries({name: ROWS for name in TABLES}), query=queries())
# Counterexamples found while writing this test, kept so they run every time:
# a right join whose null-supplying input the renderer wrapped in a derived table (the
# fragment's select list named the table inside it: "Referenced table r0 not found") ...
@example(data={**EMPTY, "t1": [(1, 1, "a"), (None, 2, None)], "u1": [(1, 0, "b")]},
         query=Query("SELECT r0.a AS c0, r1.b AS c1 FROM t1 AS r0 RIGHT JOIN t1 AS r1 "
                     "ON r0.a = r1.a AND r0.a IS NULL JOIN u1 AS r2 ON r1.a = r2.a", "multiset"))
# ... and a CTE read by a scope the plan does not model (planner.build.Unmodelled escaped).
@example(data={**EMPTY, "t1": [(1, 1, "a"), (2, 2, None)], "u1": [(1, 0, "b")]},
         query=Query("WITH w1(c0) AS (SELECT r0.a FROM t1 AS r0) SELECT count(*) OVER "
                     "(PARTITION BY d2.c0) AS c0 FROM w1 AS d2 JOIN u1 AS r3 ON d2.c0 = r3.a", "multiset"))
def test_plan_gives_the_query_answer(data: dict[str, list[tuple]], query: Query) -> None:
    con = duckdb.connect()
    try:
        _load(con, data)
        expected = run_reference(con, query.sql, query.params)
        whole = run_reference(con, query.whole, query.params) if query.check == "some" else []
        got = run_plan(con, query.sql, query.params)
    finally:
        con.close()
    if query.check == "ordered":
        assert got == expected, query.sql
    elif query.check == "some":
        assert len(got) == len(expected), query.sql
        assert not Counter(got) - Counter(whole), query.sql
    else:
        assert Counter(got) == Counter(expected), query.sql
