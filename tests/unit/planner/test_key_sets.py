"""The shape of a dynamic filter's key condition per source dialect (planner.key_sets).

PostgreSQL takes a large key set as one array literal; DuckDB-family, MySQL, SQLite and
Spark sources take a short IN list, then a min/max range for integers and dates; text
keys beyond a list are never sent as a range. The planner-level cases plan a real
cross-source join and render the probe fragment's narrowed SQL; that the SQL runs and
answers right is tests/integration/test_dynamic_filter_key_sets.py.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from connectors.base import TableInfo, TableRef
from connectors.dialects import duckdb, files, postgres
from planner import CatalogSnapshot, PlanSettings, SourceEntry, plan
from planner.key_sets import ARRAY_LIMIT, IN_LIST_LIMIT, key_condition, shape_for
from tests.support.planning import ENGINE_DIALECTS

INTS = list(range(1, 5001))
DIALECTS = ("postgres", "duckdb", "duckdb-over-files", "mysql", "sqlite", "spark")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_short_lists_are_in_lists_everywhere(dialect: str) -> None:
    assert shape_for(dialect, list(range(IN_LIST_LIMIT))).kind == "in"
    assert key_condition((None, "k"), [1, 2, 3], dialect).sql(dialect="postgres") == '"k" IN (1, 2, 3)'


def test_no_key_reads_nothing() -> None:
    shape = shape_for("postgres", [None])
    assert (shape.kind, shape.keys) == ("in", 0)
    assert key_condition(("t", "k"), [None], "postgres").sql("postgres") == '"t"."k" IN (NULL)'


def test_postgres_takes_large_key_sets_as_one_array() -> None:
    shape = shape_for("postgres", INTS)
    assert (shape.kind, shape.keys, shape.element) == ("array", 5000, "BIGINT")
    sql = key_condition(("l", "l_partkey"), [5, 7, 9] + INTS[10:IN_LIST_LIMIT + 10], "postgres").sql("postgres")
    assert sql.startswith('"l"."l_partkey" = ANY(CAST(\'{5,7,9,11,12,')
    assert sql.endswith(",1010}' AS BIGINT[]))")
    assert shape_for("postgres", list(range(ARRAY_LIMIT))).kind == "array"
    assert shape_for("postgres", list(range(ARRAY_LIMIT + 1))).kind == "range"


def test_postgres_array_of_dates() -> None:
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(1500)]
    sql = key_condition((None, "d"), days, "postgres").sql("postgres")
    assert sql.startswith("\"d\" = ANY(CAST('{2024-01-01,2024-01-02,")
    assert sql.endswith("}' AS DATE[]))")


def test_postgres_array_of_text_follows_array_literal_rules() -> None:
    """Every element double-quoted, `\\` and `"` escaped inside; the SQL literal doubles `'`."""
    tricky = ['a"b', "c\\d", "e'f", "", "NULL", "{x,y}", " pad ", "ü€"]
    values = tricky + [f"k{i}" for i in range(IN_LIST_LIMIT)]
    condition = key_condition((None, "s"), values, "postgres")
    literal = condition.find(exp.Literal)
    assert literal.this.startswith('{"a\\"b","c\\\\d","e\'f","","NULL","{x,y}"," pad ","ü€","k0",')
    sql = condition.sql("postgres")
    assert "\"e''f\"" in sql and sql.endswith("}' AS TEXT[]))")
    # sqlglot reads back the very literal (what a page-range split re-renders).
    parsed = sqlglot.parse_one(f"SELECT 1 FROM t WHERE {sql}", read="postgres")
    assert [lit.this for lit in parsed.find_all(exp.Literal) if lit.is_string] == [literal.this]


def test_postgres_text_array_drops_keys_no_text_can_hold() -> None:
    values = ["a\x00b"] + [f"k{i}" for i in range(IN_LIST_LIMIT)]
    literal = key_condition((None, "s"), values, "postgres").find(exp.Literal).this
    assert "\x00" not in literal and literal.startswith('{"k0",')


def test_integers_beyond_bigint_fall_back_to_a_range() -> None:
    values = [1 << 63] + INTS
    assert shape_for("postgres", values).kind == "range"


@pytest.mark.parametrize("dialect", ["duckdb", "duckdb-over-files", "mysql", "sqlite", "spark"])
def test_other_sources_take_a_range_of_integers_and_dates(dialect: str) -> None:
    assert shape_for(dialect, INTS).kind == "range"
    assert key_condition((None, "k"), INTS, dialect).sql("postgres") == '"k" BETWEEN 1 AND 5000'
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(1500)]
    assert shape_for(dialect, days).kind == "range"


@pytest.mark.parametrize("dialect", ["duckdb", "duckdb-over-files", "mysql", "sqlite", "spark"])
def test_many_text_keys_are_never_a_range(dialect: str) -> None:
    """A byte-ordered min/max under a source collation could drop joinable rows."""
    values = [f"k{i}" for i in range(IN_LIST_LIMIT + 1)]
    shape = shape_for(dialect, values)
    assert shape.kind == "none" and "read whole" in shape.describe()
    assert key_condition((None, "s"), values, dialect) is None


def test_explain_words() -> None:
    assert shape_for("postgres", INTS).describe() == "one BIGINT[] array literal"
    assert shape_for("duckdb", INTS).describe() == "min/max range"
    assert shape_for("duckdb", [1]).describe() == "IN list"


# -- through the planner: the probe fragment's narrowed SQL ---------------------------

def _catalog(big_dialect, small_dialect) -> CatalogSnapshot:
    big = {"facts": TableInfo(TableRef("big", "facts", "public", "facts"),
                              pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.int32())]),
                              row_estimate=1_000_000)}
    small = {"dims": TableInfo(TableRef("small", "dims", None, "dims"),
                               pa.schema([("k", pa.int64()), ("s", pa.string()), ("flag", pa.bool_())]),
                               row_estimate=20_000)}
    return CatalogSnapshot(1, {"big": SourceEntry("big", big_dialect, big),
                               "small": SourceEntry("small", small_dialect, small)},
                           engine_dialects=ENGINE_DIALECTS)


def _probe(big_dialect, key: str):
    query_plan = plan(f"select count(*), sum(f.v) from facts f join dims d on f.{key} = d.{key} where d.flag",
                      _catalog(big_dialect, files.DIALECT), PlanSettings(("big", "small")))
    (dynamic,) = query_plan.dynamic_filters
    probe = next(f for f in query_plan.fragments if f.name == dynamic.probe)
    assert probe.source == "big" and dynamic.probe_column == ("f", key)
    return probe, dynamic


def test_planned_postgres_probe_gets_the_array() -> None:
    probe, dynamic = _probe(postgres.DIALECT, "k")
    sql = probe.narrow([(dynamic.probe_column, INTS)])
    assert "\"f\".\"k\" = ANY(CAST('{1,2,3," in sql and "AS BIGINT[]))" in sql
    assert "IN (" not in sql and "BETWEEN" not in sql


def test_planned_duckdb_probe_gets_a_range_and_text_reads_whole() -> None:
    probe, dynamic = _probe(duckdb.DIALECT, "k")
    assert '"f"."k" BETWEEN 1 AND 5000' in probe.narrow([(dynamic.probe_column, INTS)])
    probe, dynamic = _probe(duckdb.DIALECT, "s")
    assert probe.narrow([(dynamic.probe_column, [f"k{i}" for i in range(2000)])]) == probe.sql


def test_a_join_on_several_keys_narrows_by_each() -> None:
    """Whichever conjunct comes first, the probe gets every key's condition."""
    query_plan = plan("select count(*) from facts f join dims d on f.s = d.s and f.k = d.k where d.flag",
                      _catalog(postgres.DIALECT, files.DIALECT), PlanSettings(("big", "small")))
    (dynamic,) = query_plan.dynamic_filters
    assert [column for _, column in dynamic.keys] == [("f", "s"), ("f", "k")]
    assert [field for field, _ in dynamic.keys] == ["s", "k"]
    probe = next(f for f in query_plan.fragments if f.name == dynamic.probe)
    sql = probe.narrow([(("f", "s"), [f"k{i}" for i in range(2000)]), (("f", "k"), [1, 2])])
    assert "\"f\".\"s\" = ANY(CAST('{\"k0\"," in sql and "AS TEXT[])) AND \"f\".\"k\" IN (1, 2)" in sql


def _two_table_catalog() -> CatalogSnapshot:
    catalog = _catalog(postgres.DIALECT, files.DIALECT)
    more = TableInfo(TableRef("big", "more", "public", "more"),
                     pa.schema([("k", pa.int32()), ("w", pa.int32()), ("t", pa.string())]), row_estimate=500_000)
    big = catalog.sources["big"]
    return replace(catalog, sources={"big": SourceEntry("big", big.dialect, {**big.tables, "more": more}),
                                     "small": catalog.sources["small"]})


def _narrowed_probe(sql: str, targets: tuple) -> str:
    query_plan = plan(sql, _two_table_catalog(), PlanSettings(("big", "small")))
    (dynamic,) = query_plan.dynamic_filters
    assert dynamic.targets == targets  # what EXPLAIN ANALYZE names
    probe = next(f for f in query_plan.fragments if f.name == dynamic.probe)
    assert " JOIN " in probe.sql  # the probe fragment joins facts and more at the source
    return probe.narrow([(column, INTS) for _, column in dynamic.keys])


def test_keys_reach_every_column_an_inner_join_equates() -> None:
    """f.k = m.k inside the probe fragment: `more` is narrowed by the same keys."""
    sql = _narrowed_probe("select count(*), sum(m.w) from facts f join more m on m.k = f.k and m.t = f.s "
                          "join dims d on d.k = f.k where d.flag", ((("f", "k"), ("m", "k")),))
    assert "\"f\".\"k\" = ANY(CAST('{1,2," in sql and "\"m\".\"k\" = ANY(CAST('{1,2," in sql
    assert '"m"."t"' not in sql.split("WHERE")[1]  # a text column is not an integer key's equal


def test_keys_do_not_cross_an_outer_join() -> None:
    sql = _narrowed_probe("select count(*) from facts f left join more m on m.k = f.k "
                          "join dims d on d.k = f.k where d.flag", ((("f", "k"),),))
    assert "\"f\".\"k\" = ANY(CAST('{1,2," in sql and '"m"."k" = ANY' not in sql


def test_keys_reach_a_fragment_joined_through_another() -> None:
    """dims ⋈ facts ⋈ more on one key, each in its own source: the filtered dims narrows both."""
    catalog = _catalog(postgres.DIALECT, files.DIALECT)
    more = {"more": TableInfo(TableRef("other", "more", "public", "more"),
                              pa.schema([("k", pa.int64()), ("w", pa.int32())]), row_estimate=500_000)}
    catalog = replace(catalog, sources={**catalog.sources, "other": SourceEntry("other", postgres.DIALECT, more)})
    query_plan = plan("select count(*), sum(m.w) from facts f join dims d on f.k = d.k "
                      "join more m on m.k = f.k where d.flag", catalog, PlanSettings(("big", "small", "other")))
    names = {f.source: f.name for f in query_plan.fragments}
    assert {(d.build, d.probe, d.keys) for d in query_plan.dynamic_filters} == {
        (names["small"], names["big"], (("k", ("f", "k")),)),
        (names["small"], names["other"], (("k", ("m", "k")),))}


def test_an_unfiltered_fragment_is_not_read_first_through_joins() -> None:
    """Without d.flag, dims holds every key: only the direct join's filter remains."""
    catalog = _catalog(postgres.DIALECT, files.DIALECT)
    more = {"more": TableInfo(TableRef("other", "more", "public", "more"),
                              pa.schema([("k", pa.int64()), ("w", pa.int32())]), row_estimate=500_000)}
    catalog = replace(catalog, sources={**catalog.sources, "other": SourceEntry("other", postgres.DIALECT, more)})
    query_plan = plan("select count(*) from facts f join dims d on f.k = d.k join more m on m.k = f.k",
                      catalog, PlanSettings(("big", "small", "other")))
    assert len(query_plan.dynamic_filters) == 1


def test_integer_array_takes_the_probe_columns_width() -> None:
    # integer = ANY(BIGINT[]) is not hashed by PostgreSQL (int48eq: two hash functions),
    # so an int4 column gets an INT[] and an int2 column a SMALLINT[] when the keys fit.
    assert shape_for("postgres", INTS, "int32").element == "INT"
    assert shape_for("postgres", INTS, "int16").element == "SMALLINT"
    assert shape_for("postgres", INTS, "int64").element == "BIGINT"
    assert shape_for("postgres", INTS).element == "BIGINT"
    assert key_condition(("c", "k"), INTS, "postgres", "int32").sql("postgres").endswith("AS INT[]))")
    beyond = INTS + [1 << 40]
    assert shape_for("postgres", beyond, "int32").element == "BIGINT"  # would not cast to int4
    assert shape_for("postgres", INTS, "int32").describe() == "one INT[] array literal"
