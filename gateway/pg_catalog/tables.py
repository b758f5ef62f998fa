"""Column lists of the emulated pg_catalog relations, as in PostgreSQL 15 (names, order, types).

Clients read catalog answers by position, so every relation keeps PostgreSQL's exact
column order. Types are PostgreSQL's, mapped to DuckDB storage by `DUCKDB_TYPES`: OID-like
columns (oid, regproc, regclass, regtype) are stored as UINTEGER, which the catalog source
presents as `oid` (26) on the wire; int2vector/oidvector as lists, so `unnest(indkey)` and
`indkey[0]`-style access work after the dialect's rewrites.
"""

from __future__ import annotations

DUCKDB_TYPES = {
    "oid": "UINTEGER", "regproc": "UINTEGER", "regclass": "UINTEGER", "regtype": "UINTEGER",
    "name": "VARCHAR", "char": "pg_char", "text": "VARCHAR", "bool": "BOOLEAN",
    "int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "float4": "REAL",
    "float8": "DOUBLE", "xid": "BIGINT", "pg_node_tree": "VARCHAR", "inet": "VARCHAR",
    "anyarray": "VARCHAR", "timestamptz": "TIMESTAMPTZ", "int2vector": "SMALLINT[]",
    "oidvector": "UINTEGER[]", "int2[]": "SMALLINT[]", "oid[]": "UINTEGER[]",
    "text[]": "VARCHAR[]", "char[]": "pg_char[]", "aclitem[]": "VARCHAR[]",
    "name[]": "VARCHAR[]", "float4[]": "REAL[]",
}

# PostgreSQL's one-byte "char" (relkind, typtype, prokind ...) as a DuckDB enum of every
# ASCII character, declared in byte order so it sorts as PostgreSQL sorts it, and '' for
# the zero byte (attgenerated). An enum stays itself through joins, CTEs and unions, so a
# catalog answer still knows such a column is "char" (build.oid_schema): asyncpg reads
# pg_type.typtype as "char" to tell a composite type from a scalar one.
CHAR_ENUM_SQL = "CREATE TYPE pg_char AS ENUM ('', {})".format(
    ", ".join("'" + chr(i).replace("'", "''") + "'" for i in range(32, 127)))

# relation -> "column type, column type, ..." (PostgreSQL 15 order).
PG_CATALOG: dict[str, str] = {
    "pg_namespace": "oid oid, nspname name, nspowner oid, nspacl aclitem[]",
    "pg_class": (
        "oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, "
        "relam oid, relfilenode oid, reltablespace oid, relpages int4, reltuples float4, "
        "relallvisible int4, reltoastrelid oid, relhasindex bool, relisshared bool, "
        "relpersistence char, relkind char, relnatts int2, relchecks int2, relhasrules bool, "
        "relhastriggers bool, relhassubclass bool, relrowsecurity bool, "
        "relforcerowsecurity bool, relispopulated bool, relreplident char, relispartition bool, "
        "relrewrite oid, relfrozenxid xid, relminmxid xid, relacl aclitem[], reloptions text[], "
        "relpartbound pg_node_tree"),
    "pg_attribute": (
        "attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, "
        "attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attalign char, "
        "attstorage char, attcompression char, attnotnull bool, atthasdef bool, "
        "atthasmissing bool, attidentity char, attgenerated char, attisdropped bool, "
        "attislocal bool, attinhcount int4, attcollation oid, attacl aclitem[], "
        "attoptions text[], attfdwoptions text[], attmissingval anyarray"),
    "pg_type": (
        "oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, "
        "typtype char, typcategory char, typispreferred bool, typisdefined bool, typdelim char, "
        "typrelid oid, typsubscript regproc, typelem oid, typarray oid, typinput regproc, "
        "typoutput regproc, typreceive regproc, typsend regproc, typmodin regproc, "
        "typmodout regproc, typanalyze regproc, typalign char, typstorage char, "
        "typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, typcollation oid, "
        "typdefaultbin pg_node_tree, typdefault text, typacl aclitem[]"),
    "pg_proc": (
        "oid oid, proname name, pronamespace oid, proowner oid, prolang oid, procost float4, "
        "prorows float4, provariadic oid, prosupport regproc, prokind char, prosecdef bool, "
        "proleakproof bool, proisstrict bool, proretset bool, provolatile char, "
        "proparallel char, pronargs int2, pronargdefaults int2, prorettype oid, "
        "proargtypes oidvector, proallargtypes oid[], proargmodes char[], proargnames text[], "
        "proargdefaults pg_node_tree, protrftypes oid[], prosrc text, probin text, "
        "prosqlbody pg_node_tree, proconfig text[], proacl aclitem[]"),
    "pg_database": (
        "oid oid, datname name, datdba oid, encoding int4, datlocprovider char, "
        "datistemplate bool, datallowconn bool, datconnlimit int4, datfrozenxid xid, "
        "datminmxid xid, dattablespace oid, datcollate text, datctype text, daticulocale text, "
        "datcollversion text, datacl aclitem[]"),
    "pg_am": "oid oid, amname name, amhandler regproc, amtype char",
    "pg_index": (
        "indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool, "
        "indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, indimmediate bool, "
        "indisclustered bool, indisvalid bool, indcheckxmin bool, indisready bool, "
        "indislive bool, indisreplident bool, indkey int2vector, indcollation oidvector, "
        "indclass oidvector, indoption int2vector, indexprs pg_node_tree, indpred pg_node_tree"),
    "pg_constraint": (
        "oid oid, conname name, connamespace oid, contype char, condeferrable bool, "
        "condeferred bool, convalidated bool, conrelid oid, contypid oid, conindid oid, "
        "conparentid oid, confrelid oid, confupdtype char, confdeltype char, "
        "confmatchtype char, conislocal bool, coninhcount int4, connoinherit bool, "
        "conkey int2[], confkey int2[], conpfeqop oid[], conppeqop oid[], conffeqop oid[], "
        "confdelsetcols int2[], conexclop oid[], conbin pg_node_tree"),
    "pg_attrdef": "oid oid, adrelid oid, adnum int2, adbin pg_node_tree",
    "pg_description": "objoid oid, classoid oid, objsubid int4, description text",
    "pg_shdescription": "objoid oid, classoid oid, description text",
    "pg_collation": (
        "oid oid, collname name, collnamespace oid, collowner oid, collprovider char, "
        "collisdeterministic bool, collencoding int4, collcollate text, collctype text, "
        "colliculocale text, collversion text"),
    "pg_inherits": "inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool",
    "pg_policy": (
        "oid oid, polname name, polrelid oid, polcmd char, polpermissive bool, polroles oid[], "
        "polqual pg_node_tree, polwithcheck pg_node_tree"),
    "pg_statistic_ext": (
        "oid oid, stxrelid oid, stxname name, stxnamespace oid, stxowner oid, "
        "stxstattarget int4, stxkeys int2vector, stxkind char[], stxexprs pg_node_tree"),
    "pg_publication": (
        "oid oid, pubname name, pubowner oid, puballtables bool, pubinsert bool, "
        "pubupdate bool, pubdelete bool, pubtruncate bool, pubviaroot bool"),
    "pg_publication_rel": "oid oid, prpubid oid, prrelid oid, prqual pg_node_tree, prattrs int2vector",
    "pg_publication_namespace": "oid oid, pnpubid oid, pnnspid oid",
    "pg_range": (
        "rngtypid oid, rngsubtype oid, rngmultitypid oid, rngcollation oid, rngsubopc oid, "
        "rngcanonical regproc, rngsubdiff regproc"),
    "pg_enum": "oid oid, enumtypid oid, enumsortorder float4, enumlabel name",
    "pg_tablespace": "oid oid, spcname name, spcowner oid, spcacl aclitem[], spcoptions text[]",
    "pg_trigger": (
        "oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, tgtype int2, "
        "tgenabled char, tgisinternal bool, tgconstrrelid oid, tgconstrindid oid, "
        "tgconstraint oid, tgdeferrable bool, tginitdeferred bool, tgnargs int2, "
        "tgattr int2vector, tgargs text, tgqual pg_node_tree, tgoldtable name, tgnewtable name"),
    "pg_rewrite": (
        "oid oid, rulename name, ev_class oid, ev_type char, ev_enabled char, is_instead bool, "
        "ev_qual pg_node_tree, ev_action pg_node_tree"),
    "pg_language": (
        "oid oid, lanname name, lanowner oid, lanispl bool, lanpltrusted bool, "
        "lanplcallfoid oid, laninline oid, lanvalidator oid, lanacl aclitem[]"),
    "pg_extension": (
        "oid oid, extname name, extowner oid, extnamespace oid, extrelocatable bool, "
        "extversion text, extconfig oid[], extcondition text[]"),
    "pg_depend": (
        "classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid, "
        "refobjsubid int4, deptype char"),
    "pg_foreign_table": "ftrelid oid, ftserver oid, ftoptions text[]",
    "pg_partitioned_table": (
        "partrelid oid, partstrat char, partnatts int2, partdefid oid, partattrs int2vector, "
        "partclass oidvector, partcollation oidvector, partexprs pg_node_tree"),
    "pg_sequence": (
        "seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8, seqmax int8, "
        "seqmin int8, seqcache int8, seqcycle bool"),
    "pg_event_trigger": (
        "oid oid, evtname name, evtevent name, evtowner oid, evtfoid oid, evtenabled char, "
        "evttags text[]"),
    "pg_auth_members": "roleid oid, member oid, grantor oid, admin_option bool",
    "pg_operator": (
        "oid oid, oprname name, oprnamespace oid, oprowner oid, oprkind char, oprcanmerge bool, "
        "oprcanhash bool, oprleft oid, oprright oid, oprresult oid, oprcom oid, oprnegate oid, "
        "oprcode regproc, oprrest regproc, oprjoin regproc"),
    "pg_cast": "oid oid, castsource oid, casttarget oid, castfunc oid, castcontext char, castmethod char",
    "pg_opclass": (
        "oid oid, opcmethod oid, opcname name, opcnamespace oid, opcowner oid, opcfamily oid, "
        "opcintype oid, opcdefault bool, opckeytype oid"),
    "pg_foreign_server": (
        "oid oid, srvname name, srvowner oid, srvfdw oid, srvtype text, srvversion text, "
        "srvacl aclitem[], srvoptions text[]"),
    "pg_foreign_data_wrapper": (
        "oid oid, fdwname name, fdwowner oid, fdwhandler oid, fdwvalidator oid, "
        "fdwacl aclitem[], fdwoptions text[]"),
    "pg_stat_user_tables": (
        "relid oid, schemaname name, relname name, seq_scan int8, seq_tup_read int8, "
        "idx_scan int8, idx_tup_fetch int8, n_tup_ins int8, n_tup_upd int8, n_tup_del int8, "
        "n_tup_hot_upd int8, n_live_tup int8, n_dead_tup int8, n_mod_since_analyze int8, "
        "n_ins_since_vacuum int8, last_vacuum timestamptz, last_autovacuum timestamptz, "
        "last_analyze timestamptz, last_autoanalyze timestamptz, vacuum_count int8, "
        "autovacuum_count int8, analyze_count int8, autoanalyze_count int8"),
}

# Views of pg_catalog whose rows depend on the session (built over registered tables).
PG_CATALOG_VIEWS: dict[str, str] = {
    "pg_roles": (
        "rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, "
        "rolcanlogin bool, rolreplication bool, rolconnlimit int4, rolpassword text, "
        "rolvaliduntil timestamptz, rolbypassrls bool, rolconfig text[], oid oid"),
    "pg_user": (
        "usename name, usesysid oid, usecreatedb bool, usesuper bool, userepl bool, "
        "usebypassrls bool, passwd text, valuntil timestamptz, useconfig text[]"),
    "pg_authid": (
        "oid oid, rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, "
        "rolcreatedb bool, rolcanlogin bool, rolreplication bool, rolbypassrls bool, "
        "rolconnlimit int4, rolpassword text, rolvaliduntil timestamptz"),
    "pg_settings": (
        "name text, setting text, unit text, category text, short_desc text, extra_desc text, "
        "context text, vartype text, source text, min_val text, max_val text, enumvals text[], "
        "boot_val text, reset_val text, sourcefile text, sourceline int4, pending_restart bool"),
    "pg_stat_activity": (
        "datid oid, datname name, pid int4, leader_pid int4, usesysid oid, usename name, "
        "application_name text, client_addr inet, client_hostname text, client_port int4, "
        "backend_start timestamptz, xact_start timestamptz, query_start timestamptz, "
        "state_change timestamptz, wait_event_type text, wait_event text, state text, "
        "backend_xid xid, backend_xmin xid, query_id int8, query text, backend_type text"),
    # parameter_types is regtype[] in PostgreSQL: here text[] of the same names, so its
    # text form ({integer,text}) is PostgreSQL's.
    "pg_prepared_statements": (
        "name text, statement text, prepare_time timestamptz, parameter_types text[], "
        "from_sql bool, generic_plans int8, custom_plans int8"),
}


def columns(spec: str) -> list[tuple[str, str]]:
    """'a oid, b name' -> [('a', 'oid'), ('b', 'name')] (PostgreSQL type names)."""
    out = []
    for item in spec.split(","):
        name, pgtype = item.split(None, 1)
        out.append((name.strip(), pgtype.strip()))
    return out


def declared_types() -> dict[str, dict[str, str]]:
    """The pg_catalog columns of PostgreSQL's `name` type, by relation: stored as text
    (VARCHAR), which is what the engine reads, and described as `name` in answers
    (planner.catalog.SourceEntry.declared_types)."""
    found: dict[str, dict[str, str]] = {}
    for relation, spec in (*PG_CATALOG.items(), *PG_CATALOG_VIEWS.items()):
        names = {col: pgtype for col, pgtype in columns(spec) if pgtype == "name"}
        if names:
            found[relation] = names
    return found


def create_table_sql(schema: str, name: str, spec: str) -> str:
    cols = ", ".join(f'"{col}" {DUCKDB_TYPES[pgtype]}' for col, pgtype in columns(spec))
    return f'CREATE TABLE {schema}."{name}" ({cols})'
