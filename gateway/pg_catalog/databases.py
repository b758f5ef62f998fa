"""Which database names a client may connect to.

The gateway serves one database (`[server] database`). PostgreSQL's own tools connect to a
maintenance database when they are not told which one: `psql -l` to `postgres`, createdb
and pg_dumpall to `postgres` and then `template1`. PostgreSQL users expect those commands to
work against anything that speaks the protocol (PgBouncer users map the names with an alias
entry), so both names are accepted as aliases of the gateway's database. The session then
runs in the gateway's database under its own name: current_database() and pg_database say
the one database there is, and `psql -l` lists it.
"""

from __future__ import annotations

MAINTENANCE_DATABASES = ("postgres", "template1")


def served_database(requested: str, gateway_database: str) -> str | None:
    """The database a session asking for `requested` runs in, or None when there is no
    such database."""
    if requested == gateway_database or requested in MAINTENANCE_DATABASES:
        return gateway_database
    return None


__all__ = ["MAINTENANCE_DATABASES", "served_database"]
