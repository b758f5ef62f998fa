"""Distinct counts of a MySQL/MariaDB database's columns, from its indexes' cardinality.

`information_schema.STATISTICS` gives, per index column, the storage engine's estimate of
the distinct values of the index's prefix up to it (`CARDINALITY`, kept by ANALYZE TABLE
and InnoDB's persistent statistics). For the first column of an index that is the column's
own distinct count, which planner.selectivity turns into an equality's selectivity. Read
once per catalog read, for every table of the database.
"""

from __future__ import annotations

import logging
from typing import Any

import asyncmy

from connectors.base import ColumnStats
from connectors.refused_stats import RefusedStats

_refused = RefusedStats(logging.getLogger("fedgate.mysql"), "index statistics")

_CARDINALITY = (
    "SELECT TABLE_NAME, COLUMN_NAME, MAX(CARDINALITY) FROM information_schema.STATISTICS "
    "WHERE TABLE_SCHEMA = %s AND SEQ_IN_INDEX = 1 AND CARDINALITY IS NOT NULL "
    "AND COLUMN_NAME IS NOT NULL GROUP BY TABLE_NAME, COLUMN_NAME")


async def distinct_counts(cur: Any, database: str) -> dict[str, tuple[tuple[str, ColumnStats], ...]]:
    """Per table, the distinct count of each column that leads an index."""
    try:
        await cur.execute(_CARDINALITY, (database,))
        rows = await cur.fetchall()
    except asyncmy.errors.Error as exc:
        # Without them the tables are still served (connectors.refused_stats).
        _refused.say(f"database {database}", exc)
        return {}
    found: dict[str, list[tuple[str, ColumnStats]]] = {}
    for table, column, cardinality in rows:
        if cardinality:
            found.setdefault(table, []).append((column, ColumnStats(n_distinct=float(cardinality))))
    return {table: tuple(columns) for table, columns in found.items()}
