"""The functions a client may call through the gateway, by name (planner.function_check).

PostgreSQL's own, plus those the emulated catalog answers itself: its macros
(`pg_catalog.functions.MACROS`, among them helpers such as `_pg_expandarray` that clients'
catalog queries call) and the SQL functions it lists in pg_proc.
"""

from __future__ import annotations

from gateway.pg_catalog.functions import MACROS
from gateway.pg_catalog.procs import SQL_FUNCTIONS
from pgwire.function_names import POSTGRES_FUNCTIONS

CALLABLE_FUNCTIONS: frozenset[str] = POSTGRES_FUNCTIONS | frozenset(MACROS) | frozenset(SQL_FUNCTIONS)
