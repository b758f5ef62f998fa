"""Write pgwire/pg_functions.txt: the name of every function PostgreSQL 15 has.

PostgreSQL's vocabulary is PostgreSQL's to state, so the list is read from a real server
(a throwaway cluster, `tests.support.postgres`): every `proname` of `pg_proc`, which holds
aggregates and window functions too, and the `information_schema` helpers clients call.
Run from the repository root, once per PostgreSQL major version:

    python -m tests.support.pg_function_names
"""

from __future__ import annotations

from pathlib import Path

from tests.support.postgres import read_fresh_server

TARGET = Path(__file__).resolve().parents[2] / "pgwire" / "pg_functions.txt"
QUERY = "SELECT DISTINCT proname::text FROM pg_catalog.pg_proc ORDER BY 1"


def main() -> None:
    version, rows = read_fresh_server(QUERY)
    names = [row[0] for row in rows]
    header = (f"# Every function name in pg_proc of PostgreSQL {version}, one a line.\n"
              "# Written by tests/support/pg_function_names.py; do not edit by hand.\n")
    TARGET.write_text(header + "".join(f"{name}\n" for name in names))
    print(f"{len(names)} names from PostgreSQL {version} -> {TARGET}")


if __name__ == "__main__":
    main()
