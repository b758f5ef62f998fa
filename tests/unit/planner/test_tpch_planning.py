"""The 22 TPC-H queries plan against catalogs that split the eight tables over two sources,
and every single-table WHERE conjunct on a remote table is evaluated by that table's source.

The queries are tests/fixtures/tpch/qNN.sql: the qgen text with the default substitution
parameters, in PostgreSQL syntax (Q15's view as a CTE). The tables have the columns and
types the demo exposes (gateway.server.demo.TPCH_SCHEMA), in two DuckDB-dialect sources.

"Lands in its fragment" means: for each conjunct of any WHERE clause (subqueries included)
that names columns of exactly one base table and holds no subquery, some remote fragment
either has a scan of that table (same alias) carrying the conjunct as a pushed filter, or
evaluates it anywhere inside a larger sub-plan it ships (a filter or join condition); a
statement that ships whole to one source trivially satisfies it.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
from sqlglot import exp

import planner.plan  # noqa: F401  (the module, shadowed on the package by the function)
from connectors.base import Classification, Dialect, Pushdown, TableInfo, TableRef
from connectors.dialects import duckdb as duckdb_dialect
from gateway.server.demo import TPCH_SCHEMA
from planner import CatalogSnapshot, PlanSettings, SourceEntry, pgcompat, plan
from planner.build import build
from planner.conjuncts import split_conjuncts
from planner.logical import Filter, Join, Node, Scan
from planner.optimizer import RuleContext, optimize
from planner.parse import parse_query
from planner.pipeline import BATCHES
from planner.pushdown import fragments
from tests.support.planning import ENGINE_DIALECTS

QUERIES = Path(__file__).resolve().parents[2] / "fixtures" / "tpch"
_front = sys.modules["planner.plan"]

_ARROW = {"BIGINT": pa.int64(), "INTEGER": pa.int32(), "DATE": pa.date32(), "VARCHAR": pa.string()}

# Two ways to cut the schema: the big fact tables apart from the dimensions, and orders
# with its customers apart from lineitem with its parts and suppliers.
SPLITS = {
    "facts|dimensions": {"facts": ("lineitem", "orders", "partsupp"),
                         "dims": ("part", "supplier", "customer", "nation", "region")},
    "orders|lineitem": {"sales": ("orders", "customer", "nation", "region"),
                        "stock": ("lineitem", "part", "partsupp", "supplier")},
}


def arrow_type(sql_type: str) -> pa.DataType:
    if sql_type.startswith("DECIMAL"):
        precision, scale = sql_type.removeprefix("DECIMAL(").rstrip(")").split(",")
        return pa.decimal128(int(precision), int(scale))
    return _ARROW[sql_type]


def tpch_catalog(split: dict[str, tuple[str, ...]]) -> CatalogSnapshot:
    return CatalogSnapshot(1, {
        source: SourceEntry(source, duckdb_dialect.DIALECT, {
            table: TableInfo(TableRef(source, table, "main", table),
                             pa.schema([(c, arrow_type(t)) for c, t in TPCH_SCHEMA[table]]))
            for table in tables})
        for source, tables in split.items()}, engine_dialects=ENGINE_DIALECTS)


def query_text(number: int) -> str:
    return (QUERIES / f"q{number:02d}.sql").read_text()


def single_table_conjuncts(tree: exp.Expression) -> list[tuple[str, str, exp.Expression]]:
    """(alias, table, conjunct) for each WHERE conjunct naming exactly one base table."""
    base = {t.alias_or_name: t.name for t in tree.find_all(exp.Table) if t.db}
    found = []
    for select in tree.find_all(exp.Select):
        where = select.args.get("where")
        for conjunct in split_conjuncts(where.this if where is not None else None):
            if conjunct.find(exp.Subquery, exp.Exists) is not None:
                continue
            qualifiers = {c.table for c in conjunct.find_all(exp.Column)}
            if len(qualifiers) == 1 and (alias := qualifiers.pop()) in base:
                found.append((alias, base[alias], conjunct.copy()))
    return found


def _nodes(node: Node):
    yield node
    for child in node.children:
        yield from _nodes(child)


def _evaluates(fragment: Node, alias: str, table: str, conjunct: exp.Expression) -> bool:
    for node in _nodes(fragment):
        if isinstance(node, Scan) and node.alias == alias and node.table.ref.name == table \
                and any(f == conjunct for f in node.filters):
            return True
        # Inside a larger shipped sub-plan, a filter or join condition runs remotely too.
        if isinstance(node, (Filter, Join)) and node.condition is not None and \
                any(c == conjunct for c in split_conjuncts(node.condition)):
            return True
    return False


def misplaced(sql: str, catalog: CatalogSnapshot, settings: PlanSettings) -> list[str]:
    """The single-table conjuncts no fragment evaluates, as text (empty when all land)."""
    text = pgcompat.normalize(sql)
    tree = pgcompat.rewrite(parse_query(text), catalog.catalog_functions)
    _front._name_outputs(tree, text)
    _front._session_values(tree, settings)
    _front._resolve_tables(tree, catalog, settings)
    tree = _front._annotate(tree, catalog)
    expected = single_table_conjuncts(tree)
    optimized = optimize(build(tree, catalog), RuleContext(catalog), BATCHES)
    shipped, _ = fragments(optimized, catalog)
    return [f"{alias} ({table}): {conjunct.sql('postgres')}" for alias, table, conjunct in expected
            if not any(_evaluates(f, alias, table, conjunct) for f in shipped)]


CASES = [(split, n) for split in SPLITS for n in range(1, 23)]


@pytest.mark.parametrize(("split", "number"), CASES, ids=[f"{s}:q{n:02d}" for s, n in CASES])
def test_tpch_query_plans_and_pushes_its_filters(split: str, number: int) -> None:
    catalog = tpch_catalog(SPLITS[split])
    settings = PlanSettings(tuple(SPLITS[split]))
    sql = query_text(number)
    query_plan = plan(sql, catalog, settings)
    assert query_plan.fragments and query_plan.explain()
    if query_plan.residual_sql is None:
        return  # ships whole to one source: every conjunct runs there
    assert misplaced(sql, catalog, settings) == []


def test_the_queries_are_all_there() -> None:
    assert sorted(p.name for p in QUERIES.glob("q*.sql")) == [f"q{n:02d}.sql" for n in range(1, 23)]


def test_the_check_sees_a_conjunct_kept_local() -> None:
    """The placement check is not vacuous: a source that takes no filter fails it."""
    refuse = Dialect("refuses", "duckdb", classify=lambda e, t: Classification(Pushdown.UNSUPPORTED, "test"),
                     render=duckdb_dialect.to_duckdb, ships=frozenset())
    split = SPLITS["facts|dimensions"]
    catalog = tpch_catalog(split)
    catalog = replace(catalog, version=2, sources={
        **catalog.sources, "dims": replace(catalog.sources["dims"], dialect=refuse)})
    assert misplaced(query_text(3), catalog, PlanSettings(tuple(split))) == [
        "customer (customer): customer.c_mktsegment = 'BUILDING'"]
