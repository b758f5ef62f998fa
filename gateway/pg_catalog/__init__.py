"""The emulated PostgreSQL system catalog (pg_catalog, information_schema) of the gateway.

`open_catalog(database, sessions)` makes the source; `CatalogSource.refresh(version, tables)`
fills it from the federated catalog. See `source.py` for how it answers queries and
`build.py` for what it holds.
"""

from gateway.pg_catalog.session_state import bind_session, note_idle, note_query
from gateway.pg_catalog.source import CatalogSource, SchemaAlias

__all__ = ["CatalogSource", "SchemaAlias", "bind_session", "note_idle", "note_query"]
