"""A PostgreSQL source's enum types in the gateway's catalog: pg_type and pg_enum rows.

Catalog discovery reads each enum column's labels in their declared order and the
source's OID of its type (connectors.postgres.types: `enum_labels`, `source_type_oid`).
The gateway numbers each enum itself, as it numbers the tables' row types, in the
namespace of its source; a result column of the enum is described with that number,
relayed (gateway.relay.links renames the source's OID) or computed by the engine
(gateway.executor.enum_types), so a client looking the OID up in pg_type finds the enum
(asyncpg decodes a value of typtype 'e' as its label's text) and its labels in pg_enum.
Each enum has its array type too (`_status`, typelem the enum), numbered after the
labels: PostgreSQL types `$1` in `st = ANY($1)` as it, and a client looks its OID up in
pg_type to send a list (gateway.session.enum_params). A column of an array of an enum
stays the source's text. Their rows: gateway.pg_catalog.types.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from connectors.base import TableInfo

TYPE_OID_META = b"source_type_oid"
ARRAY_OID_META = b"source_array_oid"
LABELS_META = b"enum_labels"
NAME_META = b"source_typname"
# enum_in & co., as pg_proc names them (procs numbers them after the others)
ENUM_IO = {"enum_in": (3500, (2275, 26)), "enum_out": (2275, (3500,)),
           "enum_recv": (3500, (2281, 26)), "enum_send": (17, (3500,))}


@dataclass(frozen=True)
class EnumType:
    oid: int  # the gateway's
    name: str
    namespace_oid: int
    namespace: str
    labels: tuple[str, ...]
    source_oid: int
    first_label_oid: int  # the labels' pg_enum.oid: this and the ones after it
    array_oid: int = 0  # the gateway's of its array type
    source_array_oid: int = 0


def source_enums(tables: Iterable[TableInfo]) -> dict[int, tuple[str, tuple[str, ...], int]]:
    """The enums `tables`' columns are of: the source's OID -> (name, labels, the source's
    OID of its array type, 0 if not read)."""
    found: dict[int, tuple[str, tuple[str, ...], int]] = {}
    for info in tables:
        for field in info.schema:
            meta = field.metadata or {}
            if TYPE_OID_META in meta and LABELS_META in meta:
                found[int(meta[TYPE_OID_META])] = (meta[NAME_META].decode(),
                                                   tuple(json.loads(meta[LABELS_META])),
                                                   int(meta.get(ARRAY_OID_META, b"0")))
    return found
