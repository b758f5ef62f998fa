"""A move: the engine's rows poured into a source's table (docs/design.md §5, "Moves").

The session plans the move's query like any other (`gateway.session.moves`) and hands
its batch stream here with the target's bulk writer (`connectors.bulk`). Each batch is
converted to the target columns' types by PostgreSQL's assignment casts
(`gateway.executor.assignment`) and written; the writer's one transaction makes the move
all or nothing, whatever stops it (a constraint, a conversion, a source failing mid-read,
a cancel, statement_timeout, the client leaving).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
from sqlglot import exp

from connectors import writes
from connectors.bulk import FILE_KINDS, BulkWriter, TargetColumn
from gateway.executor.assignment import convert
from pgwire.errors import PgError

# How each kind of target takes rows, for EXPLAIN.
BULK_PATHS = {"postgres": "COPY ... FROM STDIN (FORMAT binary)",
              "mysql": "multi-row INSERT statements", "sqlite": "batched INSERTs",
              "parquet": "a Parquet file written under a temporary name, then linked into place",
              "csv": "a CSV file (as COPY ... (FORMAT csv, HEADER) writes it) written under a "
                     "temporary name, then linked into place",
              "delta": "one Delta commit (a new version) of the rows, spilled to a local "
                       "Parquet file first",
              "iceberg": "one Iceberg commit of the rows, spilled to a local Parquet file "
                         "first"}


async def open_target(source: Any, kind: str, name: str, table: str,
                      held: writes.Writer | None = None, creates: bool = False,
                      final: Callable[[exp.Table, list[str]], exp.Expression] | None = None,
                      spill_dir: str | None = None) -> BulkWriter:
    """The bulk writer of `table` in `source` (of `kind`, named `name`); `held`: the
    connection an explicit block holds there, which the move joins. `final`: the client's
    INSERT with RETURNING or ON CONFLICT into SQLite or MySQL, given the stage its rows go
    through (`connectors.staged_write`). `spill_dir`: where a Delta target's rows wait for
    their commit (`[engine] temp_directory`; None: the system's temporary folder)."""
    if kind == "delta":
        from connectors.delta.bulk_write import DeltaBulkWriter
        return await DeltaBulkWriter.open(source, table, creates, spill_dir)
    if kind == "iceberg":
        from connectors.iceberg.bulk_write import IcebergBulkWriter
        return await IcebergBulkWriter.open(source, table, creates, spill_dir)
    if kind in FILE_KINDS:
        from connectors.files.bulk_write import file_writer
        return await file_writer(source, table, creates)
    if kind == "postgres":
        from connectors.postgres.bulk_write import PostgresBulkWriter
        return await PostgresBulkWriter.open(source, table)
    writes.check_writable(kind, name)
    writer = held if held is not None else await writes.open_writer(source, kind, name)
    if final is not None:
        from connectors.staged_write import StagedBulkWriter
        return StagedBulkWriter(writer, name, table, final, own=held is None)
    if kind == "mysql":
        from connectors.mysql.bulk_write import MySQLBulkWriter
        return MySQLBulkWriter(writer, table, own=held is None)  # type: ignore[arg-type]
    from connectors.sqlite.bulk_write import SqliteBulkWriter
    return SqliteBulkWriter(writer, table, own=held is None)  # type: ignore[arg-type]


def written_columns(table: str, columns: list[TargetColumn], named: Sequence[str] | None,
                    width: int) -> list[TargetColumn]:
    """The target columns the query's `width` outputs go to, as PostgreSQL's INSERT pairs
    them: the named ones, else the table's first `width`."""
    by_name = {c.name: c for c in columns}
    if named is None:
        if width > len(columns):
            raise PgError("42601", "INSERT has more expressions than target columns")
        return columns[:width]
    chosen = []
    for name in named:
        if name not in by_name:
            raise PgError("42703", f'column "{name}" of relation "{table}" does not exist')
        chosen.append(by_name[name])
    if width > len(chosen):
        raise PgError("42601", "INSERT has more expressions than target columns")
    if width < len(chosen):
        raise PgError("42601", "INSERT has more target columns than expressions")
    return chosen


async def pour(stream: Any, target: BulkWriter, table: str, columns: list[TargetColumn],
               unknown: frozenset[int], timezone: str) -> int:
    """Write every batch of `stream` into `target`; returns the rows written."""
    count = 0
    names = [c.name for c in columns]
    async for batch in stream:
        arrays = []
        for i, column in enumerate(columns):
            array = convert(batch.column(i), column, unknown=i in unknown, timezone=timezone)
            if column.not_null and array.null_count:
                raise PgError("23502", f'null value in column "{column.name}" of relation '
                              f'"{table}" violates not-null constraint')
            arrays.append(array)
        count += await target.write(pa.RecordBatch.from_arrays(arrays, names=names))
    return count
