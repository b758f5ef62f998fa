"""pg_catalog views whose rows depend on the session: pg_roles, pg_user, pg_authid,
pg_settings, pg_stat_activity and pg_prepared_statements, defined over the per-query
tables of `gateway.pg_catalog.session_state`.

Each view lists an expression per column of PostgreSQL's definition (tables.PG_CATALOG_VIEWS)
and casts it to that column's type, so the view's shape cannot drift from the spec.
"""

from __future__ import annotations

from gateway.pg_catalog.model import DATABASE_OID, OWNER_OID
from gateway.pg_catalog.tables import DUCKDB_TYPES, PG_CATALOG_VIEWS, columns

_ROLE = {
    "rolname": 's."user"', "rolsuper": "false", "rolinherit": "true", "rolcreaterole": "false",
    "rolcreatedb": "false", "rolcanlogin": "true", "rolreplication": "false",
    "rolconnlimit": "-1", "rolpassword": "'********'", "rolvaliduntil": "NULL",
    "rolbypassrls": "false", "rolconfig": "NULL", "oid": str(OWNER_OID),
}

_EXPRESSIONS: dict[str, tuple[dict[str, str], str]] = {
    "pg_roles": (_ROLE, "fg_session s"),
    "pg_authid": ({**_ROLE, "rolpassword": "NULL"}, "fg_session s"),
    "pg_user": ({
        "usename": 's."user"', "usesysid": str(OWNER_OID), "usecreatedb": "false",
        "usesuper": "false", "userepl": "false", "usebypassrls": "false",
        "passwd": "'********'", "valuntil": "NULL", "useconfig": "NULL"}, "fg_session s"),
    "pg_settings": ({
        "name": "name", "setting": "setting", "unit": "NULL", "category": "'Ungrouped'",
        "short_desc": "''", "extra_desc": "NULL", "context": "'user'", "vartype": "'string'",
        "source": "'session'", "min_val": "NULL", "max_val": "NULL", "enumvals": "NULL",
        "boot_val": "setting", "reset_val": "setting", "sourcefile": "NULL",
        "sourceline": "NULL", "pending_restart": "false"}, "fg_settings"),
    "pg_stat_activity": ({
        "datid": str(DATABASE_OID), "datname": "(SELECT database FROM fg_session)", "pid": "pid",
        "leader_pid": "NULL", "usesysid": str(OWNER_OID), "usename": "usename",
        "application_name": "application_name", "client_addr": "client_addr",
        "client_hostname": "NULL", "client_port": "client_port",
        "backend_start": "backend_start", "xact_start": "xact_start",
        "query_start": "query_start", "state_change": "query_start",
        "wait_event_type": "NULL", "wait_event": "NULL", "state": "state",
        "backend_xid": "NULL", "backend_xmin": "NULL", "query_id": "NULL", "query": "query",
        "backend_type": "'client backend'"}, "fg_activity"),
    # The session's named statements; how often each was planned is not counted here.
    "pg_prepared_statements": ({
        "name": "name", "statement": "statement", "prepare_time": "prepare_time",
        "parameter_types": "parameter_types", "from_sql": "from_sql", "generic_plans": "0",
        "custom_plans": "0"}, "fg_prepared"),
}


def create_view_sql(schema: str, name: str) -> str:
    expressions, source = _EXPRESSIONS[name]
    select = ", ".join(f'CAST({expressions[col]} AS {DUCKDB_TYPES[pgtype]}) AS "{col}"'
                       for col, pgtype in columns(PG_CATALOG_VIEWS[name]))
    return f'CREATE VIEW {schema}."{name}" AS SELECT {select} FROM {source}'
