"""The names of the functions PostgreSQL has: data only, so that every module of pgwire
(errors.py among them) may read them. `pgwire.function_names` explains and re-exports them.
"""

from __future__ import annotations

from pathlib import Path

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
