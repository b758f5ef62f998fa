"""The PostgreSQL role a session's reads run under, per source (`[[users]] source_roles`),
and the settings they run with.

The gateway's pooled connections log in as the source's configured user; a user mapped
to a role on a source has the planner's reads from that pool run under `SET LOCAL ROLE`
inside the read's own transaction, so the role ends with the transaction and a pooled
connection never carries one user's role to the next. A context variable, as the
session's time zone (`connectors.time_zone`): asyncio copies it into the session's
tasks, and the Source contract stays as it is. The session's settings a source acts on
(work_mem, enable_*, a custom `app.tenant` ...: `gateway.state.settings.is_forwarded`)
are `SET LOCAL` in the same transaction, for the same reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar

from sqlglot import exp

from connectors.postgres.source_settings import Forwarded, setting_name_sql, setting_value_sql

SOURCE_ROLES: ContextVar[Mapping[str, str]] = ContextVar("fedgate_source_roles", default={})
SOURCE_SETTINGS: ContextVar[Forwarded] = ContextVar("fedgate_source_settings", default=())


def set_role_sql(role: str, *, local: bool) -> str:
    """`SET [LOCAL] ROLE "role"`, the name quoted as an identifier."""
    quoted = exp.to_identifier(role, quoted=True).sql(dialect="postgres")
    return f"SET {'LOCAL ' if local else ''}ROLE {quoted}"


def settings_sql(settings: Forwarded, *, local: bool) -> str | None:
    """`SET LOCAL` (`local`; else a session's `SET`) of each (name, value), quoted by
    sqlglot, in one text; None for none."""
    if not settings:
        return None
    verb = "SET LOCAL" if local else "SET"
    return "; ".join(f"{verb} {setting_name_sql(name)} = {setting_value_sql(value)}"
                     for name, value in settings)


def session_as_now(source: str) -> list[str]:
    """For a connection of the source's that is not the gateway's own (Spark's JDBC
    reads): the session's role there and its forwarded settings, as session-wide SETs."""
    role = SOURCE_ROLES.get().get(source)
    settings = settings_sql(SOURCE_SETTINGS.get(), local=False)
    return [*([set_role_sql(role, local=False)] if role is not None else []),
            *([settings] if settings is not None else [])]
