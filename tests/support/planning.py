"""What the gateway hands the planner besides the sources, for tests that build a catalog
snapshot of their own: the residual engines' dialects, in the gateway's order (the
residual is written in DuckDB's, rendered for Spark on demand)."""

from __future__ import annotations

import duckdb as duckdb_engine
import sqlglot
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.dialects import duckdb, spark
from pgwire.errors import PgError, from_exception

ENGINE_DIALECTS = (duckdb.DIALECT, spark.DIALECT)


def engine_answer(sql: str) -> list[tuple] | tuple[str, str]:
    """What an embedded DuckDB answers for PostgreSQL `sql` as the DuckDB dialect writes it
    (sqlglot's types annotated): its rows, or the (SQLSTATE, message) of its refusal or error."""
    try:
        rendered = duckdb.to_duckdb(annotate_types(sqlglot.parse_one(sql, read="postgres")))
    except PgError as refused:
        return refused.sqlstate, refused.message
    try:
        return duckdb_engine.connect().sql(rendered).fetchall()
    except duckdb_engine.Error as raised:
        error = from_exception(raised)
        return error.sqlstate, error.message
