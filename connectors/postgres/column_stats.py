"""Column statistics of a PostgreSQL source's tables, from `pg_stats` (what ANALYZE keeps).

Read with the catalog (`discover_tables`), one query for every table of the schema, and
refreshed with it: the planner's selectivities (planner.selectivity) come from them.

    attname  null_frac  n_distinct  most_common_vals  most_common_freqs  histogram_bounds
    status   0          3           {F,O,P}           {0.49,0.48,0.03}   NULL
    amount   0.01       -0.8        NULL              NULL               {0,12,40,...,990}

A negative n_distinct is a fraction of the rows (-0.8: 80% of them are distinct), so it is
multiplied out by `reltuples`. The anyarray columns are read as text arrays, each value in
its type's text output, which planner.selectivity compares with a literal.
"""

from __future__ import annotations

import logging

import asyncpg

from connectors.base import ColumnStats
from connectors.refused_stats import RefusedStats

_refused = RefusedStats(logging.getLogger("fedgate.postgres"), "column statistics")

# A partitioned table's statistics are those of its whole hierarchy (inherited); any other
# relation's, its own rows'. pg_stats shows only columns the login may read.
_STATS = """
SELECT c.oid, s.attname, s.null_frac::float8 AS null_frac, s.n_distinct::float8 AS n_distinct,
       c.reltuples::float8 AS reltuples,
       s.most_common_vals::text::text[] AS mcv, s.most_common_freqs::float8[] AS mcf,
       s.histogram_bounds::text::text[] AS bounds
FROM pg_stats s JOIN pg_namespace n ON n.nspname = s.schemaname
JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename
WHERE s.schemaname = $1 AND s.inherited = (c.relkind = 'p')
"""


async def column_stats(conn: asyncpg.Connection, schema: str) -> dict[int, tuple[tuple[str, ColumnStats], ...]]:
    """Per relation oid of `schema`, its columns' statistics (none for a relation never
    analyzed, or whose columns the login may not read)."""
    try:
        rows = await conn.fetch(_STATS, schema)
    except asyncpg.PostgresError as exc:
        # A server without pg_stats as PostgreSQL has it (a look-alike) or without the
        # right to read it: the tables are still served (connectors.refused_stats).
        _refused.say(f"schema {schema}", exc)
        return {}
    found: dict[int, list[tuple[str, ColumnStats]]] = {}
    for r in rows:
        found.setdefault(r["oid"], []).append((r["attname"], _stats(r)))
    return {oid: tuple(columns) for oid, columns in found.items()}


def _stats(r: asyncpg.Record) -> ColumnStats:
    distinct = r["n_distinct"]
    if distinct is not None and distinct < 0:
        distinct = -distinct * max(r["reltuples"], 0.0) or None
    common = tuple(zip(r["mcv"], r["mcf"])) if r["mcv"] is not None and r["mcf"] is not None else ()
    return ColumnStats(null_frac=r["null_frac"], n_distinct=distinct or None,
                       most_common=tuple((v, f) for v, f in common if v is not None),
                       histogram=tuple(b for b in r["bounds"] or () if b is not None))
