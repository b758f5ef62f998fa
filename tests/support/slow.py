"""Statements that stay busy until they are cancelled, for the tests that cancel them.

A cancel test needs work that is slow by construction. A count that an optimizer can
answer from statistics or cardinalities leaves nothing to cancel: DuckDB 2 proves an
impossible join condition empty from column statistics, and answers count(*) over a
cross join from the inputs' row counts, in milliseconds.

- `counting(table)`: a recursive CTE that counts up to a billion, one row per step. Each
  step needs the row of the one before, so no optimizer can skip steps: DuckDB takes some
  2 microseconds a step (over half an hour in all, its table of steps growing by a few MB
  a second) and sees an interrupt between steps. The counter starts at the row count of
  `table`, so the statement reads `table`, and the planner ships it whole to the source
  that holds `table` when that source runs recursive CTEs itself (DuckDB, Parquet and CSV
  files: DuckDB again). Without a table the gateway's engine runs it.
- `cross_join_count(table)`: count(*) over ten copies of a small table. PostgreSQL,
  MariaDB and SQLite walk every combination (7 rows: 282 million), seconds of work that
  the source runs itself and that shows in its activity list; not for DuckDB (see above).
- `PG_SLOW_VIEW` and `MARIADB_SLOW_VIEW`: a view `slow` with one column `n`, a count over
  billions of generated rows that the server counts one by one (minutes of work).
"""

from __future__ import annotations

import os
from pathlib import Path

COUNT_TO = 1_000_000_000


def counting(table: str | None = None) -> str:
    """Count up to a billion, a row per step; from the row count of `table` if given."""
    seed = f"SELECT count(*) FROM {table}" if table else "SELECT 1"
    return (f"WITH RECURSIVE r(n) AS ({seed} UNION ALL SELECT n + 1 FROM r "
            f"WHERE n < {COUNT_TO}) SELECT count(*) FROM r")


def cross_join_count(table: str) -> str:
    """count(*) over ten copies of `table`: the statement ends in "... {table} AS j"."""
    copies = ", ".join(f"{table} AS {alias}" for alias in "abcdefghij")
    return f"SELECT count(*) FROM {copies}"


# generate_series in the select list streams; a count over it takes PostgreSQL minutes.
PG_SLOW_VIEW = ("CREATE VIEW slow AS SELECT count(*) AS n "
                "FROM (SELECT generate_series(1, 3000000000) AS x) g")
# MariaDB's SEQUENCE engine: the WHERE keeps it from answering count(*) at once.
MARIADB_SLOW_VIEW = ("CREATE VIEW {schema}.slow AS SELECT count(*) AS n "
                     "FROM {schema}.seq_1_to_4000000000 WHERE seq % 7 <> 3")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
