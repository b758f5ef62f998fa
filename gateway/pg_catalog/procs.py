"""pg_proc rows: the types' I/O functions and the SQL functions the gateway answers.

OIDs are assigned here (from 9000 upward, below the system relations' range) in a fixed
order; clients look functions up by name (`'array_in'::regproc`, `proname = 'array_recv'`),
never by a hard-coded OID.
"""

from __future__ import annotations

from gateway.pg_catalog.enums import ENUM_IO
from gateway.pg_catalog.model import OWNER_OID, PG_CATALOG_OID
from gateway.pg_catalog.types import io_functions

FIRST_PROC_OID = 9000
INTERNAL_LANGUAGE = 12

BOOL, INT2, INT4, INT8, TEXT, OID, NAME, FLOAT8 = 16, 21, 23, 20, 25, 26, 19, 701
REGCLASS, REGTYPE, NAME_ARRAY, RECORD = 2205, 2206, 1003, 2249

# SQL-callable functions the catalog emulation implements: name -> (return type, args).
SQL_FUNCTIONS: dict[str, tuple[int, tuple[int, ...]]] = {
    "format_type": (TEXT, (OID, INT4)),
    "pg_get_userbyid": (NAME, (OID,)),
    "pg_table_is_visible": (BOOL, (OID,)),
    "pg_type_is_visible": (BOOL, (OID,)),
    "pg_function_is_visible": (BOOL, (OID,)),
    "pg_get_expr": (TEXT, (194, OID)),
    "pg_get_indexdef": (TEXT, (OID,)),
    "pg_get_constraintdef": (TEXT, (OID,)),
    "pg_get_viewdef": (TEXT, (OID,)),
    "obj_description": (TEXT, (OID, NAME)),
    "col_description": (TEXT, (OID, INT4)),
    "shobj_description": (TEXT, (OID, NAME)),
    "has_table_privilege": (BOOL, (TEXT, TEXT)),
    "has_schema_privilege": (BOOL, (TEXT, TEXT)),
    "has_database_privilege": (BOOL, (TEXT, TEXT)),
    "has_column_privilege": (BOOL, (TEXT, TEXT, TEXT)),
    "has_function_privilege": (BOOL, (TEXT, TEXT)),
    "pg_get_keywords": (RECORD, ()),
    "current_schemas": (NAME_ARRAY, (BOOL,)),
    "pg_encoding_to_char": (NAME, (INT4,)),
    "array_to_string": (TEXT, (2277, TEXT)),
    "to_regtype": (REGTYPE, (TEXT,)),
    "to_regclass": (REGCLASS, (TEXT,)),
    "set_config": (TEXT, (TEXT, TEXT, BOOL)),
    "current_setting": (TEXT, (TEXT,)),
    "pg_backend_pid": (INT4, ()),
    "quote_ident": (TEXT, (TEXT,)),
    "version": (TEXT, ()),
}


def proc_oids() -> dict[str, int]:
    names = list(io_functions()) + [n for n in SQL_FUNCTIONS if n not in io_functions()] + list(ENUM_IO)
    return {name: FIRST_PROC_OID + i for i, name in enumerate(names)}


def proc_rows(oids: dict[str, int]) -> list[tuple]:
    signatures = {**io_functions(), **SQL_FUNCTIONS, **ENUM_IO}
    rows = []
    for name, oid in oids.items():
        rettype, args = signatures[name]
        retset = name == "pg_get_keywords"
        rows.append((
            oid, name, PG_CATALOG_OID, OWNER_OID, INTERNAL_LANGUAGE, 1.0, 1000.0 if retset else 0.0,
            0, 0, "f", False, False, True, retset, "s", "s", len(args), 0, rettype, list(args),
            None, None, None, None, None, name, None, None, None, None))
    return rows
