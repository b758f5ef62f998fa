"""The functions PostgreSQL has, by name, and its words for calling one it lacks.

`POSTGRES_FUNCTIONS` is every `proname` of a PostgreSQL 15 `pg_proc` (aggregates and
window functions included), read from a real server by tests/support/pg_function_names.py
into pg_functions.txt beside this module. The engines behind the gateway (DuckDB, Spark)
have functions of their own, some of which read files or reach the network
(`read_text`, `read_csv`, `glob`, `reflect` ...); a client speaks PostgreSQL, so a call is
accepted only under a name PostgreSQL knows.

`SYNTAX_CALLS` are the words PostgreSQL's grammar itself turns into expressions that look
like calls (`coalesce(a, b)`, `row(1, 2)`, `CURRENT_DATE`, `EXTRACT(... FROM ...)`): they
have no `pg_proc` row but are PostgreSQL all the same.
"""

from __future__ import annotations

from pgwire.errors import UNDEFINED_FUNCTION, PgError
from pgwire.postgres_functions import NAMES_FILE, POSTGRES_FUNCTIONS, SYNTAX_CALLS

__all__ = ["NAMES_FILE", "NO_MATCH_HINT", "POSTGRES_FUNCTIONS", "SYNTAX_CALLS", "undefined_function"]

NO_MATCH_HINT = ("No function matches the given name and argument types. "
                 "You might need to add explicit type casts.")


def undefined_function(name: str, argument_types: list[str] | tuple[str, ...],
                       position: int | None = None) -> PgError:
    """PostgreSQL's error for a call of a function it does not have (ParseFuncOrColumn)."""
    return PgError(UNDEFINED_FUNCTION,
                   f"function {name}({', '.join(argument_types)}) does not exist",
                   hint=NO_MATCH_HINT, position=position)
