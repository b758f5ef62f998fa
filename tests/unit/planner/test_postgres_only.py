"""Rows of no columns, VARIADIC and SEARCH/CYCLE ship whole to the one PostgreSQL source of
the statement; elsewhere the engine answers the first two where it can do so exactly and
refuses (0A000) the rest."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connectors.base import TableInfo, TableRef
from connectors.dialects import duckdb as duckdb_dialect
from connectors.dialects import postgres as postgres_dialect
from pgwire.errors import PgError
from planner import PlanSettings, plan
from planner.catalog import CatalogSnapshot, SourceEntry
from tests.support.planning import ENGINE_DIALECTS

SCHEMA = pa.schema([("id", pa.int32()), ("s", pa.string())])


def _catalog() -> CatalogSnapshot:
    def entry(source, dialect, table):
        info = TableInfo(TableRef(source, table, remote_schema="public", remote_name=table), SCHEMA)
        return SourceEntry(source, dialect, {table: info})
    return CatalogSnapshot(1, {"pg": entry("pg", postgres_dialect.DIALECT, "t"),
                               "files": entry("files", duckdb_dialect.DIALECT, "f")},
                           engine_dialects=ENGINE_DIALECTS)


SHIPPED = {
    "SELECT FROM t": 'SELECT FROM "public"."t" AS t',
    "SELECT": "SELECT",
    "SELECT concat(VARIADIC ARRAY[s, 'x']) FROM t":
        'SELECT CONCAT(VARIADIC(ARRAY[t.s, \'x\'])) AS "concat" FROM "public"."t" AS t',
    "SELECT format('%s', s, VARIADIC ARRAY[(id)::text]) FROM t":
        'SELECT FORMAT(\'%s\', t.s, VARIADIC(ARRAY[CAST((t.id) AS TEXT)])) AS "format" FROM "public"."t" AS t',
}


@pytest.mark.parametrize("sql", sorted(SHIPPED))
def test_shipped_whole_to_the_postgres_source(sql: str) -> None:
    planned = plan(sql, _catalog(), PlanSettings(("pg",)))
    assert planned.residual_sql is None and len(planned.fragments) == 1
    assert planned.fragments[0].source == "pg"
    assert planned.fragments[0].sql == SHIPPED[sql]


ENGINE = {  # (statement, search path) -> the SQL the engine (or the file source) runs
    ("SELECT FROM f", ("files",)): ['SELECT 1 AS "?column?" FROM "public"."f" AS f'],
    ("SELECT", ("files",)): ['SELECT 1 AS "?column?"'],
    ("SELECT FROM t WHERE random() < 2", ("pg",)):
        ['SELECT "t"."id" FROM "public"."t" AS t', 'SELECT 1 AS "?column?" FROM "frag_0" AS "t" WHERE RANDOM() < 2'],
    ("SELECT concat(VARIADIC ARRAY[s]) FROM f", ("files",)):
        ['SELECT CONCAT(([f.s])[1]) AS "concat" FROM "public"."f" AS f'],
    ("SELECT concat(VARIADIC ARRAY[t.s, f.s]) FROM t, files.f", ("pg",)):
        ['SELECT "t"."s" FROM "public"."t" AS t', 'SELECT "f"."s" FROM "public"."f" AS f',
         'SELECT CONCAT(([t.s, f.s])[1], ([t.s, f.s])[2]) AS "concat" FROM "frag_0" AS "t" '
         'CROSS JOIN "frag_1" AS "f"'],
}


@pytest.mark.parametrize(("sql", "path"), sorted(ENGINE))
def test_the_engine_answers_elsewhere(sql: str, path: tuple[str, ...]) -> None:
    """Rows of no columns get a placeholder the client never sees (planner.empty_select:
    the plan's names are `()`); a VARIADIC array constructor of text or integers becomes
    its elements (planner.variadic_arrays)."""
    planned = plan(sql, _catalog(), PlanSettings(path))
    pieces = [f.sql for f in planned.fragments] + ([planned.residual_sql] if planned.residual_sql else [])
    assert pieces == ENGINE[(sql, path)]
    no_columns = sql.startswith("SELECT FROM") or sql == "SELECT"
    assert (planned.column_names == ()) == no_columns


@pytest.mark.parametrize(("sql", "path", "sqlstate"), [
    ("SELECT count(*) FROM (SELECT FROM f) s", ("files",), "0A000"),
    ("SELECT FROM f UNION SELECT 1", ("files",), "42601"),
    ("SELECT DISTINCT FROM f", ("files",), "42601"),
    ("SELECT concat(VARIADIC ARRAY[1.5, 2]) FROM f", ("files",), "0A000"),  # numerics' own scales
    ("SELECT concat(VARIADIC NULL::text[]) FROM f", ("files",), "0A000"),  # how many is not known
    ("SELECT concat(VARIADIC ARRAY[random()::text]) FROM f", ("files",), "0A000"),
    ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3) "
     "SEARCH DEPTH FIRST BY i SET o SELECT i FROM r", ("files",), "0A000"),
])
def test_refused_elsewhere(sql: str, path: tuple[str, ...], sqlstate: str) -> None:
    with pytest.raises(PgError) as caught:
        plan(sql, _catalog(), PlanSettings(path))
    assert caught.value.sqlstate == sqlstate
