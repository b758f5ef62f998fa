"""Residual SQL of aggregates typed as PostgreSQL types them (planner/pg_aggregates.py).

Fixtures are tests/fixtures/planner/e2e_aggregate_types.sql, in the format of e2e_engines.sql
(tests/unit/planner/test_plan_engines.py): the SQL, `----`, then what the DuckDB engine and the
Spark engine are asked to run. FEDGATE_UPDATE_FIXTURES=1 rewrites the expected lines.
Fragments shipped to a source are not rewritten: the source computes its own aggregates.
A statement shipped whole to a source that runs it in DuckDB is the exception: no engine
sees it, so the planner types its sums and averages there (every scope of it).
"""

from __future__ import annotations


import pytest

from planner import PlanSettings, plan
from tests.unit.planner.test_plan_e2e import FIXTURES, catalog_for, check_case, read_cases
from tests.unit.planner.test_plan_engines import residuals

PATH = FIXTURES / "e2e_aggregate_types.sql"
CASES = read_cases(PATH)


@pytest.mark.parametrize(("name", "sql", "expected"), CASES, ids=[c[0] for c in CASES])
def test_aggregate_residual(name: str, sql: str, expected: list[str]) -> None:
    check_case(PATH, name, sql, expected, residuals(sql))


@pytest.mark.parametrize("dialect", ["postgres", "duckdb"])
def test_fragments_keep_the_sources_aggregates(dialect: str) -> None:
    """An aggregate computed at a source is that source's; the residual passes it on."""
    sql = ("select x.n, x.a, x.s, c.c_name from (select o.o_cust n, avg(o.o_total) a, sum(o.o_id) s "
           "from orders o group by o.o_cust) x join customers c on c.c_id = x.n")
    query_plan = plan(sql, catalog_for(dialect), PlanSettings(("main", "side")))
    shipped = [f.sql for f in query_plan.fragments if "AVG(" in f.sql.upper()]
    assert len(shipped) == 1 and not _averages(shipped[0]) and "CAST(SUM" not in shipped[0].upper()
    assert not _averages(query_plan.residual_sql or "")


def _averages(sql: str) -> int:
    """Exact averages in rendered SQL: the marker, or DuckDB's written-out division (at a
    fixed scale, or, as an output of the statement, PostgreSQL's per-value scale)."""
    return sql.upper().count("FEDGATE_AVG(") + sql.upper().count("// NULLIF(COUNT(") + \
        sql.upper().count("NULLIF(CAST(COUNT(")


def _shipped_whole(sql: str, dialect: str) -> str:
    query_plan = plan(sql, catalog_for(dialect), PlanSettings(("main", "side")))
    assert query_plan.residual_sql is None and len(query_plan.fragments) == 1
    return query_plan.fragments[0].sql


@pytest.mark.parametrize(("dialect", "typed"), [("duckdb", True), ("postgres", False)])
def test_a_statement_shipped_whole_is_typed_for_duckdb_only(dialect: str, typed: bool) -> None:
    shipped = _shipped_whole("select sum(o.o_id) s, avg(o.o_total) a from orders o", dialect).upper()
    assert bool(_averages(shipped)) == typed and ("AS DECIMAL(38, 0)" in shipped) == typed


def test_every_scope_of_a_statement_shipped_whole_is_typed() -> None:
    """The outer average reads the inner one as a decimal (as PostgreSQL's numeric), so it
    is an exact division too; a scalar subquery's output is typed in its own scope, once."""
    shipped = _shipped_whole("select avg(x.a) from (select o_cust, avg(o_total) a from orders "
                             "group by o_cust) x", "duckdb")
    assert _averages(shipped) == 2
    shipped = _shipped_whole("select o.o_cust, (select sum(i.o_id) from orders i "
                             "where i.o_cust = o.o_cust) from orders o", "duckdb")
    assert shipped.count("SUM(CAST(i.o_id AS DECIMAL(38, 0)))") == 1


def test_a_statement_shipped_whole_without_aggregates_is_left_as_it_was() -> None:
    assert _shipped_whole("select o_id from orders where o_cust = 3", "duckdb") == \
        'SELECT o_id FROM "main"."orders" AS orders WHERE o_cust = 3'


def test_an_average_of_a_wide_decimal_keeps_the_engines_average() -> None:
    """An exact average of a DECIMAL(38, 0) would round to a whole number: left as float8."""
    from sqlglot import exp, parse_one

    from planner.pg_aggregates import pg_typed

    def typed(sql: str, column: str) -> str:
        item = parse_one(f"SELECT {sql} FROM t").expressions[0]
        return pg_typed(item, lambda c: exp.DataType.build(column)).sql("duckdb")

    assert typed("AVG(x)", "DECIMAL(38, 0)") == "AVG(x)"
    assert typed("AVG(x)", "DECIMAL(38, 2)") == "AVG(x)"
    assert "FEDGATE_AVG" in typed("AVG(x)", "BIGINT")
    assert "DECIMAL(38, 16)" in typed("AVG(x)", "DECIMAL(15, 2)")
