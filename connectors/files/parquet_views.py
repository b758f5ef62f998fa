"""Single Parquet files read by DuckDB's own Parquet reader, held to the catalog's types.

DuckDB scanning a pyarrow dataset pays for the Arrow C stream between the two: at SF 1,
TPC-H Q22's read of customer (three columns, filtered) took 50-90 ms that way and 8-10 ms
through DuckDB's native `read_parquet`, which prunes columns and row groups itself.
So a table that is one Parquet file becomes a DuckDB view over `read_parquet`, on two
conditions:

- at discovery, the view's column types must equal, in DuckDB's own type names, the
  types DuckDB gives the pyarrow dataset whose Arrow schema is the catalog's. Equal
  DuckDB types over the same file mean equal answers whichever reader runs; a table
  where any column differs (millisecond or INT96 timestamps, for two) keeps the
  pyarrow path.
- at query time, the file must still be the one described. DuckDB re-reads a Parquet
  footer every time it binds a view, so a file rewritten with other types would silently
  answer in the new types (DuckDB does not check a view's types). The file's size, mtime
  and inode are compared on every query that names the table (one `stat`); when they
  changed, the new footer's types are compared with the catalog's, and a difference is a
  DATATYPE_MISMATCH error naming the file, the column and both types. (A file replaced
  between that check and DuckDB's read is caught by the next query, not this one.)

DuckDB prunes Parquet row groups by min/max statistics, which pyarrow writes without
NaN, so a filter or join on a FLOAT/DOUBLE column could skip a row group holding NaN
(PostgreSQL's NaN equals NaN and sorts above every number). Those columns are read
through an expression DuckDB does not check against statistics (`_column`); a table
with floats inside lists or structs keeps the pyarrow path.

Folders (several files, Hive partitions) stay on the pyarrow path: their partition
columns are typed by pyarrow's inference, which DuckDB's does not follow.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
from sqlglot import exp

from connectors.duckdb.runner import DUCKDB_CONFIG, DuckDBRunner, restrict_access
from pgwire.errors import DATATYPE_MISMATCH, PgError, from_exception

UNDEFINED_FILE = "58P01"  # PostgreSQL's "could not open file"
_PROBE = "fedgate_catalog_probe"  # the name a dataset is registered under to be described

_FLOATS = re.compile(r"\b(?:FLOAT|DOUBLE)\b")
Stamp = tuple[int, int, int]  # size, mtime in ns, inode
ColumnTypes = dict[str, str]  # column name -> DuckDB type name, in column order


@dataclass
class NativeTable:
    """One table read through its `read_parquet` view."""

    name: str
    path: Path
    types: ColumnTypes  # what the catalog promised, in DuckDB's words
    stamp: Stamp  # the file as last checked against `types`


def _stamp(path: Path) -> Stamp:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, st.st_ino


def _reader_sql(path: Path) -> str:
    # The path is configuration, not client input; it is still quoted as a literal.
    # Hive detection is off: a file under `year=2024/` must not gain a column here.
    return (f"read_parquet({exp.Literal.string(str(path)).sql('duckdb')}, "
            "hive_partitioning = false)")


def _describe(runner: DuckDBRunner, relation: str) -> ColumnTypes:
    table = runner.query_sync(f"DESCRIBE SELECT * FROM {relation}")
    return dict(zip(table["column_name"].to_pylist(), table["column_type"].to_pylist()))


def _dataset_types(probe: duckdb.DuckDBPyConnection, dataset: ds.Dataset) -> ColumnTypes:
    probe.register(_PROBE, dataset)
    try:
        table = probe.sql(f"DESCRIBE SELECT * FROM {_PROBE}").to_arrow_table()
    finally:
        probe.unregister(_PROBE)
    return dict(zip(table["column_name"].to_pylist(), table["column_type"].to_pylist()))


def single_file(dataset: ds.Dataset) -> Path | None:
    """The file of a dataset of exactly one Parquet file. (Partition columns taken from its
    folder names make the types differ below, which keeps such a table on pyarrow.)"""
    if not isinstance(dataset, ds.FileSystemDataset) or len(dataset.files) != 1 or \
            dataset.format.default_extname != "parquet":
        return None
    return Path(dataset.files[0])


def native_candidates(datasets: dict[str, ds.Dataset]) -> list[str]:
    """The files `create_views` may read natively: the only paths its runner may open."""
    return [str(path) for dataset in datasets.values()
            if (path := single_file(dataset)) is not None]


def create_views(runner: DuckDBRunner, datasets: dict[str, ds.Dataset]) -> dict[str, NativeTable]:
    """Views over `read_parquet` for the single-file tables whose types match the catalog."""
    native: dict[str, NativeTable] = {}
    # The types DuckDB gives an Arrow schema are found on a connection of their own: the
    # probe's registered name never meets the runner's queries.
    probe = duckdb.connect(config=DUCKDB_CONFIG)
    restrict_access(probe)  # it only describes registered datasets
    try:
        for name, dataset in datasets.items():
            path = single_file(dataset)
            if path is not None:
                table = _native(runner, probe, name, dataset, path)
                if table is not None:
                    native[name] = table
    finally:
        probe.close()
    return native


def _native(runner: DuckDBRunner, probe: duckdb.DuckDBPyConnection, name: str,
            dataset: ds.Dataset, path: Path) -> NativeTable | None:
    stamp = _stamp(path)
    try:
        promised = _dataset_types(probe, dataset)
        if _describe(runner, _reader_sql(path)) != promised:
            return None  # some column reads differently: the pyarrow path keeps this table
    except duckdb.Error:
        return None  # DuckDB's reader refuses the file: pyarrow's path reports what it finds
    if any(_FLOATS.search(t) for t in promised.values() if t not in ("FLOAT", "DOUBLE")):
        return None  # floats inside lists or structs: their filters cannot be shielded
    view = exp.to_identifier(name, quoted=True).sql("duckdb")
    columns = ", ".join(_column(c, t) for c, t in promised.items())
    runner.query_sync(f"CREATE OR REPLACE VIEW {view} AS SELECT {columns} FROM {_reader_sql(path)}")
    if _describe(runner, view) != promised:  # the view itself, as the queries will see it
        runner.query_sync(f"DROP VIEW {view}")
        return None
    return NativeTable(name, path, promised, stamp)


def _column(name: str, duckdb_type: str) -> str:
    """The view's expression for one column. A FLOAT/DOUBLE column is wrapped in a CASE
    that gives the same value: DuckDB prunes Parquet row groups by min/max statistics
    that leave NaN out (pyarrow writes them so), and so loses NaN rows under `f = 'NaN'`,
    `f <> 1.5` or a join on f. A filter on an expression is not checked against them."""
    column = exp.to_identifier(name, quoted=True).sql("duckdb")
    if duckdb_type not in ("FLOAT", "DOUBLE"):
        return column
    return f"CASE WHEN {column} IS NULL THEN NULL ELSE {column} END AS {column}"


def mismatch(table: NativeTable, found: ColumnTypes, source: str) -> PgError | None:
    """The error for a file whose footer no longer gives the catalog's types, else None.
    Extra columns do not matter (the view names its columns); a missing one does."""
    for column, promised in table.types.items():
        now = found.get(column)
        if now == promised:
            continue
        where = f'file "{table.path}" of table {source}.{table.name}'
        change = f'no longer has column "{column}"' if now is None else \
            f'now holds column "{column}" as {now}'
        return PgError(DATATYPE_MISMATCH,
                       f"{where} {change}; the catalog read it as {promised}",
                       hint="Restart the gateway to read the file's new schema.")
    return None


async def check(runner: DuckDBRunner, tables: list[NativeTable], source: str) -> None:
    """Raise if a file of `tables` is gone or changed its column types since discovery."""
    for table in tables:
        try:
            stamp = _stamp(table.path)
        except FileNotFoundError as exc:
            raise PgError(UNDEFINED_FILE, f'could not open file "{table.path}" of table '
                                          f"{source}.{table.name}: it no longer exists") from exc
        if stamp == table.stamp:
            continue
        try:
            found = await asyncio.to_thread(_describe, runner, _reader_sql(table.path))
        except duckdb.Error as exc:  # a half-written or corrupt file: DuckDB's words
            raise from_exception(exc) from exc
        error = mismatch(table, found, source)
        if error is not None:
            raise error
        table.stamp = stamp  # rewritten with the same types: nothing to re-check next time
