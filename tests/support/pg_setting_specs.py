"""Write gateway/state/pg_settings.tsv: every setting PostgreSQL 15 has, as SET checks it.

PostgreSQL's settings are PostgreSQL's to state, so the table is read from a real server
(a throwaway cluster, `tests.support.postgres`): each row of `pg_settings` with its type,
its context (who may set it, and when), its unit, range, allowed values and built-in default. Run from the
repository root, once per PostgreSQL major version:

    python -m tests.support.pg_setting_specs
"""

from __future__ import annotations

from pathlib import Path

from tests.support.postgres import read_fresh_server

TARGET = Path(__file__).resolve().parents[2] / "gateway" / "state" / "pg_settings.tsv"
QUERY = ("SELECT name, vartype, context, coalesce(unit, ''), coalesce(min_val, ''), "
         "coalesce(max_val, ''), coalesce(array_to_string(enumvals, ','), ''), coalesce(boot_val, '') "
         "FROM pg_catalog.pg_settings ORDER BY 1")


def main() -> None:
    version, rows = read_fresh_server(QUERY)
    lines = ["\t".join(row) for row in rows]
    TARGET.write_text(f"# The settings of PostgreSQL {version} (pg_settings): name, type, context, "
                      "unit, min, max, allowed values, built-in default.\n"
                      "# Written by tests/support/pg_setting_specs.py; do not edit by hand.\n"
                      + "\n".join(lines) + "\n")
    print(f"{len(lines)} settings of PostgreSQL {version} written to {TARGET}")


if __name__ == "__main__":
    main()
