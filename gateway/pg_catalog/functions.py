"""PostgreSQL catalog functions as DuckDB macros in schema `fg_fn`.

DuckDB ships look-alike macros in its own pg_catalog (its format_type(23, -1) says
'float8'), so ours live in a schema of their own and the catalog dialect qualifies every
call with it. Session-dependent answers (current_schemas, current_setting, the owner's
name) read the per-query tables `fg_session` and `fg_settings` that the catalog source
registers on the cursor running the query; the placeholders created in `main` only let
the macros bind at creation time.

A relation's sizes and a view's definition are the sources' own, read live for the
queries that ask (gateway.pg_catalog.storage, the per-query table `fg_storage`).
Functions that take no part in answering a catalog query (a trigger's definition) return
NULL: fedgate has no such object, and PostgreSQL returns NULL for objects that do not
exist.
"""

from __future__ import annotations

from gateway.pg_catalog import storage

SESSION_TABLES = {
    "fg_session": ('"user" VARCHAR, database VARCHAR, pid INTEGER, explicit VARCHAR[], '
                   "effective VARCHAR[]"),
    "fg_settings": "name VARCHAR, setting VARCHAR",
    "fg_activity": ("pid INTEGER, usename VARCHAR, application_name VARCHAR, "
                    "client_addr VARCHAR, client_port INTEGER, backend_start TIMESTAMPTZ, "
                    "xact_start TIMESTAMPTZ, query_start TIMESTAMPTZ, state VARCHAR, "
                    "query VARCHAR"),
    "fg_prepared": ("name VARCHAR, statement VARCHAR, prepare_time TIMESTAMPTZ, "
                    "parameter_types VARCHAR[], from_sql BOOLEAN"),
    storage.TABLE: storage.COLUMNS,
}

HELPER_TABLES = {
    "type_display": ("oid UINTEGER, base VARCHAR, tail VARCHAR, modkind VARCHAR, "
                     "is_array BOOLEAN, info_type VARCHAR"),
    "type_names": "name VARCHAR, oid UINTEGER",
    "definitions": "oid UINTEGER, kind VARCHAR, definition VARCHAR",
    "keywords": "word VARCHAR, catcode VARCHAR, barelabel BOOLEAN, catdesc VARCHAR, baredesc VARCHAR",
    "one_row": "one INTEGER",
}

_MOD = """CASE
    WHEN mod IS NULL OR mod < 0 THEN ''
    WHEN fgm_d.modkind = 'numeric' AND mod >= 4
        THEN '(' || (((mod - 4) >> 16) & 65535) || ',' || ((mod - 4) & 2047) || ')'
    WHEN fgm_d.modkind = 'length' AND mod >= 4 THEN '(' || (mod - 4) || ')'
    WHEN fgm_d.modkind IN ('length0', 'precision') THEN '(' || mod || ')'
    ELSE '' END"""

_TRUE_PRIVILEGE = "(a) AS true, (a, b) AS true, (a, b, c) AS true, (a, b, c, d) AS true"

# Macro bodies alias every relation `fgm_*` and qualify every column: a macro is expanded
# into the caller's query, so `c.oid = rel` would capture a caller's argument `c.oid`.
def _size_pretty() -> str:
    """pg_size_pretty(bigint) as PostgreSQL 15 writes it (dbsize.c): bytes below 10 kB,
    then each unit below 20 of the next, its last shift half-rounded (`1024 bytes`,
    `118 MB`), where DuckDB's format_bytes writes `1.0 KiB`."""
    def half_rounded(x: str) -> str:
        return f"(({x}) + CASE WHEN ({x}) < 0 THEN -1 ELSE 1 END) // 2"

    shifted = ["size // 512"]  # kB counted in half-units (rounded when shown)
    for _ in range(4):  # MB, GB, TB, PB
        shifted.append(f"({shifted[-1]}) // 1024")
    cases = [f"WHEN abs(size) < {10 * 1024} THEN size || ' bytes'"]
    for name, value in zip(("kB", "MB", "GB", "TB"), shifted):
        cases.append(f"WHEN abs({value}) < {20 * 1024 - 1} THEN {half_rounded(value)} || ' {name}'")
    cases.append(f"ELSE {half_rounded(shifted[-1])} || ' PB'")
    return f"(size) AS (CASE WHEN size IS NULL THEN NULL {' '.join(cases)} END)"


MACROS: dict[str, str] = {
    "format_type": f"""(typ, mod) AS (CASE WHEN typ IS NULL THEN NULL ELSE coalesce((
        SELECT CASE WHEN fgm_d.base = 'character' AND (mod IS NULL OR mod < 0)
                    AND NOT fgm_d.is_array THEN 'bpchar' ELSE fgm_d.base END
               || {_MOD} || fgm_d.tail || CASE WHEN fgm_d.is_array THEN '[]' ELSE '' END
        FROM fg_x.type_display fgm_d WHERE fgm_d.oid = typ), '???') END)""",
    "pg_get_userbyid": """(role) AS (SELECT CASE WHEN role = 10 THEN fgm_s."user"
        ELSE 'unknown (OID=' || role || ')' END FROM fg_session fgm_s)""",
    "pg_table_is_visible": """(rel) AS (SELECT fgm_v.visible FROM fg_x.visibility fgm_v
        WHERE fgm_v.oid = rel)""",
    "pg_type_is_visible": """(typ) AS (SELECT list_contains(fgm_s.effective, fgm_n.nspname)
        FROM fg_pg.pg_type fgm_t JOIN fg_pg.pg_namespace fgm_n ON fgm_t.typnamespace = fgm_n.oid,
        fg_session fgm_s WHERE fgm_t.oid = typ)""",
    "pg_function_is_visible": """(fn) AS (SELECT list_contains(fgm_s.effective, fgm_n.nspname)
        FROM fg_pg.pg_proc fgm_p JOIN fg_pg.pg_namespace fgm_n ON fgm_p.pronamespace = fgm_n.oid,
        fg_session fgm_s WHERE fgm_p.oid = fn)""",
    "pg_get_expr": "(expr, rel) AS expr, (expr, rel, pretty) AS expr",
    "pg_get_indexdef": """(idx) AS (SELECT fgm_d.definition FROM fg_x.definitions fgm_d
            WHERE fgm_d.oid = idx AND fgm_d.kind = 'index'),
        (idx, col, pretty) AS (CASE WHEN col = 0 THEN (SELECT fgm_d.definition
            FROM fg_x.definitions fgm_d WHERE fgm_d.oid = idx AND fgm_d.kind = 'index')
            ELSE (SELECT fgm_a.attname FROM fg_pg.pg_attribute fgm_a
            WHERE fgm_a.attrelid = idx AND fgm_a.attnum = col) END)""",
    "pg_get_constraintdef": """(con) AS (SELECT fgm_d.definition FROM fg_x.definitions fgm_d
            WHERE fgm_d.oid = con AND fgm_d.kind = 'constraint'),
        (con, pretty) AS (SELECT fgm_d.definition FROM fg_x.definitions fgm_d
            WHERE fgm_d.oid = con AND fgm_d.kind = 'constraint')""",
    "pg_get_viewdef": """(v) AS (SELECT fgm_z.definition FROM fg_x.storage_of fgm_z WHERE fgm_z.oid = v),
        (v, pretty) AS (SELECT CASE WHEN pretty THEN fgm_z.definition_pretty ELSE fgm_z.definition END
            FROM fg_x.storage_of fgm_z WHERE fgm_z.oid = v)""",
    "pg_get_triggerdef": "(t) AS NULL::VARCHAR, (t, pretty) AS NULL::VARCHAR",
    "pg_get_ruledef": "(t) AS NULL::VARCHAR, (t, pretty) AS NULL::VARCHAR",
    "pg_get_statisticsobjdef_columns": "(t) AS NULL::VARCHAR",
    "pg_get_partkeydef": "(t) AS NULL::VARCHAR",
    "pg_get_partition_constraintdef": "(t) AS NULL::VARCHAR",
    "pg_get_serial_sequence": "(t, c) AS NULL::VARCHAR",
    "pg_get_function_arguments": """(fn) AS (SELECT coalesce(string_agg(
        fg_fn.format_type(fgm_a.typ, NULL), ', ' ORDER BY fgm_a.pos), '') FROM (
        SELECT unnest(fgm_p.proargtypes) AS typ, generate_subscripts(fgm_p.proargtypes, 1) AS pos
        FROM fg_pg.pg_proc fgm_p WHERE fgm_p.oid = fn) fgm_a)""",
    "pg_get_function_identity_arguments": "(fn) AS fg_fn.pg_get_function_arguments(fn)",
    "pg_get_function_result": """(fn) AS (SELECT fg_fn.format_type(fgm_p.prorettype, NULL)
        FROM fg_pg.pg_proc fgm_p WHERE fgm_p.oid = fn)""",
    "obj_description": """(obj) AS (SELECT min(fgm_d.description) FROM fg_pg.pg_description fgm_d
            WHERE fgm_d.objoid = obj AND fgm_d.objsubid = 0),
        (obj, cat) AS (SELECT min(fgm_d.description) FROM fg_pg.pg_description fgm_d
            WHERE fgm_d.objoid = obj AND fgm_d.objsubid = 0)""",
    "col_description": """(rel, col) AS (SELECT min(fgm_d.description)
        FROM fg_pg.pg_description fgm_d WHERE fgm_d.objoid = rel AND fgm_d.objsubid = col)""",
    "shobj_description": "(obj, cat) AS NULL::VARCHAR",
    "has_table_privilege": _TRUE_PRIVILEGE,
    "has_schema_privilege": _TRUE_PRIVILEGE,
    "has_database_privilege": _TRUE_PRIVILEGE,
    "has_column_privilege": _TRUE_PRIVILEGE,
    "has_any_column_privilege": _TRUE_PRIVILEGE,
    "has_function_privilege": _TRUE_PRIVILEGE,
    "has_sequence_privilege": _TRUE_PRIVILEGE,
    "has_type_privilege": _TRUE_PRIVILEGE,
    "pg_has_role": _TRUE_PRIVILEGE,
    "pg_get_keywords": "() AS TABLE SELECT * FROM fg_x.keywords",
    "current_schemas": """(implicit) AS (SELECT CASE WHEN implicit THEN fgm_s.effective
        ELSE fgm_s.explicit END FROM fg_session fgm_s)""",
    "pg_encoding_to_char": """(enc) AS (CASE enc WHEN 6 THEN 'UTF8' WHEN 0 THEN 'SQL_ASCII'
        ELSE '' END)""",
    # A built-in type's name, else a relation's (its row type: pg_class.reltype).
    "to_regtype": """(arg_name) AS coalesce((SELECT min(fgm_t.oid) FROM fg_x.type_names fgm_t
        WHERE fgm_t.name = lower(regexp_replace(trim(arg_name), '^pg_catalog\\.', ''))),
        (SELECT nullif(fgm_c.reltype, 0) FROM fg_pg.pg_class fgm_c
         WHERE fgm_c.oid = fg_fn.to_regclass(trim(arg_name))))""",
    "regtype_in": """(arg_name) AS coalesce(fg_fn.to_regtype(arg_name),
        error('type "' || arg_name || '" does not exist'))""",
    "regtype_out": "(typ) AS (CASE WHEN typ = 0 THEN '-' ELSE fg_fn.format_type(typ, NULL) END)",
    "to_regclass": """(arg_name) AS (SELECT arg_min(fgm_c.oid,
            list_position(fgm_s.effective, fgm_n.nspname))
        FROM (SELECT regexp_extract(arg_name,
                '^(?:("(?:[^"]|"")+"|[^."]+)\\.)?("(?:[^"]|"")+"|[^."]+)$', ['sch', 'rel'])
                AS parts) fgm_p,
            fg_pg.pg_class fgm_c
            JOIN fg_pg.pg_namespace fgm_n ON fgm_c.relnamespace = fgm_n.oid, fg_session fgm_s
        WHERE fgm_c.relname = fg_fn._unquote(fgm_p.parts.rel)
          AND CASE WHEN fgm_p.parts.sch = '' THEN list_contains(fgm_s.effective, fgm_n.nspname)
            ELSE fgm_n.nspname = fg_fn._unquote(fgm_p.parts.sch) END)""",
    "_unquote": """(ident) AS (CASE WHEN ident LIKE '"%"'
        THEN replace(ident[2:-2], '""', '"') ELSE lower(ident) END)""",
    "regclass_in": """(arg_name) AS (SELECT coalesce(fg_fn.to_regclass(fgm_x.a),
        error('relation "' || fgm_x.a || '" does not exist')) FROM (SELECT arg_name AS a) fgm_x)""",
    "regclass_out": """(rel) AS (SELECT CASE WHEN fgm_v.visible THEN fgm_c.relname
        ELSE fgm_n.nspname || '.' || fgm_c.relname END
        FROM fg_pg.pg_class fgm_c JOIN fg_pg.pg_namespace fgm_n ON fgm_c.relnamespace = fgm_n.oid
        JOIN fg_x.visibility fgm_v ON fgm_v.oid = fgm_c.oid WHERE fgm_c.oid = rel)""",
    # The emulated pg_proc lists the functions clients look up, not all of PostgreSQL's:
    # a name it lacks is refused (0A000), not said not to exist.
    "regproc_in": """(arg_name) AS coalesce((SELECT min(fgm_p.oid) FROM fg_pg.pg_proc fgm_p
        WHERE fgm_p.proname = regexp_replace(arg_name, '^pg_catalog\\.', '')),
        error('a look-up of function "' || arg_name || '" outside the functions of fedgate''s '
              || 'catalog is not supported by fedgate outside PostgreSQL sources'))""",
    "regproc_out": """(fn) AS (CASE WHEN fn = 0 THEN '-' ELSE
        (SELECT fgm_p.proname FROM fg_pg.pg_proc fgm_p WHERE fgm_p.oid = fn) END)""",
    # regprocedureout's 'name(type,type)': format_type's names, joined without blanks.
    "regprocedure_out": """(fn) AS (CASE WHEN fn = 0 THEN '-' ELSE
        (SELECT fgm_p.proname || '(' || replace(fg_fn.pg_get_function_arguments(fn), ', ', ',')
            || ')' FROM fg_pg.pg_proc fgm_p WHERE fgm_p.oid = fn) END)""",
    "regprocedure_in": """(arg_name) AS coalesce((SELECT min(fgm_q.oid) FROM fg_pg.pg_proc fgm_q
        WHERE fg_fn.regprocedure_out(fgm_q.oid) = replace(regexp_replace(arg_name,
            '^pg_catalog\\.', ''), ' ', '')),
        error('a look-up of function "' || arg_name || '" outside the functions of fedgate''s '
              || 'catalog, as written there, is not supported by fedgate outside PostgreSQL sources'))""",
    "regnamespace_in": """(arg_name) AS coalesce((SELECT fgm_n.oid FROM fg_pg.pg_namespace fgm_n
        WHERE fgm_n.nspname = fg_fn._unquote(arg_name)),
        error('schema "' || arg_name || '" does not exist'))""",
    "regnamespace_out": """(ns) AS (SELECT fgm_n.nspname FROM fg_pg.pg_namespace fgm_n
        WHERE fgm_n.oid = ns)""",
    "regrole_in": """(arg_name) AS coalesce((SELECT 10::UINTEGER FROM fg_session fgm_s
        WHERE fgm_s."user" = fg_fn._unquote(arg_name)),
        error('role "' || arg_name || '" does not exist'))""",
    "regrole_out": "(role) AS fg_fn.pg_get_userbyid(role)",
    "set_config": "(arg_name, value, is_local) AS value",
    "current_setting": """(arg_name) AS coalesce((SELECT min(fgm_g.setting) FROM fg_settings fgm_g
            WHERE lower(fgm_g.name) = lower(arg_name)),
            error('unrecognized configuration parameter "' || arg_name || '"')),
        (arg_name, missing_ok) AS (CASE WHEN missing_ok THEN (SELECT min(fgm_g.setting)
            FROM fg_settings fgm_g WHERE lower(fgm_g.name) = lower(arg_name))
            ELSE coalesce((SELECT min(fgm_g.setting) FROM fg_settings fgm_g
            WHERE lower(fgm_g.name) = lower(arg_name)),
            error('unrecognized configuration parameter "' || arg_name || '"')) END)""",
    "pg_backend_pid": "() AS (SELECT fgm_s.pid FROM fg_session fgm_s)",
    # {reserved}: the keywords that need quoting, filled in when the catalog is built.
    "quote_ident": """(ident) AS (CASE WHEN regexp_full_match(ident, '[a-z_][a-z0-9_]*')
        AND NOT list_contains({reserved}, ident)
        THEN ident ELSE '"' || replace(ident, '"', '""') || '"' END)""",
    "array_upper": "(arr, dim) AS (CASE WHEN len(arr) = 0 THEN NULL ELSE len(arr) END)",
    "array_lower": "(arr, dim) AS (CASE WHEN len(arr) = 0 THEN NULL ELSE 1 END)",
    "_pg_expandarray": """(arr) AS unnest(list_transform(generate_series(1, len(arr)),
        lambda fgm_i: {'x': arr[fgm_i], 'n': fgm_i}))""",
    "pg_is_in_recovery": "() AS false",
    "pg_stat_get_numscans": "(rel) AS NULL::BIGINT",
    # quotes and backslashes doubled, and E'...' when there is a backslash (quote.c)
    "quote_literal": r"""(value) AS (CASE WHEN value IS NULL THEN NULL
        WHEN contains(value::VARCHAR, '\') THEN 'E''' || replace(replace(value::VARCHAR, '\', '\\'),
            '''', '''''') || ''''
        ELSE '''' || replace(value::VARCHAR, '''', '''''') || '''' END)""",
    "pg_collation_is_visible": "(coll) AS true",
    "pg_opclass_is_visible": "(opc) AS true",
    "pg_conversion_is_visible": "(conv) AS true",
    "pg_operator_is_visible": "(op) AS true",
    "pg_relation_is_publishable": "(rel) AS false",
    "pg_postmaster_start_time": "() AS (SELECT min(fgm_a.backend_start) FROM fg_activity fgm_a)",
    "pg_relation_size": """(rel) AS (SELECT fgm_z.main FROM fg_x.storage_of fgm_z WHERE fgm_z.oid = rel),
        (rel, fork) AS (CASE WHEN fork IS NULL THEN NULL::BIGINT
            WHEN fork IN ('main', 'fsm', 'vm', 'init') THEN (SELECT CASE fork
                WHEN 'main' THEN fgm_z.main WHEN 'fsm' THEN fgm_z.fsm WHEN 'vm' THEN fgm_z.vm
                ELSE fgm_z.init END FROM fg_x.storage_of fgm_z WHERE fgm_z.oid = rel)
            ELSE error('invalid fork name') END)""",
    "pg_table_size": "(rel) AS (SELECT fgm_z.table_size FROM fg_x.storage_of fgm_z WHERE fgm_z.oid = rel)",
    "pg_indexes_size": "(rel) AS (SELECT fgm_z.indexes FROM fg_x.storage_of fgm_z WHERE fgm_z.oid = rel)",
    "pg_total_relation_size": "(rel) AS (SELECT fgm_z.total FROM fg_x.storage_of fgm_z WHERE fgm_z.oid = rel)",
    "pg_database_size": "(db) AS NULL::BIGINT",
    "pg_size_pretty": _size_pretty(),
    "pg_tablespace_location": "(spc) AS ''",
    "pg_encoding_max_length": "(enc) AS 4",
    "txid_current": "() AS NULL::BIGINT",
    "pg_my_temp_schema": "() AS 0::UINTEGER",
    "pg_is_other_temp_schema": "(ns) AS false",
}

# Which relations are visible on the session's search_path (pg_table_is_visible): the
# first schema of the path holding a relation of that name wins. A view over the
# per-query fg_session, so it is computed once per query, not once per row.
VISIBILITY_VIEW = """CREATE VIEW fg_x.visibility AS
    SELECT fgm_c.oid, coalesce(list_position(fgm_s.effective, fgm_n.nspname) = min(
        list_position(fgm_s.effective, fgm_n.nspname)) OVER (PARTITION BY fgm_c.relname),
        false) AS visible
    FROM fg_pg.pg_class fgm_c JOIN fg_pg.pg_namespace fgm_n ON fgm_c.relnamespace = fgm_n.oid,
    fg_session fgm_s"""

# fg_storage's rows (by schema and relation name) under the OIDs of this catalog.
STORAGE_VIEW = """CREATE VIEW fg_x.storage_of AS
    SELECT fgm_c.oid, fgm_s.* EXCLUDE (nspname, relname) FROM fg_storage fgm_s
    JOIN fg_pg.pg_namespace fgm_n ON fgm_n.nspname = fgm_s.nspname
    JOIN fg_pg.pg_class fgm_c ON fgm_c.relnamespace = fgm_n.oid AND fgm_c.relname = fgm_s.relname"""


def create_macro_sql(name: str, body: str, reserved: list[str]) -> str:
    if name == "quote_ident":
        words = ", ".join("'" + w.replace("'", "''") + "'" for w in reserved)
        body = body.replace("{reserved}", f"[{words}]")
    return f"CREATE MACRO fg_fn.{name}{body}"
