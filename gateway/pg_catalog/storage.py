"""Relation sizes and view definitions for the catalog's functions, read live per query.

pg_relation_size, pg_table_size, pg_indexes_size, pg_total_relation_size and
pg_get_viewdef are the catalog's macros (gateway.pg_catalog.functions). They read the
per-query table `fg_storage`, which the catalog source fills only for a query that calls
one of them (`calls_storage`), from every source that can say (connectors.base
StorageReporter) and that the session may see: a PostgreSQL source answers what
PostgreSQL's own functions answer now (one query per source), a file source the bytes
of its files. Relations of other sources, and the catalog's own, have no row: their sizes
and definitions are NULL, as PostgreSQL answers for an object it does not know. A source
that cannot be asked (it is down) is logged and reads as having no rows, so a BI tool's
table list still comes back.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable, Mapping

import pyarrow as pa

from connectors.base import Storage, StorageReporter

log = logging.getLogger("fedgate.catalog")

TABLE = "fg_storage"
COLUMNS = ("nspname VARCHAR, relname VARCHAR, main BIGINT, fsm BIGINT, vm BIGINT, init BIGINT, "
           "table_size BIGINT, indexes BIGINT, total BIGINT, definition VARCHAR, definition_pretty VARCHAR")
_CALLS = re.compile(r"\b(?:pg_relation_size|pg_table_size|pg_indexes_size|pg_total_relation_size"
                    r"|pg_get_viewdef)\b", re.IGNORECASE)
_SCHEMA = pa.schema([("nspname", pa.string()), ("relname", pa.string()),
                     *((name, pa.int64()) for name in
                       ("main", "fsm", "vm", "init", "table_size", "indexes", "total")),
                     ("definition", pa.string()), ("definition_pretty", pa.string())])


def calls_storage(sql: str) -> bool:
    """Whether the catalog query `sql` may call a function that reads `fg_storage`."""
    return _CALLS.search(sql) is not None


async def storage_table(sources: Mapping[str, object], hidden: Iterable[str]) -> pa.Table:
    """`fg_storage`: one row per relation of every source that reports its storage and is
    not `hidden` from the session, keyed by the names clients see (schema = source)."""
    hide = set(hidden)
    asked = [s for name, s in sources.items() if name not in hide and isinstance(s, StorageReporter)]
    answers = await asyncio.gather(*(s.storage() for s in asked), return_exceptions=True)
    rows: list[tuple] = []
    for source, answer in zip(asked, answers):
        if isinstance(answer, BaseException):
            if not isinstance(answer, Exception):
                raise answer  # a cancellation is the statement's, not the source's
            log.warning("sizes of source %s unknown (NULL): %s", source.name, answer)
            continue
        rows += [_row(source.name, name, found) for name, found in answer.items()]
    return pa.Table.from_pylist([dict(zip(_SCHEMA.names, row)) for row in rows], schema=_SCHEMA)


def _row(schema: str, name: str, found: Storage) -> tuple:
    return (schema, name, found.main, found.fsm, found.vm, found.init, found.table,
            found.indexes, found.total, found.definition, found.pretty_definition)
