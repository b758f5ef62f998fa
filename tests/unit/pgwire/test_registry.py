"""The type registry and the one type table: every served type has its codecs."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pgwire.errors import PgError
from pgwire.types import pg_type
from pgwire.types.adapters import REGISTRY
from pgwire.types.registry import Registry
from pgwire.types.rows import encode_column


def test_served_types_come_from_the_catalog_rows() -> None:
    for t in pg_type.SCALAR_TYPES:
        row = pg_type.TYPE_BY_OID[t.oid]
        assert (row.name, row.length) == (t.name, t.size)
    for elem_oid, array in pg_type.ARRAY_OF.items():
        row = pg_type.TYPE_BY_OID[array.oid]
        assert row.elem == elem_oid and row.name == array.name


@pytest.mark.parametrize("served", pg_type.SCALAR_TYPES, ids=lambda t: t.name)
def test_every_served_scalar_has_its_codecs(served: pg_type.PgType) -> None:
    assert REGISTRY.directions(served.oid) == {"binary_out", "text_in", "binary_in"}
    array = pg_type.ARRAY_OF.get(served.oid)
    if array is not None:  # array output goes by the Arrow list layout, not the OID
        assert REGISTRY.directions(array.oid) == {"text_in", "binary_in"}


def test_array_parameters_read_elements_through_the_registry() -> None:
    assert REGISTRY.decode_text(pg_type.INT4_ARRAY.oid, "{1,NULL,{}}", "UTC") == [1, None, []]
    assert REGISTRY.decode_text(pg_type.DATE_ARRAY.oid, "{}", "UTC") == []


def test_text_output_follows_the_arrow_type_and_may_be_narrowed_by_oid() -> None:
    column = pa.array([b"\x00" * 16], pa.binary(16))
    as_bytea = encode_column(column, pg_type.BYTEA, 0, "UTC")
    as_uuid = encode_column(column, pg_type.UUID, 0, "UTC")
    assert as_bytea.lengths.tolist() == [34]
    assert as_uuid.lengths.tolist() == [36]


def test_unknown_codecs_are_errors_with_postgres_wording() -> None:
    empty = Registry()
    with pytest.raises(PgError, match="not supported in results"):
        empty.encode_text(pa.array([1]), pg_type.INT8, "UTC")
    with pytest.raises(PgError, match="binary output of type int8 is not supported"):
        empty.encode_binary(pa.array([1]), pg_type.INT8, "UTC")
    with pytest.raises(PgError, match="binary format for parameters of type 20"):
        empty.decode_binary(20, b"")
    assert empty.decode_text(20, "42", "UTC") == "42"  # left for DuckDB to cast


def test_a_codec_is_registered_once() -> None:
    registry = Registry()
    registry.add_text_in((20,), lambda oid, text, tz: text)
    with pytest.raises(ValueError, match="text input of OID 20 is registered twice"):
        registry.add_text_in((20,), lambda oid, text, tz: text)
