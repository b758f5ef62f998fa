"""The embedded demo: the eight TPC-H tables in a cached DuckDB file, generated on first run.

`ensure_demo(path, scale)` returns `path` once it holds the tables at that scale factor.
The data comes from the `tpchgen-cli` executable (a Python dependency, installed as a
console script next to the interpreter) as Parquet, one table at a time, and is loaded
into DuckDB with explicit column types so the schema does not depend on the generator's
Parquet details (it writes strings as Arrow `string_view`).

The file is built under a temporary name and renamed into place, so an interrupted run
never leaves a half-written database, and an exclusive lock on `<path>.lock` makes a
second process wait for the first instead of generating the same data twice.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import duckdb

# No network here: without this DuckDB may stall trying to download extensions.
DUCKDB_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}

# Kept out of schema main, so the demo source does not show it as a table.
INFO_SCHEMA = "fedgate"
INFO_TABLE = f"{INFO_SCHEMA}.demo_info"

_KEY, _INT, _MONEY, _DATE, _TEXT = "BIGINT", "INTEGER", "DECIMAL(15,2)", "DATE", "VARCHAR"

# Standard TPC-H columns, in order, with the types the gateway exposes.
TPCH_SCHEMA: dict[str, tuple[tuple[str, str], ...]] = {
    "nation": (("n_nationkey", _KEY), ("n_name", _TEXT), ("n_regionkey", _KEY),
               ("n_comment", _TEXT)),
    "region": (("r_regionkey", _KEY), ("r_name", _TEXT), ("r_comment", _TEXT)),
    "part": (("p_partkey", _KEY), ("p_name", _TEXT), ("p_mfgr", _TEXT), ("p_brand", _TEXT),
             ("p_type", _TEXT), ("p_size", _INT), ("p_container", _TEXT),
             ("p_retailprice", _MONEY), ("p_comment", _TEXT)),
    "supplier": (("s_suppkey", _KEY), ("s_name", _TEXT), ("s_address", _TEXT),
                 ("s_nationkey", _KEY), ("s_phone", _TEXT), ("s_acctbal", _MONEY),
                 ("s_comment", _TEXT)),
    "partsupp": (("ps_partkey", _KEY), ("ps_suppkey", _KEY), ("ps_availqty", _INT),
                 ("ps_supplycost", _MONEY), ("ps_comment", _TEXT)),
    "customer": (("c_custkey", _KEY), ("c_name", _TEXT), ("c_address", _TEXT),
                 ("c_nationkey", _KEY), ("c_phone", _TEXT), ("c_acctbal", _MONEY),
                 ("c_mktsegment", _TEXT), ("c_comment", _TEXT)),
    "orders": (("o_orderkey", _KEY), ("o_custkey", _KEY), ("o_orderstatus", _TEXT),
               ("o_totalprice", _MONEY), ("o_orderdate", _DATE), ("o_orderpriority", _TEXT),
               ("o_clerk", _TEXT), ("o_shippriority", _INT), ("o_comment", _TEXT)),
    "lineitem": (("l_orderkey", _KEY), ("l_partkey", _KEY), ("l_suppkey", _KEY),
                 ("l_linenumber", _INT), ("l_quantity", _MONEY), ("l_extendedprice", _MONEY),
                 ("l_discount", _MONEY), ("l_tax", _MONEY), ("l_returnflag", _TEXT),
                 ("l_linestatus", _TEXT), ("l_shipdate", _DATE), ("l_commitdate", _DATE),
                 ("l_receiptdate", _DATE), ("l_shipinstruct", _TEXT), ("l_shipmode", _TEXT),
                 ("l_comment", _TEXT)),
}

# Stored sorted by key so DuckDB's per-row-group min/max (zone maps) skip almost
# everything on a key lookup; lineitem by order key also keeps an order's lines together.
SORT_KEYS = {"orders": "o_orderkey", "lineitem": "l_orderkey"}


def find_tpchgen() -> str:
    """The tpchgen-cli executable: the one installed with this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / "tpchgen-cli"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise RuntimeError("tpchgen-cli not found (next to the Python interpreter or on PATH); "
                           "it is installed by `pip install tpchgen-cli`")
    return found


def ensure_demo(path: Path, scale: float, *, progress: bool = True) -> Path:
    """Make sure the DuckDB file at `path` holds the TPC-H tables at `scale`; return `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    with open(lock_path, "a+b") as lock:
        # Held across check + generate: a second process waits here, then finds the file ready.
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not _is_current(path, scale):
                _generate(path, scale, progress=progress)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return path


def _is_current(path: Path, scale: float) -> bool:
    """True when `path` is a DuckDB file with all eight tables at the recorded `scale`."""
    if not path.exists():
        return False
    try:
        con = duckdb.connect(str(path), read_only=True, config=DUCKDB_CONFIG)
    except duckdb.Error as exc:
        # Another process holding the file for writing is not a reason to rebuild it
        # under that process's feet; anything else (a corrupt or foreign file) is.
        if "lock" in str(exc).lower():
            raise RuntimeError(f"demo database {path} is locked by another process: {exc}") from exc
        return False
    try:
        tables = {f"{schema}.{name}" if schema != "main" else name for schema, name in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables()").fetchall()}
        if INFO_TABLE not in tables or not set(TPCH_SCHEMA) <= tables:
            return False
        row = con.execute(f"SELECT scale FROM {INFO_TABLE} LIMIT 1").fetchone()
        return row is not None and abs(row[0] - scale) < 1e-9
    except duckdb.Error:
        return False
    finally:
        con.close()


def _generate(path: Path, scale: float, *, progress: bool) -> None:
    exe = find_tpchgen()
    version = _run([exe, "--version"]).strip() or "tpchgen-cli"
    tmp_db = path.with_suffix(".tmp")
    _remove_db(tmp_db)  # leftovers of an interrupted run
    bar = _Progress(len(TPCH_SCHEMA), enabled=progress)
    try:
        with tempfile.TemporaryDirectory(prefix=".tpchgen-", dir=path.parent) as parquet_dir:
            con = duckdb.connect(str(tmp_db), config=DUCKDB_CONFIG)
            try:
                # One tpchgen-cli run for all tables: each run costs 1.5-2 s to start.
                first = next(iter(TPCH_SCHEMA))
                bar.step(first, "generating all tables")
                cmd = [exe, "parquet", f"--scale-factor={scale:g}",
                       f"--tables={','.join(TPCH_SCHEMA)}", f"--output-dir={parquet_dir}"]
                _run(cmd, tick=lambda: bar.redraw(first, "generating all tables"))
                for index, (table, columns) in enumerate(TPCH_SCHEMA.items()):
                    if index:
                        bar.step(table, "loading")
                    bar.redraw(table, "loading")
                    _load(con, table, columns, Path(parquet_dir) / f"{table}.parquet")
                    bar.done(table)
                con.execute(f"CREATE SCHEMA {INFO_SCHEMA}")
                con.execute(f"CREATE TABLE {INFO_TABLE}(scale DOUBLE, generator VARCHAR)")
                con.execute(f"INSERT INTO {INFO_TABLE} VALUES (?, ?)", [scale, version])
                con.execute("CHECKPOINT")  # everything in the main file, no WAL beside it
            finally:
                con.close()
    except BaseException:
        # Also on Ctrl-C: never leave a partial database behind.
        _remove_db(tmp_db)
        raise
    # A WAL left by a crashed writer of the old file must not be replayed onto the new one.
    path.with_name(path.name + ".wal").unlink(missing_ok=True)
    os.replace(tmp_db, path)  # atomic: readers see the old file or the complete new one
    bar.finish()


def _load(con: duckdb.DuckDBPyConnection, table: str, columns: tuple[tuple[str, str], ...],
          parquet: Path) -> None:
    if not parquet.is_file():
        raise RuntimeError(f"tpchgen-cli did not write {parquet.name}")
    select = ", ".join(f"CAST({name} AS {type_}) AS {name}" for name, type_ in columns)
    order = f" ORDER BY {SORT_KEYS[table]}" if table in SORT_KEYS else ""
    con.execute(f"CREATE TABLE {table} AS SELECT {select} FROM read_parquet(?){order}",
                [str(parquet)])
    parquet.unlink()  # keep the peak disk use to one table's Parquet


def _run(cmd: list[str], tick: Callable[[], None] | None = None) -> str:
    """Run `cmd`, calling `tick` about every 0.2 s while it runs; return its stdout."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        raise RuntimeError(f"cannot run {cmd[0]}: {exc}") from exc
    with proc:
        while True:
            try:
                out, err = proc.communicate(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if tick is not None:
                    tick()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit code {proc.returncode}:\n"
                           f"{err.strip()}")
    return out


def _remove_db(db: Path) -> None:
    for target in (db, db.with_name(db.name + ".wal")):
        target.unlink(missing_ok=True)


class _Progress:
    """A small progress line on stderr: a bar, the table, i/n and the elapsed time.

    On a terminal it redraws one line in place; elsewhere (CI logs) it prints one line
    per finished table so the log stays readable.
    """

    WIDTH = 24

    def __init__(self, total: int, *, enabled: bool, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and self.stream.isatty()
        self.total = total
        self.index = 0
        self.start = time.monotonic()

    def step(self, table: str, what: str) -> None:
        self.index += 1
        self.redraw(table, what)

    def redraw(self, table: str, what: str) -> None:
        if self.tty:
            filled = self.WIDTH * (self.index - 1) // self.total
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            self._write(f"\rfedgate demo [{bar}] {self.index}/{self.total} "
                        f"{what} {table:<9} {self._elapsed()}\x1b[K")

    def done(self, table: str) -> None:
        if self.enabled and not self.tty:
            self._write(f"fedgate demo: {table} {self.index}/{self.total} "
                        f"loaded ({self._elapsed()})\n")

    def finish(self) -> None:
        if self.tty:
            self._write(f"\rfedgate demo [{'#' * self.WIDTH}] {self.total}/{self.total} "
                        f"done {self._elapsed()}\x1b[K\n")

    def _elapsed(self) -> str:
        return f"{time.monotonic() - self.start:.1f}s"

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


__all__ = ["DUCKDB_CONFIG", "INFO_TABLE", "TPCH_SCHEMA", "ensure_demo", "find_tpchgen"]
