"""Mount the emulated catalog into the gateway's sources and catalog snapshot.

`mount` is called once by `gateway.server.listener.build_context`; `with_catalog` is how any later
refresh of the federated catalog (a new `CatalogSnapshot` version, e.g. a source gained a
table) brings pg_catalog and information_schema up to date: it rebuilds the catalog
database for the new version and returns the snapshot with the two system schemas in it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import replace
from typing import Any

from connectors.base import Source
from gateway.pg_catalog.functions import MACROS
from gateway.pg_catalog.source import CatalogSource, SchemaAlias
from gateway.pg_catalog.tables import declared_types
from planner.catalog import CatalogSnapshot, SourceEntry

SYSTEM_SCHEMAS = ("pg_catalog", "information_schema")
# What the planner routes to the catalog (`CatalogSnapshot.catalog_functions`): a
# statement without tables calling one of these reads the catalog's one-row relation.
CATALOG_FUNCTIONS = frozenset(MACROS)
NAME_COLUMNS = declared_types()  # pg_catalog's `name` columns, by relation


def user_tables(snapshot_sources: Mapping[str, SourceEntry]) -> dict[str, list]:
    return {name: list(entry.tables.values()) for name, entry in snapshot_sources.items()
            if name not in SYSTEM_SCHEMAS}


def _entries(catalog: CatalogSource) -> dict[str, SourceEntry]:
    return {schema: SourceEntry(schema, catalog.dialect,
                                {t.ref.name: t for t in catalog.tables_by_schema[schema]},
                                declared_types=NAME_COLUMNS if schema == "pg_catalog" else {})
            for schema in SYSTEM_SCHEMAS}


async def mount(database: str, sources: MutableMapping[str, Source],
                entries: MutableMapping[str, SourceEntry],
                sessions: Callable[[], Mapping[int, Any]], version: int = 1) -> CatalogSource:
    """Add the catalog source (as `pg_catalog` and `information_schema`) to `sources` and
    its relations to `entries`, built from the user sources already in `entries`."""
    for schema in SYSTEM_SCHEMAS:
        if schema in sources:
            raise ValueError(f"a source may not be named {schema!r}: the name is reserved")
    catalog = CatalogSource(database, sessions, sources)
    await asyncio.to_thread(catalog.refresh, version, user_tables(entries))
    sources["pg_catalog"] = catalog
    sources["information_schema"] = SchemaAlias(catalog, "information_schema")
    entries.update(_entries(catalog))
    return catalog


async def with_catalog(snapshot: CatalogSnapshot, catalog: CatalogSource) -> CatalogSnapshot:
    """`snapshot` (a new version of the federated catalog) with the system schemas rebuilt."""
    await asyncio.to_thread(catalog.refresh, snapshot.version, user_tables(snapshot.sources))
    sources = {n: e for n, e in snapshot.sources.items() if n not in SYSTEM_SCHEMAS}
    sources.update(_entries(catalog))
    return replace(snapshot, sources=sources, catalog_functions=CATALOG_FUNCTIONS)
