"""A whole row of a source's table is described as that table's row type in the gateway.

A PostgreSQL source reads `SELECT t FROM t` (a statement shipped whole to it) as a
struct column whose metadata `pg_row_of` names the table in the source
(connectors.postgres.records). The client must see the row type of that table in the
gateway's own catalog (pg_class.reltype: the OID a client looks up in pg_type and
pg_attribute), not the source's OID, so it is looked up in the catalog the session reads
(a user kept from some sources reads a catalog numbered without them) and written into
the field's metadata as `pg_type_oid` (pgwire.types.from_arrow). The fields must be the
ones the catalog lists for that table, type for type (record_send writes their OIDs);
otherwise, as when the table is not in the catalog, 0A000.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pyarrow as pa

from connectors.base import BatchStream, Source
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.from_arrow import pg_type_for_field

_ROW_TYPE = """
SELECT c.reltype, list(a.atttypid ORDER BY a.attnum) AS fields
FROM fg_pg.pg_class c JOIN fg_pg.pg_namespace n ON n.oid = c.relnamespace
JOIN fg_pg.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind <> 'i' AND c.reltype <> 0
GROUP BY c.reltype
"""


def has_rows(schema: pa.Schema) -> bool:
    return any(pa.types.is_struct(f.type) and f.metadata and b"pg_row_of" in f.metadata
               for f in schema)


async def row_typed(schema: pa.Schema, source: str, catalog: Source) -> pa.Schema:
    """`schema` with each whole-row column of `source` given its row type's OID."""
    fields = []
    for field in schema:
        if pa.types.is_struct(field.type) and field.metadata and b"pg_row_of" in field.metadata:
            table = field.metadata[b"pg_row_of"].decode()
            oid = await _row_type_oid(catalog, source, table, field.type)
            field = field.with_metadata({**field.metadata, b"pg_type_oid": str(oid).encode()})
        fields.append(field)
    return pa.schema(fields, metadata=schema.metadata)


async def _row_type_oid(catalog: Source, source: str, table: str, struct: pa.StructType) -> int:
    stream = await catalog.run_remote(_ROW_TYPE, [source, table])
    try:
        rows = [row async for batch in stream for row in batch.to_pylist()]
    finally:
        await stream.aclose()
    wanted = [pg_type_for_field(f).oid for f in struct]
    if len(rows) != 1 or list(rows[0]["fields"]) != wanted:
        raise PgError(FEATURE_NOT_SUPPORTED, f"a whole-row reference of {table}: the gateway's "
                      f"catalog has no row type of {source}.{table} with these fields")
    return int(rows[0]["reltype"])


class RowTyped:
    """`stream` under the schema `row_typed` gave (the same columns, described)."""

    def __init__(self, stream: BatchStream, schema: pa.Schema) -> None:
        self.inner = stream
        self.schema = schema

    def __aiter__(self) -> AsyncIterator[pa.RecordBatch]:
        return self._batches()

    async def _batches(self) -> AsyncIterator[pa.RecordBatch]:
        async for batch in self.inner:
            yield pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)

    async def aclose(self) -> None:
        await self.inner.aclose()
