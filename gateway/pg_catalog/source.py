"""The emulated system catalog as a federated source named `pg_catalog`.

It is registered like any other source (docs/design.md §7), so the planner's routing needs no
special case: a query over catalog relations only ships whole to it and runs on the
catalog's in-memory DuckDB. `information_schema` is a second name for the same database
(`SchemaAlias`), because each source is one schema to the planner.

Every query gets the asking session's tables registered on its cursor (current user,
search_path, settings, pg_stat_activity rows; relation sizes when it asks for them,
gateway.pg_catalog.storage), and its UINTEGER columns are presented as `oid`. The
database is rebuilt when the federated catalog's version changes (`refresh`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from sqlglot import exp

from connectors.base import BatchStream, Pushdown, ScanRequest, TableInfo
from connectors.duckdb.runner import DuckDBRunner
from connectors.scan_sql import scan_tree
from pgwire.errors import (DATA_EXCEPTION, INVALID_PARAMETER_VALUE, UNDEFINED_FUNCTION,
                           UNDEFINED_OBJECT, UNDEFINED_TABLE, PgError)
from gateway.pg_catalog import session_state, storage
from gateway.pg_catalog.build import build, oid_batch, oid_schema
from gateway.pg_catalog.dialect import DIALECT

UNDEFINED_SCHEMA = "3F000"
# A catalog built for one set of hidden sources: its runner, schemas and row type OIDs.
Scoped = tuple[DuckDBRunner, tuple[str, ...], dict[str, dict[int, int]], dict[str, dict[str, int]]]

# Errors our macros raise with DuckDB's error(): PostgreSQL's message, SQLSTATE and hint.
_MACRO_ERRORS = (
    (re.compile(r'^relation ".*" does not exist'), UNDEFINED_TABLE, None),
    (re.compile(r'^type ".*" does not exist'), UNDEFINED_OBJECT, None),
    (re.compile(r'^function ".*" does not exist'), UNDEFINED_FUNCTION, None),
    (re.compile(r'^schema ".*" does not exist'), UNDEFINED_SCHEMA, None),
    (re.compile(r'^role ".*" does not exist'), UNDEFINED_OBJECT, None),
    (re.compile(r"^unrecognized configuration parameter"), UNDEFINED_OBJECT, None),
    (re.compile(r"^invalid fork name"), INVALID_PARAMETER_VALUE,
     'Valid fork names are "main", "fsm", "vm", and "init".'),
)


def _postgres_error(err: PgError) -> PgError:
    if err.sqlstate == DATA_EXCEPTION:
        for pattern, code, hint in _MACRO_ERRORS:
            if pattern.search(err.message):
                return PgError(code, err.message, hint=hint)
    return err


class CatalogSource:
    """pg_catalog (and, through `SchemaAlias`, information_schema) for one gateway."""

    name = "pg_catalog"
    dialect = DIALECT

    def __init__(self, database: str, sessions: Callable[[], Mapping[int, Any]],
                 sources: Mapping[str, Any] | None = None) -> None:
        self.database = database
        self._sessions = sessions
        # The gateway's sources, asked for their relations' sizes (gateway.pg_catalog.storage).
        self._sources: Mapping[str, Any] = sources if sources is not None else {}
        self._runner: DuckDBRunner | None = None
        self._retired: list[DuckDBRunner] = []
        self.version: int | None = None
        self.tables_by_schema: dict[str, list[TableInfo]] = {}
        self.schemas: tuple[str, ...] = ()
        self.row_types: dict[str, dict[int, int]] = {}  # CatalogModel.row_type_oids
        self.row_types_by_name: dict[str, dict[str, int]] = {}  # CatalogModel.row_types_by_name
        # Users who may not see some sources read a catalog built without them (one per
        # set of hidden sources, built on first use for the current version).
        self._user_tables: dict[str, list[TableInfo]] = {}
        self._scoped: dict[frozenset[str], asyncio.Future[Scoped]] = {}

    def refresh(self, version: int, user_tables: dict[str, list[TableInfo]]) -> None:
        """Rebuild for catalog `version`; a no-op when it is the version already built.

        Queries already running keep the old database (it is closed with the source).
        """
        if version == self.version:
            return
        built = build(version, self.database, user_tables)
        if self._runner is not None:
            self._retired.append(self._runner)
        for scoped in self._scoped.values():
            if scoped.done() and scoped.exception() is None:
                self._retired.append(scoped.result()[0])
        self._scoped = {}
        self._user_tables = user_tables
        self._runner = built.runner
        self.tables_by_schema = built.tables
        self.schemas = tuple(built.model.namespaces)
        self.row_types = built.model.row_type_oids()
        self.row_types_by_name = built.model.row_types_by_name()
        self.version = version

    async def row_type_oids(self, source: str, hidden: frozenset[str] | None = None) -> dict[int, int]:
        """`source`'s own row type OIDs -> those of the catalog read by a session kept
        from the `hidden` sources (None: the current session)."""
        if hidden is None:
            session = session_state.current_session()
            hidden = session.hidden if session is not None else frozenset()
        if not hidden:
            return self.row_types.get(source, {})
        return (await self._scoped_runner(hidden))[2].get(source, {})

    async def row_type_of(self, source: str, table: str, hidden: frozenset[str] | None = None) -> int | None:
        """The OID of `source`.`table`'s row type in the catalog the session reads (as
        `row_type_oids`); None when it has none."""
        if hidden is None:
            session = session_state.current_session()
            hidden = session.hidden if session is not None else frozenset()
        by_name = self.row_types_by_name if not hidden else (await self._scoped_runner(hidden))[3]
        return by_name.get(source, {}).get(table)

    async def _scoped_runner(self, hidden: frozenset[str]) -> Scoped:
        """The catalog of this version without the `hidden` sources (and its schemas): what
        a user who may not see them reads, so pg_namespace, pg_class, information_schema,
        to_regclass() ... know nothing of them."""
        found = self._scoped.get(hidden)
        if found is None:
            visible = {name: tables for name, tables in self._user_tables.items()
                       if name not in hidden}
            found = asyncio.ensure_future(asyncio.to_thread(self._build_scoped, visible))
            self._scoped[hidden] = found
        try:
            return await asyncio.shield(found)
        except Exception:
            if self._scoped.get(hidden) is found:  # built again by the next query
                del self._scoped[hidden]
            raise

    def _build_scoped(self, visible: dict[str, list[TableInfo]]) -> Scoped:
        assert self.version is not None
        built = build(self.version, self.database, visible)
        return (built.runner, tuple(built.model.namespaces), built.model.row_type_oids(),
                built.model.row_types_by_name())

    async def tables(self) -> list[TableInfo]:
        return list(self.tables_by_schema.get(self.name, []))

    def classify(self, table: Any, filters: Sequence[exp.Expression]) -> list[Pushdown]:
        return [Pushdown.EXACT for _ in filters]

    async def run_remote(self, sql: str, params: Sequence[Any] = ()) -> BatchStream:
        if self._runner is None:
            raise PgError("XX000", "the catalog has not been built")
        session = session_state.current_session()
        runner, schemas = self._runner, self.schemas
        hidden = session.hidden if session is not None else frozenset()
        if hidden:
            runner, schemas, *_ = await self._scoped_runner(hidden)
        register = session_state.session_tables(session, schemas, self._sessions)
        if storage.calls_storage(sql):
            register[storage.TABLE] = await storage.storage_table(self._sources, hidden)
        try:
            stream = await runner.stream(sql, params, register=register)
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
        scoped = [f.result()[0] for f in self._scoped.values() if f.done() and f.exception() is None]
        for runner in [*self._retired, *scoped, *([self._runner] if self._runner else [])]:
            runner.close()
        self._scoped = {}
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
    """A catalog result whose UINTEGER columns are described (and encoded) as oid, and
    whose "char" columns as "char" (build.oid_schema)."""

    def __init__(self, stream: BatchStream) -> None:
        self._stream = stream
        self.schema = oid_schema(stream.schema)

    def __aiter__(self) -> AsyncIterator[pa.RecordBatch]:
        return self._batches()

    async def _batches(self) -> AsyncIterator[pa.RecordBatch]:
        try:
            async for batch in self._stream:
                yield oid_batch(batch, self.schema)
        except PgError as err:
            raise _postgres_error(err) from err

    async def aclose(self) -> None:
        await self._stream.aclose()
