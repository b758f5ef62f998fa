"""Distinct counts of a SQLite database's columns, from `sqlite_stat1` (what ANALYZE keeps).

Each analyzed index has a row `(tbl, idx, stat)`; `stat` is the table's rows, then, for
each prefix of the index's columns, the average rows sharing one value of it:

    tbl     idx            stat            orders has 20000 rows; one status value is
    orders  orders_status  "20000 6667"    shared by 6667 of them: 3 distinct statuses

So the index's first column has rows / that many distinct values (planner.selectivity
turns it into an equality's selectivity). Read once per catalog read, for every table.
"""

from __future__ import annotations

import logging
import sqlite3

from sqlglot import exp

from connectors.base import ColumnStats
from connectors.refused_stats import RefusedStats

_refused = RefusedStats(logging.getLogger("fedgate.sqlite"), "sqlite_stat1")


def distinct_counts(con: sqlite3.Connection, source: str) -> dict[str, tuple[tuple[str, ColumnStats], ...]]:
    """Per table, the distinct count of each first column of an analyzed index; nothing
    when the database was never analyzed (no sqlite_stat1: every filter on its tables then
    keeps the planner's textbook third)."""
    if con.execute("SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat1'").fetchone() is None:
        return {}  # never analyzed
    found: dict[str, dict[str, ColumnStats]] = {}
    try:
        rows = con.execute("SELECT tbl, idx, stat FROM sqlite_stat1 WHERE idx IS NOT NULL").fetchall()
        for table, index, stat in rows:
            numbers = str(stat or "").split()
            if len(numbers) < 2 or not all(n.isdigit() for n in numbers[:2]) or int(numbers[1]) == 0:
                continue  # an index of an empty table, or a stat SQLite spelled otherwise
            quoted = exp.to_identifier(index, quoted=True).sql("sqlite")
            columns = con.execute(f"PRAGMA index_info({quoted})").fetchall()  # (seqno, cid, name)
            first = next((c[2] for c in columns if c[0] == 0 and c[2] is not None), None)
            if first is not None:
                found.setdefault(table, {})[first] = ColumnStats(n_distinct=int(numbers[0]) / int(numbers[1]))
    except sqlite3.Error as exc:
        # The tables are still served (connectors.refused_stats).
        _refused.say(f"source {source}", exc)
        return {}
    return {table: tuple(columns.items()) for table, columns in found.items()}
