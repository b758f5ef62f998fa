"""A PostgreSQL source's enums in the gateway's catalog model, and a result described by them."""

from __future__ import annotations

import asyncio

import pyarrow as pa

from connectors.base import TableInfo, TableRef
from connectors.postgres.types import column_type
from gateway.executor.enum_types import enum_typed, passed_enums
from gateway.pg_catalog.model import CatalogModel
from pgwire.types.from_arrow import pg_type_for_field
from pgwire.types.rows import encode_rows

STATUS = ("new", "paid", "shipped")


def _events(with_enum: bool) -> TableInfo:
    fields = [pa.field("id", pa.int32())]
    if with_enum:
        fields += [column_type("st", "status", -1, "status", STATUS, 17001).field,
                   column_type("st2", "status", -1, "status", STATUS, 17001).field]
    return TableInfo(TableRef("pg", "events"), pa.schema(fields))


def _model(with_enum: bool) -> CatalogModel:
    return CatalogModel.build(1, {"pg": [_events(with_enum), TableInfo(TableRef("pg", "z"), pa.schema([("a", pa.int32())]))]},
                              {})


def test_an_enum_is_numbered_after_everything_else_once() -> None:
    plain, typed = _model(False), _model(True)
    assert [(r.name, r.oid, r.row_type_oid) for r in typed.relations] == \
        [(r.name, r.oid, r.row_type_oid) for r in plain.relations]  # nothing else moves
    (status,) = typed.enums  # two columns of one enum: one type
    assert status.oid > max(r.row_array_oid for r in typed.relations)
    assert (status.name, status.namespace, status.labels) == ("status", "pg", STATUS)
    events = next(r for r in typed.relations if r.name == "events")
    assert [c.pgtype.oid for c in events.columns] == [23, status.oid, status.oid]
    assert typed.row_type_oids()["pg"][17001] == status.oid


def test_a_result_of_the_enum_is_described_and_sent_as_its_label() -> None:
    field = column_type("st", "status", -1, "status", None, 17001).field  # as a description has it
    schema = pa.schema([pa.field("id", pa.int32()), field])
    outputs = passed_enums(schema, "pg")
    assert outputs == ((1, "pg", 17001, "status"),)

    async def oids(source: str) -> dict[int, int]:
        return {17001: 16500} if source == "pg" else {}

    described = asyncio.run(enum_typed(schema, outputs, oids))
    pgtype = pg_type_for_field(described.field(1))
    assert (pgtype.oid, pgtype.name, pgtype.size) == (16500, "status", 4)
    batch = pa.record_batch([pa.array([1], pa.int32()), pa.array(["paid"])], schema=described)
    binary = encode_rows(batch, [1])
    assert binary.endswith(b"\x00\x00\x00\x04paid")  # enum_send: the label's bytes
    assert encode_rows(batch, [0]).endswith(b"\x00\x00\x00\x04paid")
    # an enum the catalog has not read stays text
    unknown = asyncio.run(enum_typed(schema, ((1, "other", 17001, "status"),), oids))
    assert pg_type_for_field(unknown.field(1)).name == "text"
