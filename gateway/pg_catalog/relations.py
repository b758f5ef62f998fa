"""Rows of pg_namespace, pg_class, pg_attribute, pg_index, pg_constraint and friends.

Built from a `CatalogModel`: one namespace per source, one pg_class row per table (plus the
catalog's own relations, so `\\dt pg_catalog.*` works), one pg_attribute row per column
with its PostgreSQL type OID, and an index plus a constraint for each primary key.
"""

from __future__ import annotations

from gateway.pg_catalog.model import (BTREE_AM_OID, DATABASE_OID, HEAP_AM_OID,
                                      OWNER_OID, PG_CLASS_OID, CatalogModel, Relation)
from gateway.pg_catalog.types import TYPE_BY_OID

DEFAULT_COLLATION = 100
INT8_OPCLASS = 1980  # btree int8_ops: indclass needs some operator class per key


def namespace_rows(model: CatalogModel) -> list[tuple]:
    return [(oid, name, OWNER_OID, None) for name, oid in model.namespaces.items()]


def _class_row(rel: Relation, oid: int, name: str, kind: str, natts: int, has_index: bool) -> tuple:
    tuples = float(rel.row_estimate) if rel.row_estimate is not None and kind == "r" else -1.0
    reltype = rel.row_type_oid if kind != "i" else 0  # an index has no row type
    return (oid, name, rel.namespace_oid, reltype, 0, OWNER_OID,
            HEAP_AM_OID if kind == "r" else BTREE_AM_OID if kind == "i" else 0,
            0, 0, 0, tuples, 0, 0, has_index, False, "p", kind, natts, 0, False, False,
            False, False, False, True, "d", False, 0, 0, 0, None, None, None)


def class_rows(model: CatalogModel) -> list[tuple]:
    rows = []
    for rel in model.relations:
        rows.append(_class_row(rel, rel.oid, rel.name, rel.kind, len(rel.columns),
                               rel.pk_index_oid is not None))
        if rel.pk_index_oid is not None:
            rows.append(_class_row(rel, rel.pk_index_oid, pk_name(rel), "i",
                                   len(rel.primary_key), False))
    return rows


def pk_name(rel: Relation) -> str:
    return f"{rel.name}_pkey"


def attribute_rows(model: CatalogModel) -> list[tuple]:
    rows = []
    for rel in model.relations:
        for col in rel.columns:
            rows.append(_attribute(rel.oid, col.name, col.number, col.pgtype.oid,
                                   col.pgtype.typmod, col.not_null, col.pgtype.size))
        if rel.pk_index_oid is not None:
            by_name = {c.name: c for c in rel.columns}
            for i, name in enumerate(rel.primary_key, 1):
                col = by_name[name]
                rows.append(_attribute(rel.pk_index_oid, name, i, col.pgtype.oid,
                                       col.pgtype.typmod, True))
    return rows


def _attribute(relid: int, name: str, number: int, typid: int, typmod: int, not_null: bool,
               size: int = -1) -> tuple:
    t = TYPE_BY_OID.get(typid)
    # a type of the catalog's own that is not varlena: a source's enum (four bytes by value)
    length = t.length if t else size
    byval = t.byval if t else size == 4
    align = t.align if t else "i"
    storage = t.storage if t else "p" if size == 4 else "x"
    collation = DEFAULT_COLLATION if t and t.category == "S" else 0
    ndims = 1 if t and t.name.startswith("_") else 0
    return (relid, name, typid, -1, length, number, ndims, -1, typmod, byval, align, storage,
            "", not_null, False, False, "", "", False, True, 0, collation, None, None, None, None)


def index_rows(model: CatalogModel) -> list[tuple]:
    rows = []
    for rel in model.relations:
        if rel.pk_index_oid is None:
            continue
        numbers = _key_numbers(rel)
        n = len(numbers)
        rows.append((rel.pk_index_oid, rel.oid, n, n, True, False, True, False, True, False,
                     True, False, True, True, False, numbers, [0] * n, [INT8_OPCLASS] * n,
                     [0] * n, None, None))
    return rows


def _key_numbers(rel: Relation) -> list[int]:
    by_name = {c.name: c.number for c in rel.columns}
    return [by_name[name] for name in rel.primary_key]


def constraint_rows(model: CatalogModel) -> list[tuple]:
    rows = []
    for rel in model.relations:
        if rel.pk_constraint_oid is None:
            continue
        rows.append((rel.pk_constraint_oid, pk_name(rel), rel.namespace_oid, "p", False, False,
                     True, rel.oid, 0, rel.pk_index_oid, 0, 0, " ", " ", " ", True, 0, True,
                     _key_numbers(rel), None, None, None, None, None, None, None))
    return rows


def definition_rows(model: CatalogModel) -> list[tuple]:
    """Helper rows for pg_get_indexdef / pg_get_constraintdef: (oid, kind, definition)."""
    rows = []
    for rel in model.relations:
        if rel.pk_index_oid is None:
            continue
        cols = ", ".join(_quote(c) for c in rel.primary_key)
        table = f"{_quote(rel.namespace)}.{_quote(rel.name)}"
        rows.append((rel.pk_index_oid, "index",
                     f"CREATE UNIQUE INDEX {_quote(pk_name(rel))} ON {table} USING btree ({cols})"))
        rows.append((rel.pk_constraint_oid, "constraint", f"PRIMARY KEY ({cols})"))
    return rows


def description_rows(model: CatalogModel) -> list[tuple]:
    return [(rel.oid, PG_CLASS_OID, 0, rel.comment) for rel in model.relations if rel.comment]


def _quote(name: str) -> str:
    plain = name.isidentifier() and name == name.lower() and name.isascii()
    return name if plain else '"' + name.replace('"', '""') + '"'


def stat_user_table_rows(model: CatalogModel) -> list[tuple]:
    """pg_stat_user_tables: the sources' row estimates as n_live_tup (Metabase reads it)."""
    return [(rel.oid, rel.namespace, rel.name, None, None, None, None, None, None, None, None,
             rel.row_estimate, None, None, None, None, None, None, None, None, None, None, None)
            for rel in model.relations if rel.kind == "r"
            and rel.namespace not in ("pg_catalog", "information_schema")]


def database_rows(database: str) -> list[tuple]:
    return [(DATABASE_OID, database, OWNER_OID, 6, "c", False, True, -1, 0, 0, 1663,
             "C", "C", None, None, None)]


STATIC_ROWS: dict[str, list[tuple]] = {
    "pg_am": [(2, "heap", 0, "t"), (403, "btree", 0, "i"), (405, "hash", 0, "i"),
              (783, "gist", 0, "i"), (2742, "gin", 0, "i"), (4000, "spgist", 0, "i"),
              (3580, "brin", 0, "i")],
    "pg_collation": [(100, "default", 11, OWNER_OID, "d", True, -1, None, None, None, None),
                     (950, "C", 11, OWNER_OID, "c", True, -1, "C", "C", None, None),
                     (951, "POSIX", 11, OWNER_OID, "c", True, -1, "POSIX", "POSIX", None, None),
                     (962, "ucs_basic", 11, OWNER_OID, "c", True, 6, "C", "C", None, None)],
    "pg_tablespace": [(1663, "pg_default", OWNER_OID, None, None),
                      (1664, "pg_global", OWNER_OID, None, None)],
    "pg_language": [(12, "internal", OWNER_OID, False, False, 0, 0, 0, None),
                    (13, "c", OWNER_OID, False, False, 0, 0, 0, None),
                    (14, "sql", OWNER_OID, False, True, 0, 0, 0, None)],
    "pg_opclass": [(INT8_OPCLASS, BTREE_AM_OID, "int8_ops", 11, OWNER_OID, 1976, 20, True, 0)],
}
