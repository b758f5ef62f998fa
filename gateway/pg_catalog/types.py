"""pg_type as a catalog table: rows built from the one type table, `pgwire.types.pg_type`.

Every type carries its real OID, typelem/typarray, and typinput/typoutput/typreceive/
typsend pointing at pg_proc rows with PostgreSQL's function names (see pg_type's module
for why drivers need them).
"""

from __future__ import annotations

from collections.abc import Iterable

from gateway.pg_catalog.enums import EnumType
from gateway.pg_catalog.model import OWNER_OID, PG_CATALOG_OID, CatalogModel
from pgwire.types.pg_type import (
    ALL_TYPES,
    ARRAY_IO,
    TYPE_BY_OID,
    TYPES,
    TypeDef,
    array_types,
    io_functions,
)

__all__ = [
    "ALL_TYPES", "ARRAY_IO", "TYPES", "TYPE_BY_OID", "TypeDef", "array_types", "display_rows",
    "enum_display_rows", "enum_label_rows", "enum_type_rows",
    "io_functions", "row_type_display_rows", "row_type_rows", "type_rows",
]  # fmt: skip


def type_rows(proc_oid: dict[str, int]) -> list[tuple]:
    rows = []
    for t in ALL_TYPES:
        is_array = t.io == ARRAY_IO
        subscript = proc_oid["array_subscript_handler"] if is_array else 0
        rows.append((
            t.oid, t.name, PG_CATALOG_OID, OWNER_OID, t.length, t.byval, t.typtype,
            t.category, t.preferred, True, ",", 0, subscript, t.elem, t.array_oid,
            proc_oid[f"{t.io}in"], proc_oid[f"{t.io}out"], proc_oid[f"{t.io}recv"],
            proc_oid[f"{t.io}send"], 0, 0, 0, t.align, t.storage, False, 0, -1, 0,
            100 if t.category == "S" and not is_array else 0, None, None, None))
    return rows


def row_type_rows(model: CatalogModel, proc_oid: dict[str, int]) -> list[tuple]:
    """Each source relation's composite type (typtype 'c', typrelid the relation, named
    after it in its namespace) and that type's array `_name`, as PostgreSQL makes them
    for every table: asyncpg decodes a whole row (`SELECT t FROM t`) by reading its
    fields from pg_attribute through typrelid and pg_class.reltype."""
    rows = []
    io = [proc_oid[f"record_{d}"] for d in ("in", "out", "recv", "send")]
    array_io = [proc_oid[f"{ARRAY_IO}{d}"] for d in ("in", "out", "recv", "send")]
    for rel in model.relations:
        if not rel.row_type_oid:
            continue
        rows.append((
            rel.row_type_oid, rel.name, rel.namespace_oid, OWNER_OID, -1, False, "c", "C",
            False, True, ",", rel.oid, 0, 0, rel.row_array_oid, *io, 0, 0, 0, "d", "x",
            False, 0, -1, 0, 0, None, None, None))
        rows.append((
            rel.row_array_oid, "_" + rel.name, rel.namespace_oid, OWNER_OID, -1, False, "b",
            "A", False, True, ",", 0, proc_oid["array_subscript_handler"], rel.row_type_oid,
            0, *array_io, 0, 0, 0, "d", "x", False, 0, -1, 0, 0, None, None, None))
    return rows


def row_type_display_rows(model: CatalogModel) -> list[tuple]:
    """format_type() of the row types: the relation's name (an array of them: name[])."""
    rows = []
    for rel in model.relations:
        if rel.row_type_oid:
            rows.append((rel.row_type_oid, rel.name, "", "", False, "USER-DEFINED"))
            rows.append((rel.row_array_oid, rel.name, "", "", True, "ARRAY"))
    return rows


def display_rows() -> list[tuple]:
    """Helper rows for format_type(): (oid, base name, tail, modkind, is_array)."""
    rows = []
    for t in ALL_TYPES:
        is_array = t.io == ARRAY_IO
        rows.append((t.oid, t.sql_name or (t.name if not is_array else t.name[1:]), t.tail,
                     t.modkind, is_array, _info_schema_type(t, is_array)))
    return rows


def _info_schema_type(t: TypeDef, is_array: bool) -> str:
    """information_schema.columns.data_type for this type."""
    if is_array:
        return "ARRAY"
    if t.typtype == "p" or t.category in ("Z", "G", "U", "I") and t.name not in (
            "bytea", "uuid", "json", "jsonb", "xml"):
        return "USER-DEFINED"
    if t.name == "bytea":
        return "bytea"
    return (t.sql_name or t.name) + t.tail


def enum_type_rows(enums: Iterable[EnumType], proc_oid: dict[str, int]) -> list[tuple]:
    """pg_type: typtype 'e', category 'E', four bytes by value, as PostgreSQL makes them;
    and each one's array `_name` (typelem the enum)."""
    io = [proc_oid[f"enum_{d}"] for d in ("in", "out", "recv", "send")]
    array_io = [proc_oid[f"{ARRAY_IO}{d}"] for d in ("in", "out", "recv", "send")]
    rows = []
    for e in enums:
        rows.append((e.oid, e.name, e.namespace_oid, OWNER_OID, 4, True, "e", "E", False, True, ",",
                     0, 0, 0, e.array_oid, *io, 0, 0, 0, "i", "p", False, 0, -1, 0, 0, None, None, None))
        rows.append((e.array_oid, "_" + e.name, e.namespace_oid, OWNER_OID, -1, False, "b", "A",
                     False, True, ",", 0, proc_oid["array_subscript_handler"], e.oid, 0, *array_io,
                     0, 0, 0, "i", "x", False, 0, -1, 0, 0, None, None, None))
    return rows


def enum_label_rows(enums: Iterable[EnumType]) -> list[tuple]:
    """pg_enum: (oid, enumtypid, enumsortorder, enumlabel), the labels in declared order."""
    return [(e.first_label_oid + i, e.oid, float(i + 1), label)
            for e in enums for i, label in enumerate(e.labels)]


def enum_display_rows(enums: Iterable[EnumType]) -> list[tuple]:
    """format_type() of an enum: its name (information_schema: USER-DEFINED); of its
    array: name[] (ARRAY)."""
    return [row for e in enums for row in ((e.oid, e.name, "", "", False, "USER-DEFINED"),
                                           (e.array_oid, e.name, "", "", True, "ARRAY"))]
