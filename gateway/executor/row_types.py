"""A whole row of a source's table is described as that table's row type in the gateway.

A PostgreSQL source reads `SELECT t FROM t` (a statement shipped whole to it) as a
struct column whose metadata names the table (`pg_row_of`) and the source's OID of its
row type (`pg_source_type`; connectors.postgres.records). The client must see the row
type of that table in the gateway's own catalog (pg_class.reltype: the OID a client looks
up in pg_type and pg_attribute), so the source's OID is renamed by the map the relay's
links use too (CatalogSource.row_type_oids, of the catalog the session reads: a user kept
from some sources reads one numbered without them) and written into the field's metadata
as `pg_type_oid` (pgwire.types.from_arrow). The map holds only tables whose columns the
gateway describes with the source's types (record_send writes their OIDs); a row of any
other table is refused (0A000). An array of rows (`array_agg(t)`, a list of structs) is
described as the row type's array, its elements as the row type (`pg_elem_oid`: array_send
writes it). A DuckDB source's whole row (`SELECT t FROM t` over a file) is a struct the
planner names the table of (`QueryPlan.row_outputs`): described as that table's row type
of the gateway's catalog (`named_rows`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import pyarrow as pa

from connectors.base import BatchStream
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError


def _is_row(field: pa.Field) -> bool:
    """A table's row, or an array of them (a list of structs: `array_agg(t)`)."""
    t = field.type
    return (pa.types.is_struct(t) or pa.types.is_list(t) and pa.types.is_struct(t.value_type)) \
        and bool(field.metadata) and b"pg_row_of" in field.metadata


def has_rows(schema: pa.Schema) -> bool:
    return any(_is_row(f) for f in schema)


def row_typed(schema: pa.Schema, source: str, row_types: Mapping[int, int]) -> pa.Schema:
    """`schema` with each whole-row column of `source` given the gateway's OID of its
    row type, as `row_types` (the source's OIDs -> the gateway's) has it."""
    fields = []
    for field in schema:
        if _is_row(field):
            oid = row_types.get(int(field.metadata[b"pg_source_type"]))
            if oid is None:
                table = field.metadata[b"pg_row_of"].decode()
                raise PgError(FEATURE_NOT_SUPPORTED, f"a whole-row reference of {table}: the "
                              f"gateway's catalog has no row type of {source}.{table} with "
                              "these fields")
            named = {b"pg_type_oid": str(oid).encode()}
            if pa.types.is_list(field.type):  # described as the row type's array
                array = row_types.get(int(field.metadata[b"pg_source_array"]))
                if array is None:
                    raise PgError(FEATURE_NOT_SUPPORTED, "an array of rows of "
                                  f"{field.metadata[b'pg_row_of'].decode()}: the gateway's "
                                  "catalog has no array type of that row type")
                named = {b"pg_type_oid": str(array).encode(), b"pg_elem_oid": str(oid).encode()}
            field = field.with_metadata({**field.metadata, **named})
        fields.append(field)
    return pa.schema(fields, metadata=schema.metadata)


def named_rows(schema: pa.Schema, oids: Mapping[int, int | None]) -> pa.Schema:
    """`schema` with the struct at each position of `oids` described as that row type (a
    DuckDB source's whole row of its table: planner.whole_rows)."""
    fields = list(schema)
    for i, oid in oids.items():
        field = fields[i]
        if oid is None or not pa.types.is_struct(field.type):
            raise PgError(FEATURE_NOT_SUPPORTED, f"a whole-row reference ({field.name}): the "
                          "gateway's catalog has no row type of its table")
        fields[i] = field.with_metadata({**(field.metadata or {}), b"pg_type_oid": str(oid).encode()})
    return pa.schema(fields, metadata=schema.metadata)


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
