"""information_schema relations (PostgreSQL 15 column order) filled from the catalog model.

In PostgreSQL these are views over pg_catalog; here they are tables computed from the same
`CatalogModel` whenever the catalog is rebuilt, so they always agree with pg_class and
pg_attribute. Domain types (sql_identifier, character_data, cardinal_number, yes_or_no)
are shown as their base types, as pgJDBC and SQLAlchemy read them.
"""

from __future__ import annotations

from gateway.pg_catalog.model import CatalogModel, Relation
from gateway.pg_catalog.relations import pk_name
from gateway.pg_catalog.types import TYPE_BY_OID, display_rows

INFORMATION_SCHEMA: dict[str, str] = {
    "schemata": (
        "catalog_name name, schema_name name, schema_owner name, "
        "default_character_set_catalog name, default_character_set_schema name, "
        "default_character_set_name name, sql_path text"),
    "tables": (
        "table_catalog name, table_schema name, table_name name, table_type text, "
        "self_referencing_column_name name, reference_generation text, "
        "user_defined_type_catalog name, user_defined_type_schema name, "
        "user_defined_type_name name, is_insertable_into text, is_typed text, "
        "commit_action text"),
    "columns": (
        "table_catalog name, table_schema name, table_name name, column_name name, "
        "ordinal_position int4, column_default text, is_nullable text, data_type text, "
        "character_maximum_length int4, character_octet_length int4, numeric_precision int4, "
        "numeric_precision_radix int4, numeric_scale int4, datetime_precision int4, "
        "interval_type text, interval_precision int4, character_set_catalog name, "
        "character_set_schema name, character_set_name name, collation_catalog name, "
        "collation_schema name, collation_name name, domain_catalog name, domain_schema name, "
        "domain_name name, udt_catalog name, udt_schema name, udt_name name, "
        "scope_catalog name, scope_schema name, scope_name name, maximum_cardinality int4, "
        "dtd_identifier name, is_self_referencing text, is_identity text, "
        "identity_generation text, identity_start text, identity_increment text, "
        "identity_maximum text, identity_minimum text, identity_cycle text, "
        "is_generated text, generation_expression text, is_updatable text"),
    "views": (
        "table_catalog name, table_schema name, table_name name, view_definition text, "
        "check_option text, is_updatable text, is_insertable_into text, "
        "is_trigger_updatable text, is_trigger_deletable text, "
        "is_trigger_insertable_into text"),
    "table_constraints": (
        "constraint_catalog name, constraint_schema name, constraint_name name, "
        "table_catalog name, table_schema name, table_name name, constraint_type text, "
        "is_deferrable text, initially_deferred text, enforced text, nulls_distinct text"),
    "key_column_usage": (
        "constraint_catalog name, constraint_schema name, constraint_name name, "
        "table_catalog name, table_schema name, table_name name, column_name name, "
        "ordinal_position int4, position_in_unique_constraint int4"),
    "referential_constraints": (
        "constraint_catalog name, constraint_schema name, constraint_name name, "
        "unique_constraint_catalog name, unique_constraint_schema name, "
        "unique_constraint_name name, match_option text, update_rule text, delete_rule text"),
    "constraint_column_usage": (
        "table_catalog name, table_schema name, table_name name, column_name name, "
        "constraint_catalog name, constraint_schema name, constraint_name name"),
    "routines": (
        "specific_catalog name, specific_schema name, specific_name name, "
        "routine_catalog name, routine_schema name, routine_name name, routine_type text, "
        "data_type text, type_udt_name name, routine_body text, routine_definition text, "
        "external_language text, is_deterministic text"),
}

_DISPLAY = {row[0]: row for row in display_rows()}


def _table_type(rel: Relation) -> str:
    return "VIEW" if rel.kind == "v" else "BASE TABLE"


def rows(model: CatalogModel, database: str) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {name: [] for name in INFORMATION_SCHEMA}
    for name in model.namespaces:
        out["schemata"].append((database, name, "fedgate", None, None, None, None))
    for rel in model.relations:
        ns = rel.namespace
        out["tables"].append((database, ns, rel.name, _table_type(rel), None, None, None, None,
                              None, "NO", "NO", None))
        if rel.kind == "v":
            out["views"].append((database, ns, rel.name, None, "NONE", "NO", "NO", "NO", "NO",
                                 "NO"))
        for col in rel.columns:
            out["columns"].append(_column(database, rel, col))
        if rel.pk_constraint_oid is not None:
            name = pk_name(rel)
            out["table_constraints"].append((database, ns, name, database, ns, rel.name,
                                             "PRIMARY KEY", "NO", "NO", "YES", None))
            for i, column in enumerate(rel.primary_key, 1):
                out["key_column_usage"].append((database, ns, name, database, ns, rel.name,
                                                column, i, None))
                out["constraint_column_usage"].append((database, ns, rel.name, column,
                                                       database, ns, name))
    return out


def _column(database: str, rel: Relation, col) -> tuple:
    t = col.pgtype
    display = _DISPLAY.get(t.oid)
    data_type = display[5] if display else "USER-DEFINED"
    char_len = t.typmod - 4 if t.name in ("varchar", "bpchar") and t.typmod >= 4 else None
    precision = scale = radix = None
    if t.name in ("int2", "int4", "int8"):
        precision, scale, radix = {"int2": 16, "int4": 32, "int8": 64}[t.name], 0, 2
    elif t.name in ("float4", "float8"):
        precision, radix = (24 if t.name == "float4" else 53), 2
    elif t.name == "numeric":
        radix = 10
        if t.typmod >= 4:
            precision, scale = ((t.typmod - 4) >> 16) & 0xFFFF, (t.typmod - 4) & 0x7FF
    datetime_precision = None
    if t.name in ("date",):
        datetime_precision = 0
    elif t.name in ("time", "timestamp", "timestamptz", "timetz", "interval"):
        datetime_precision = t.typmod if t.typmod >= 0 else 6
    pg_type = TYPE_BY_OID.get(t.oid)
    udt = pg_type.name if pg_type else t.name
    return (database, rel.namespace, rel.name, col.name, col.number, None,
            "NO" if col.not_null else "YES", data_type, char_len,
            (char_len * 4 if char_len else (1073741824 if t.name in ("text", "varchar", "bpchar")
                                            else None)),
            precision, radix, scale, datetime_precision, None, None, None, None, None, None,
            None, None, None, None, None, database, "pg_catalog", udt, None, None, None, None,
            str(col.number), "NO", "NO", None, None, None, None, None, "NO", "NEVER", None,
            "NO" if rel.kind == "v" or rel.namespace in ("pg_catalog", "information_schema")
            else "YES")
