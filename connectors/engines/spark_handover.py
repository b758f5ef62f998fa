"""Hand a fragment's Arrow rows to a local Spark as a DataFrame, cheaply.

`SparkSession.createDataFrame(pyarrow.Table)` makes a `LocalRelation`: every row is
decoded into the driver's heap and held *inside the logical plan*. That is fine for a few
thousand rows and ruinous for hundreds of thousands: the optimizer walks, copies and
compares the plan (with its rows) in every rule batch, and each task of the scan carries
its slice of the rows serialized. At TPC-H SF 1 an 800,000-row partsupp fragment cost
seconds to create, seconds more to optimize, and made the query itself several times
slower than the same rows read from a file.

So when Spark runs in this process's machine (`local[...]`), a handed-over table of at
least `FILE_ROWS` rows is written as Parquet, one file per core, into a per-query scratch
directory and read back with `spark.read` under an explicit schema (no inference): Spark
then scans it with its vectorized reader on every core, and the plan holds only a path. The directory
is removed when the query ends, so nothing outlives the query or could go stale. On a
cluster the gateway's disk is not the executors' disk, so there every table goes through
`createDataFrame`, as do tables with types this path does not map faithfully. Such a
LocalRelation lives in the driver's heap, copied by the optimizer's rules: one of more
than an eighth of `spark.driver.memory` in Arrow bytes is refused with 53200 before Spark
sees it (10M rows of four columns, about 300 MB, ran a 1 GB driver out of memory, and the
statement then waited on the dead Arrow server thread, never answering).

The types are the ones `createDataFrame` would give: timestamps become Spark's
`TIMESTAMP` (instants; naive values are read as UTC, the session time zone, exactly as
`createDataFrame` localizes them), truncated to microseconds.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pgwire.errors import OUT_OF_MEMORY, PgError

# Below this many rows a LocalRelation is cheaper than writing and listing a file, and
# gives the optimizer exact sizes (a small side is broadcast).
FILE_ROWS = 20_000
# Row groups of this many rows let Spark split one file across its cores.
ROW_GROUP_ROWS = 100_000

# A LocalRelation may take this share of the driver's memory (in the Arrow bytes handed).
PLAN_SHARE_OF_DRIVER = 8
_MEMORY_UNITS = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}

log = logging.getLogger("fedgate.spark")


def jvm_memory_bytes(text: str) -> int:
    """A Spark memory setting's bytes ("1g", "512m", "4096k"; bare: MiB, as the driver's)."""
    value = text.strip().lower().removesuffix("b")
    if value[-1:] in _MEMORY_UNITS:
        return int(float(value[:-1]) * _MEMORY_UNITS[value[-1]])
    return int(float(value) * 1024**2)

_FILE_TYPES = (pa.types.is_boolean, pa.types.is_integer, pa.types.is_floating,
               pa.types.is_decimal, pa.types.is_string, pa.types.is_binary, pa.types.is_date32,
               pa.types.is_timestamp)


def _signed_or_not_integer(t: pa.DataType) -> bool:
    return not pa.types.is_integer(t) or pa.types.is_signed_integer(t)


def file_friendly(table: pa.Table) -> bool:
    """Whether every column maps to the same Spark type through Parquet as through
    createDataFrame (no unsigned integers, nested, time, interval or null columns)."""
    return all(any(test(t) for test in _FILE_TYPES) and _signed_or_not_integer(t)
               and not pa.types.is_float16(t) for t in table.schema.types)


def _for_file(table: pa.Table) -> pa.Table:
    """Timestamps as UTC instants in microseconds, as createDataFrame stores them."""
    columns, fields = [], []
    for field, column in zip(table.schema, table.columns):
        if pa.types.is_timestamp(field.type):
            column = column.cast(pa.timestamp("us", tz="UTC"), safe=False)
        columns.append(column)
        fields.append(pa.field(field.name, column.type, field.nullable))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


class Handover:
    """The scratch directory of one query's handed-over tables; `close()` removes it."""

    def __init__(self, local: bool, parts: int = 2, file_rows: int = FILE_ROWS,
                 plan_bytes: int | None = None) -> None:
        self.local = local
        self.parts = max(1, parts)
        self.file_rows = file_rows
        self.plan_bytes = plan_bytes  # the most a LocalRelation may take; None: no bound
        self._dir: Path | None = None
        self._count = 0

    def dataframe(self, session: Any, table: pa.Table, name: str = "the input") -> Any:
        """`table` (fragment `name`) as a DataFrame of `session`: a Parquet scan or a
        LocalRelation."""
        from pyspark.sql.pandas.types import from_arrow_schema  # a heavy import

        if table.num_rows == 0:
            # Spark Connect cannot infer a schema from zero rows (describing a statement
            # hands over only empty tables): give it the one createDataFrame would infer.
            return session.createDataFrame([], schema=from_arrow_schema(table.schema,
                                                                        prefer_timestamp_ntz=False))
        if not (self.local and table.num_rows >= self.file_rows and file_friendly(table)):
            if self.plan_bytes is not None and table.nbytes > self.plan_bytes:
                raise PgError(
                    OUT_OF_MEMORY,
                    f"fragment {name} ({table.num_rows:,} rows, {table.nbytes / 1024**2:,.0f} MB) is too "
                    f"large to hand to Spark: its rows would sit in the driver's plan, which takes "
                    f"at most {self.plan_bytes / 1024**2:,.0f} MB (1/{PLAN_SHARE_OF_DRIVER} of "
                    "spark.driver.memory)",
                    hint="Let Spark read the source itself ([engine] spark_reads_sources), narrow "
                         "the fragment, or run the statement on DuckDB (SET fedgate.engine = 'duckdb').")
            return session.createDataFrame(table)

        table = _for_file(table)
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="fedgate-spark-"))
        self._count += 1
        folder = self._dir / f"t{self._count}"
        folder.mkdir()
        # One file per core: Spark packs files smaller than its open cost (4 MB) into
        # one split, so a single file of a few MB would be scanned by one core only.
        # The files are written at once, one thread each (Arrow's writer releases the GIL):
        # Spark waits for the last of them.
        step = -(-table.num_rows // self.parts)
        slices = [(table.slice(start, step), folder / f"part{part}.parquet")
                  for part, start in enumerate(range(0, table.num_rows, step))]
        with ThreadPoolExecutor(len(slices)) as pool:
            list(pool.map(lambda job: pq.write_table(job[0], job[1], row_group_size=ROW_GROUP_ROWS,
                                                     compression="none"), slices))
        schema = from_arrow_schema(table.schema, prefer_timestamp_ntz=False)
        return session.read.schema(schema).parquet(str(folder))

    def close(self) -> None:
        if self._dir is not None:
            try:
                shutil.rmtree(self._dir)
            except OSError as exc:  # the answer is already complete; the disk is not
                log.warning("could not remove Spark scratch directory %s: %s", self._dir, exc)
            self._dir = None


def sparkable(table: pa.Table) -> pa.Table:
    """Arrow types Spark cannot take (uuid/json extensions, views) as plain ones."""
    columns, fields = [], []
    for field, column in zip(table.schema, table.columns):
        t = field.type
        if isinstance(t, pa.BaseExtensionType):
            column = column.cast(t.storage_type) if t.extension_name != "arrow.uuid" else \
                pa.chunked_array([pa.array([None if v is None else str(v) for v in column.to_pylist()],
                                           pa.string())])
            if t.extension_name == "arrow.bool8":
                column = column.cast(pa.bool_())
        elif pa.types.is_string_view(t) or pa.types.is_large_string(t):
            column = column.cast(pa.string())
        columns.append(column)
        fields.append(pa.field(field.name, column.type))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))
