"""What one user may do: the sources the user sees, writes, other sessions, source roles.

`[[users]]` in the configuration says it (gateway.config.UserConfig); `access_for` turns
it into the `Access` a session keeps. A source outside the user's `sources` is invisible
to that user, as a PostgreSQL schema without USAGE is: the planner and the relay refuse a
statement naming it with 42501 (`permission denied for schema <name>`, whether or not the
table exists), search_path skips it, and the emulated catalog the session reads is built
from the visible sources only (gateway.pg_catalog.source).

Without `[[users]]` the gateway trusts every connection (loopback only): each session
sees every source and may see and signal every session, as a local superuser would.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gateway.config import Config
from pgwire.errors import INSUFFICIENT_PRIVILEGE, READ_ONLY_SQL_TRANSACTION, PgError


@dataclass(frozen=True)
class Access:
    user: str
    # The user sources this user sees; None: every source.
    visible: frozenset[str] | None
    read_only: bool = False
    admin: bool = False
    source_roles: Mapping[str, str] = field(default_factory=dict)
    pool_modes: Mapping[str, str] = field(default_factory=dict)  # (gateway.relay.pool)

    def sees(self, source: str) -> bool:
        return self.visible is None or source in self.visible

    def hidden(self, sources: Iterable[str]) -> frozenset[str]:
        """Which of the user sources `sources` this user may not see."""
        return frozenset(name for name in sources if not self.sees(name))


def access_for(config: Config, user: str) -> Access:
    """The access of the user named `user`. A user the configuration does not list (only
    reachable when there are no [[users]]: trust) sees everything; with [[users]]
    configured, authentication has already refused unknown names, and a name that is
    somehow not there sees nothing rather than everything."""
    if not config.users:
        return Access(user, None, admin=True)
    found = config.user(user)
    if found is None:
        return Access(user, frozenset())
    visible = None if found.all_sources else frozenset(found.sources)
    return Access(user, visible, read_only=found.read_only, admin=found.admin,
                  source_roles=dict(found.source_roles), pool_modes=dict(found.pool_modes))


def schema_denied(schema: str) -> PgError:
    """PostgreSQL's error for a schema the role has no USAGE on (aclcheck_error)."""
    return PgError(INSUFFICIENT_PRIVILEGE, f"permission denied for schema {schema}")


# Statements PostgreSQL names by two words in its errors (their command tags).
_TWO_WORD = frozenset({"create", "drop", "alter", "comment", "refresh", "copy"})
_WORD = re.compile(r'"(?:[^"]|"")*"|[A-Za-z_]+')
_MODIFYING = re.compile(r"\b(INSERT|UPDATE|DELETE|MERGE)\b", re.I)
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_COMMENTS = re.compile(r"/\*.*?\*/|--[^\n]*", re.S)


def command_name(sql: str) -> str:
    """The statement's command as PostgreSQL's read-only error names it: INSERT, UPDATE,
    CREATE TABLE, COPY FROM ... (its command tag)."""
    text = _COMMENTS.sub(" ", sql)
    words = [w.upper() for w in _WORD.findall(text)[:5]]
    if not words:
        return ""
    if words[0] == "COPY":
        return "COPY FROM"
    if words[0] == "WITH":  # WITH ... INSERT: named by its data-modifying statement
        found = _MODIFYING.search(_QUOTED.sub(" ", text))
        return found.group(1).upper() if found else "WITH"
    if words[0].lower() in _TWO_WORD and len(words) > 1:
        rest = [w for w in words[1:] if w not in ("OR", "REPLACE", "UNIQUE", "TEMP", "TEMPORARY")]
        return f"{words[0]} {rest[0]}" if rest else words[0]
    return words[0]


def read_only_refused(sql: str) -> PgError:
    """PostgreSQL's error for a write in a read-only transaction (PreventCommandIfReadOnly)."""
    return PgError(READ_ONLY_SQL_TRANSACTION,
                   f"cannot execute {command_name(sql)} in a read-only transaction")


__all__ = ["Access", "access_for", "command_name", "read_only_refused", "schema_denied"]
