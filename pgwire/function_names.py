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

from pathlib import Path

from pgwire.errors import UNDEFINED_FUNCTION, PgError

NAMES_FILE = Path(__file__).with_name("pg_functions.txt")


def _read_names(path: Path) -> frozenset[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(line for line in lines if line and not line.startswith("#"))


POSTGRES_FUNCTIONS: frozenset[str] = _read_names(NAMES_FILE)

# gram.y's func_expr_common_subexpr and the keyword expressions of c_expr, where they
# have no pg_proc row of the same name.
SYNTAX_CALLS: frozenset[str] = frozenset({
    "all", "any", "array", "between", "case", "cast", "coalesce", "collation", "current_catalog",
    "current_date", "current_role", "current_schema", "current_time", "current_timestamp",
    "current_user", "exists", "extract", "greatest", "grouping", "in", "interval", "least",
    "localtime", "localtimestamp", "normalize", "nullif", "overlay", "position", "row",
    "session_user", "some", "substring", "treat", "trim", "user", "values", "xmlconcat",
    "xmlelement", "xmlexists", "xmlforest", "xmlparse", "xmlpi", "xmlroot", "xmlserialize",
})

NO_MATCH_HINT = ("No function matches the given name and argument types. "
                 "You might need to add explicit type casts.")


def undefined_function(name: str, argument_types: list[str] | tuple[str, ...],
                       position: int | None = None) -> PgError:
    """PostgreSQL's error for a call of a function it does not have (ParseFuncOrColumn)."""
    return PgError(UNDEFINED_FUNCTION,
                   f"function {name}({', '.join(argument_types)}) does not exist",
                   hint=NO_MATCH_HINT, position=position)
