"""planner.whole_rows: which names are a table's whole row (refused in the engine)."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from connectors.base import TableInfo, TableRef
from pgwire.errors import PgError
from planner.whole_rows import whole_rows

SCHEMAS = {"t": pa.schema([("id", pa.int32()), ("s", pa.string())]),
           "u": pa.schema([("g", pa.int32()), ("u", pa.string())])}  # u has a column u


def _check(sql: str) -> None:
    tree = sqlglot.parse_one(sql, read="postgres")
    tables = [(table, TableInfo(TableRef("src", table.name), SCHEMAS[table.name]))
              for table in tree.find_all(exp.Table) if table.name in SCHEMAS]
    whole_rows(tree, tables)


@pytest.mark.parametrize("sql", [
    "SELECT t FROM t",
    "SELECT id FROM t WHERE t IS NOT NULL",
    "SELECT count(x) FROM t AS x",
    "SELECT (SELECT max(g) FROM u WHERE t IS NULL) FROM t",  # an outer table's row
    "SELECT d FROM (SELECT id FROM t) AS d",
    "WITH c AS (SELECT 1 AS one) SELECT c FROM c",
])
def test_refused(sql: str) -> None:
    with pytest.raises(PgError) as caught:
        _check(sql)
    assert caught.value.sqlstate == "0A000"


@pytest.mark.parametrize("sql", [
    "SELECT id, s FROM t",
    "SELECT (t).id FROM t",  # a field: the column itself
    "SELECT u FROM u",  # the column u, not the row
    "SELECT t.id FROM t, u WHERE t.id = u.g",
    "SELECT * FROM t",
    "SELECT d.id FROM (SELECT id FROM t) AS d",
    "SELECT id FROM t WHERE id IN (SELECT g FROM u)",
])
def test_answered(sql: str) -> None:
    _check(sql)
