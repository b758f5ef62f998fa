"""The emulated system catalog as a federated source named `pg_catalog`.

It is registered like any other source (DESIGN.md §7), so the planner's routing needs no
special case: a query over catalog relations only ships whole to it and runs on the
catalog's in-memory DuckDB. `information_schema` is a second name for the same database
(`SchemaAlias`), because each source is one schema to the planner.

Every query gets the asking session's tables registered on its cursor (current user,
search_path, settings, pg_stat_activity rows), and its UINTEGER columns are presented as
`oid`. The database is rebuilt when the federated catalog's version changes (`refresh`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from sqlglot import exp

from connectors.base import BatchStream, Pushdown, ScanRequest, TableInfo
from connectors.duckdb.runner import DuckDBRunner
from connectors.scan_sql import scan_tree
from pgwire.errors import (DATA_EXCEPTION, UNDEFINED_FUNCTION, UNDEFINED_OBJECT,
                            UNDEFINED_TABLE, PgError)
from gateway.pg_catalog import session_state
from gateway.pg_catalog.build import build, oid_schema
from gateway.pg_catalog.dialect import DIALECT

UNDEFINED_SCHEMA = "3F000"

# Errors our macros raise with DuckDB's error(): PostgreSQL's message and SQLSTATE.
_MACRO_ERRORS = (
    (re.compile(r'^relation ".*" does not exist'), UNDEFINED_TABLE),
    (re.compile(r'^type ".*" does not exist'), UNDEFINED_OBJECT),
    (re.compile(r'^function ".*" does not exist'), UNDEFINED_FUNCTION),
    (re.compile(r'^schema ".*" does not exist'), UNDEFINED_SCHEMA),
    (re.compile(r'^role ".*" does not exist'), UNDEFINED_OBJECT),
    (re.compile(r"^unrecognized configuration parameter"), UNDEFINED_OBJECT),
)


def _postgres_error(err: PgError) -> PgError:
    if err.sqlstate == DATA_EXCEPTION:
        for pattern, code in _MACRO_ERRORS:
            if pattern.search(err.message):
                return PgError(code, err.message)
    return err


class CatalogSource:
    """pg_catalog (and, through `SchemaAlias`, information_schema) for one gateway."""

    name = "pg_catalog"
    dialect = DIALECT

    def __init__(self, database: str, sessions: Callable[[], Mapping[int, Any]]) -> None:
        self.database = database
        self._sessions = sessions
        self._runner: DuckDBRunner | None = None
        self._retired: list[DuckDBRunner] = []
        self.version: int | None = None
        self.tables_by_schema: dict[str, list[TableInfo]] = {}
        self.schemas: tuple[str, ...] = ()

    def refresh(self, version: int, user_tables: dict[str, list[TableInfo]]) -> None:
        """Rebuild for catalog `version`; a no-op when it is the version already built.

        Queries already running keep the old database (it is closed with the source).
        """
        if version == self.version:
            return
        built = build(version, self.database, user_tables)
        if self._runner is not None:
            self._retired.append(self._runner)
        self._runner = built.runner
        self.tables_by_schema = built.tables
        self.schemas = tuple(built.model.namespaces)
        self.version = version

    async def tables(self) -> list[TableInfo]:
        return list(self.tables_by_schema.get(self.name, []))

    def classify(self, table: Any, filters: Sequence[exp.Expression]) -> list[Pushdown]:
        return [Pushdown.EXACT for _ in filters]

    async def run_remote(self, sql: str, params: Sequence[Any] = ()) -> BatchStream:
        if self._runner is None:
            raise PgError("XX000", "the catalog has not been built")
        register = session_state.session_tables(session_state.current_session(), self.schemas,
                                                self._sessions)
        try:
            stream = await self._runner.stream(sql, params, register=register)
        except PgError as err:
            raise _postgres_error(err) from err
        return OidStream(stream)

    async def scan(self, req: ScanRequest) -> BatchStream:
        """One relation's rows for a query that also reads other sources."""
        return await self.run_remote(self.dialect.to_sql(scan_tree(req)))

    async def describe(self, sql: str, params: Sequence[Any] = ()) -> pa.Schema:
        stream = await self.run_remote(f"SELECT * FROM ({sql}) AS described LIMIT 0", params)
        await stream.aclose()
        return stream.schema

    async def close(self) -> None:
        for runner in [*self._retired, *([self._runner] if self._runner else [])]:
            runner.close()
        self._retired.clear()
        self._runner = None


class SchemaAlias:
    """information_schema: the catalog source under a second name (one schema per source)."""

    dialect = DIALECT

    def __init__(self, catalog: CatalogSource, name: str) -> None:
        self.name = name
        self._catalog = catalog

    async def tables(self) -> list[TableInfo]:
        return list(self._catalog.tables_by_schema.get(self.name, []))

    def classify(self, table: Any, filters: Sequence[exp.Expression]) -> list[Pushdown]:
        return self._catalog.classify(table, filters)

    async def run_remote(self, sql: str, params: Sequence[Any] = ()) -> BatchStream:
        return await self._catalog.run_remote(sql, params)

    async def scan(self, req: ScanRequest) -> BatchStream:
        return await self._catalog.scan(req)

    async def describe(self, sql: str, params: Sequence[Any] = ()) -> pa.Schema:
        return await self._catalog.describe(sql, params)

    async def close(self) -> None:
        return None  # the catalog source owns the database


class OidStream:
    """A catalog result whose UINTEGER columns are described (and encoded) as oid."""

    def __init__(self, stream: BatchStream) -> None:
        self._stream = stream
        self.schema = oid_schema(stream.schema)

    def __aiter__(self) -> AsyncIterator[pa.RecordBatch]:
        return self._batches()

    async def _batches(self) -> AsyncIterator[pa.RecordBatch]:
        try:
            async for batch in self._stream:
                yield pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
        except PgError as err:
            raise _postgres_error(err) from err

    async def aclose(self) -> None:
        await self._stream.aclose()
