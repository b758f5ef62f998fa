"""Spark writing a move's rows from its executors into a PostgreSQL stage (docs/design.md
§5, "Moves").

A big move on a cluster should not funnel its rows through the driver and the gateway:
each executor writes its partitions itself, by Spark's JDBC writer, which sends each
partition in one transaction of its own (batched INSERTs, `reWriteBatchedInserts`). A
partition's transaction is not the move's, so the rows go into a stage the gateway made
for this one statement (`StageInto`); the gateway then moves the stage into the target
in one transaction (`connectors.postgres.bulk_write`), and the target sees all or nothing.

Credentials travel only in the JDBC options, never in the URL, EXPLAIN or an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connectors.engines.spark_jdbc import DRIVERS, jdbc_target, labelled_url

ROWS_PER_BATCH = 10_000  # rows per executeBatch: few round trips, bounded executor memory
# The stage's columns are typed as the query's results (PostgreSQL's types): text sent for
# any of them (a jsonb, an enum's label) is read by the column's input function, as an
# unknown literal is. UTC, as every connection of the gateway's.
WRITE_PARAMETERS = "reWriteBatchedInserts=true&stringtype=unspecified"
WRITE_SESSION = "SET TIME ZONE 'UTC'"


@dataclass(frozen=True)
class StageInto:
    """Where a Spark statement's rows go instead of back to the gateway."""

    source: str  # the target's source: its DSN is the engine's to know
    table: str  # the stage, schema-qualified and quoted, in PostgreSQL's spelling
    columns: tuple[str, ...]  # the stage's columns, in the query's output order


def write_stage(frame: Any, into: StageInto, dsn: str, partitions: int,
                label: str | None = None) -> None:
    """Append `frame`'s rows to `into`'s stage from the executors (blocks until done).
    Its connections carry `label` in their application_name, as the reads' do."""
    url, credentials = jdbc_target("postgres", dsn)
    if label is not None:
        url = labelled_url(url, label)
    frame.toDF(*into.columns).write.format("jdbc").options(
        url=f"{url}&{WRITE_PARAMETERS}", dbtable=into.table, driver=DRIVERS["postgres"],
        batchsize=str(ROWS_PER_BATCH), numPartitions=str(max(1, partitions)),
        sessionInitStatement=WRITE_SESSION, **credentials).mode("append").save()


def stage_refusal(dsn: str | None) -> str | None:
    """Why the executors cannot reach a PostgreSQL source of `dsn`; None when they can."""
    if dsn is None:
        return "the source has no dsn"
    try:
        jdbc_target("postgres", dsn)
    except ValueError as exc:
        return str(exc)
    return None
