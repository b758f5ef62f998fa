"""What only PostgreSQL answers (rows of no columns, VARIADIC, SEARCH/CYCLE) ships whole to
the one PostgreSQL source of the statement and is refused (0A000) anywhere else."""

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


@pytest.mark.parametrize(("sql", "path"), [
    ("SELECT FROM f", ("files",)),
    ("SELECT", ("files",)),
    ("SELECT FROM t, files.f", ("pg",)),
    ("SELECT FROM t WHERE random() < 2", ("pg",)),
    ("SELECT concat(VARIADIC ARRAY[s]) FROM f", ("files",)),
    ("SELECT concat(VARIADIC ARRAY[t.s, f.s]) FROM t, files.f", ("pg",)),
    ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3) "
     "SEARCH DEPTH FIRST BY i SET o SELECT i FROM r", ("files",)),
])
def test_refused_elsewhere(sql: str, path: tuple[str, ...]) -> None:
    with pytest.raises(PgError) as caught:
        plan(sql, _catalog(), PlanSettings(path))
    assert caught.value.sqlstate == "0A000"


def test_the_marker_cannot_be_called() -> None:
    with pytest.raises(PgError) as caught:
        plan("SELECT fedgate_variadic(ARRAY[1])", _catalog(), PlanSettings(("pg",)))
    assert caught.value.sqlstate == "42883"
