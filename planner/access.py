"""Schemas the session's user may not see: a statement naming one is refused.

A source outside a user's `[[users]] sources` is, to that user, a schema without USAGE
privilege: PostgreSQL refuses any reference to it with 42501 `permission denied for
schema <name>` before it looks for the table, so the answer is the same whether the table
exists or not. The gateway hands the hidden names in (`PlanSettings.hidden_schemas`, part
of the plan-cache key) and leaves them off the search path; this check covers the names a
statement qualifies with one of them.

    SELECT * FROM wh.orders          -- user limited to ["pg"]
    ERROR:  permission denied for schema wh   (42501)
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from pgwire.errors import INSUFFICIENT_PRIVILEGE, PgError


def schema_of(table: exp.Table) -> str | None:
    """The schema a table reference names, folded as PostgreSQL folds identifiers."""
    node = table.args.get("db")
    if not isinstance(node, exp.Identifier) or not node.this:
        return None
    return node.this if node.quoted else node.this.lower()


def check_schemas(tables: Iterable[exp.Table], hidden: frozenset[str]) -> None:
    """Refuse the first table reference qualified with a hidden schema."""
    if not hidden:
        return
    for table in tables:
        schema = schema_of(table)
        if schema is not None and schema in hidden:
            raise PgError(INSUFFICIENT_PRIVILEGE, f"permission denied for schema {schema}")


# Functions that act on the server a source runs on rather than compute a value: signal or
# end its backends, read or list its files, export to or import from its file system,
# change its configuration, manage WAL, backups and replication, open connections
# elsewhere, or run SQL text given as a string (which would read whatever the
# statement's names do not show). PostgreSQL's documentation: "System Administration
# Functions", "Generic File Access Functions", "Server-Side Functions" of large objects,
# "Mapping Tables to XML", dblink. Refused by name as the statement calls them.
ADMIN_FUNCTIONS = frozenset({
    # server signaling
    "pg_cancel_backend", "pg_terminate_backend", "pg_reload_conf", "pg_rotate_logfile",
    "pg_log_backend_memory_contexts",
    # configuration
    "set_config",
    # backup and recovery control
    "pg_create_restore_point", "pg_switch_wal", "pg_backup_start", "pg_backup_stop",
    "pg_start_backup", "pg_stop_backup", "pg_wal_replay_pause", "pg_wal_replay_resume",
    "pg_promote", "pg_export_snapshot",
    # replication
    "pg_create_physical_replication_slot", "pg_create_logical_replication_slot",
    "pg_drop_replication_slot", "pg_copy_physical_replication_slot",
    "pg_copy_logical_replication_slot", "pg_logical_slot_get_changes",
    "pg_logical_slot_peek_changes", "pg_logical_slot_get_binary_changes",
    "pg_logical_slot_peek_binary_changes", "pg_replication_slot_advance",
    "pg_replication_origin_create", "pg_replication_origin_drop",
    "pg_replication_origin_session_setup", "pg_replication_origin_session_reset",
    "pg_replication_origin_xact_setup", "pg_replication_origin_xact_reset",
    "pg_replication_origin_advance", "pg_logical_emit_message",
    # index maintenance
    "brin_summarize_new_values", "brin_summarize_range", "brin_desummarize_range",
    "gin_clean_pending_list",
    # generic file access
    "pg_ls_dir", "pg_ls_logdir", "pg_ls_waldir", "pg_ls_logicalmapdir", "pg_ls_logicalsnapdir",
    "pg_ls_replslotdir", "pg_ls_archive_statusdir", "pg_ls_tmpdir", "pg_read_file",
    "pg_read_binary_file", "pg_stat_file",
    # server-side large objects reading and writing the server's files
    "lo_import", "lo_export",
    # SQL given as text, run with the caller's rights (tables the statement does not name)
    "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "table_to_xml",
    "table_to_xmlschema", "table_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema",
    "schema_to_xml", "schema_to_xmlschema", "schema_to_xml_and_xmlschema", "database_to_xml",
    "database_to_xmlschema", "database_to_xml_and_xmlschema",
})
# Every function of the dblink extension opens or uses a connection to another server.
ADMIN_PREFIXES = ("dblink",)


def function_names(tree: exp.Expression) -> Iterable[str]:
    """The names of the functions `tree` calls, lower case as PostgreSQL folds them."""
    for node in tree.find_all(exp.Func):
        if isinstance(node, exp.Anonymous):
            yield node.name.lower()
        else:
            yield node.sql_name().lower()


def admin_calls(tree: exp.Expression) -> tuple[str, ...]:
    """The server-administration functions `tree` calls, in order."""
    return tuple(name for name in function_names(tree) if admin_call_named(name))


def function_denied(name: str) -> PgError:
    """PostgreSQL's error for a function the role may not execute (aclcheck_error)."""
    return PgError(INSUFFICIENT_PRIVILEGE, f"permission denied for function {name}")


# The emulated catalog answers set_config() for the session (it reaches no source).
SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema"})


def check_functions(tree: exp.Expression, sources: Iterable[str]) -> None:
    """A federated read runs on the gateway's own connections to its sources: no
    server-administration function goes there, whoever asks. `sources`: the sources the
    statement reads."""
    called = admin_calls(tree)
    if not called:
        return
    if set(called) == {"set_config"} and all(source in SYSTEM_SCHEMAS for source in sources):
        return
    raise function_denied(called[0])


def admin_call_named(name: str) -> bool:
    return name in ADMIN_FUNCTIONS or name.startswith(ADMIN_PREFIXES)
