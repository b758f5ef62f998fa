"""A frozen snapshot of the federated catalog: each source is a schema of tables.

The planner plans against a snapshot so that a refresh never changes a plan halfway; the
snapshot's version is part of the plan-cache key. Besides the sources, the snapshot
carries what the gateway runs around them and the planner must know without importing
it: the residual engines' dialects, and the functions of the emulated system catalog.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from sqlglot.schema import MappingSchema

from connectors.base import Dialect, TableInfo
from pgwire.errors import UNDEFINED_TABLE, PgError
from planner.type_names import sqlglot_type_of_field


class UndefinedRelation(PgError):
    """42P01 for a table the snapshot does not have; names the relation as written, so
    the gateway can tell a missing table from one in a source that is down now."""

    def __init__(self, name: str, schema: str | None) -> None:
        shown = f"{schema}.{name}" if schema else name
        super().__init__(UNDEFINED_TABLE, f'relation "{shown}" does not exist')
        self.name, self.schema = name, schema


@dataclass(frozen=True)
class SourceEntry:
    name: str
    dialect: Dialect
    tables: Mapping[str, TableInfo]
    # PostgreSQL's types of columns whose Arrow type does not tell them, by table and
    # column: the emulated catalog's `name` columns, stored as text (PgSchema).
    declared_types: Mapping[str, Mapping[str, str]] = field(default_factory=dict, kw_only=True)


class PgSchema(MappingSchema):
    """The planner's schema (sqlglot's, by the Arrow types), and the PostgreSQL types its
    sources declare for columns an Arrow type does not tell (SourceEntry.declared_types):
    planner.result_types describes `SELECT relname FROM pg_class` as `name`, as
    PostgreSQL does, while the engine reads the column as the text it is."""

    def __init__(self, mapping: dict, declared: Mapping[str, Mapping[str, Mapping[str, str]]]
                 ) -> None:
        super().__init__(mapping, dialect="duckdb", normalize=False)
        self.declared = declared

    def declared_type(self, source: str, table: str, column: str) -> str | None:
        return self.declared.get(source, {}).get(table, {}).get(column)


@dataclass(frozen=True)
class CatalogSnapshot:
    version: int
    sources: Mapping[str, SourceEntry] = field(default_factory=dict)
    # The residual engines' dialects, from the engines the gateway runs. The residual is
    # written in the first's (QueryPlan.residual_sql); QueryPlan.residual_for(name)
    # renders it in the dialect of that name when a query runs on another engine.
    engine_dialects: tuple[Dialect, ...] = field(kw_only=True)
    # Functions only the emulated system catalog answers: a statement without tables that
    # calls one reads the catalog's one-row relation (planner.pgcompat).
    catalog_functions: frozenset[str] = field(default=frozenset(), kw_only=True)

    def __post_init__(self) -> None:
        if not self.engine_dialects:
            raise ValueError("a catalog snapshot needs the dialect of at least one residual engine")

    @property
    def residual_dialect(self) -> Dialect:
        """The dialect the residual is written in."""
        return self.engine_dialects[0]

    def engine_dialect(self, engine: str) -> Dialect:
        """The dialect of the residual engine named `engine` (connectors.base.Engine.name)."""
        for dialect in self.engine_dialects:
            if dialect.name == engine:
                return dialect
        raise KeyError(f"no residual engine dialect named {engine!r}")

    def resolve(self, name: str, schema: str | None, search_path: Sequence[str]) -> TableInfo:
        """Find a table as PostgreSQL would: schema-qualified, or first hit on search_path."""
        candidates = [schema] if schema else list(search_path)
        for source in candidates:
            entry = self.sources.get(source)
            if entry is not None and name in entry.tables:
                return entry.tables[name]
        raise UndefinedRelation(name, schema)

    @cached_property
    def sqlglot_schema(self) -> PgSchema:
        """Column types of every table, keyed as the planner qualifies them (source.table)."""
        mapping = {
            source: {
                name: {f.name: sqlglot_type_of_field(f) for f in info.schema}
                for name, info in entry.tables.items()
            }
            for source, entry in self.sources.items()
            # A source without tables would make the mapping's depth ambiguous to sqlglot,
            # which then stops expanding `*` everywhere.
            if entry.tables
        }
        return PgSchema(mapping, {source: entry.declared_types
                                  for source, entry in self.sources.items() if entry.declared_types})
