"""A PostgreSQL source's enum in a result is described as the gateway's catalog numbers it.

The source hands an enum over as its label's text (connectors.postgres.types), with the
source's OID of the type (`source_type_oid`). The gateway's catalog holds each source's
enums under OIDs of its own (gateway.pg_catalog.enums), which a relayed description is
renamed to (gateway.relay.links); a result the gateway encodes itself says the same: a
statement shipped whole to the source (the field says which enum), or the engine's output
of an enum (QueryPlan.enum_outputs, planner.source_enums). The field then carries
`pg_type_oid` and `pg_type_name` (pgwire.types.from_arrow), so a client sees the enum as
PostgreSQL names it and finds it in pg_type. An enum the catalog has not read (created
after its last read) stays text, as an unknown type's values are presented.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

import pyarrow as pa

TYPE_OID = b"source_type_oid"
TYPNAME = b"source_typname"

# (position, source, the source's OID of the enum, its typname)
Output = tuple[int, str, int, str]


def passed_enums(schema: pa.Schema, source: str) -> tuple[Output, ...]:
    """The enum columns of a statement `source` answers whole."""
    return tuple((i, source, int(f.metadata[TYPE_OID]), f.metadata.get(TYPNAME, b"").decode())
                 for i, f in enumerate(schema)
                 if f.metadata and TYPE_OID in f.metadata and pa.types.is_string(f.type))


async def enum_typed(schema: pa.Schema, outputs: Sequence[Output],
                     oids: Callable[[str], Awaitable[Mapping[int, int]]]) -> pa.Schema:
    """`schema` with each of `outputs` described as the gateway's enum; `oids`: a source's
    own type OIDs -> the catalog's (CatalogSource.row_type_oids)."""
    fields = list(schema)
    for i, source, source_oid, name in outputs:
        oid = (await oids(source)).get(source_oid)
        if oid is None or not name or not pa.types.is_string(fields[i].type):
            continue
        fields[i] = fields[i].with_metadata({**(fields[i].metadata or {}),
                                             b"pg_type_oid": str(oid).encode(),
                                             b"pg_type_name": name.encode()})
    return pa.schema(fields, metadata=schema.metadata)
