"""EXPLAIN's account of the partition folders a file source's fragment reads and skips.

A fragment that reads one partitioned table (Hive folders `year=2024/month=03/`) with
WHERE conjuncts on partition columns reads only the folders those conjuncts admit: DuckDB
hands the conjuncts to the pyarrow dataset's scanner, which skips the other folders'
files without opening them. Here the same conjuncts (those pyarrow evaluates exactly,
connectors.files.filters) select the dataset's fragments the same way, so EXPLAIN can say
which folders are read and which are pruned, without reading any data.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow.dataset as ds
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from connectors.files.filters import to_arrow_filter

SHOWN_FOLDERS = 8  # folders named per line; the rest are counted


def single_table_selects(sql: str, datasets: Mapping[str, ds.Dataset]
                           ) -> list[tuple[str, list[exp.Expression]]]:
    """Each SELECT of `sql` (DuckDB's dialect) that reads one table of `datasets` alone:
    the table's name and the WHERE conjuncts."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except ParseError:
        return []
    found = []
    for select in tree.find_all(exp.Select):
        source_table = select.args.get("from_")
        if source_table is None or select.args.get("joins"):
            continue
        table = source_table.this
        if not isinstance(table, exp.Table) or table.name not in datasets:
            continue
        where = select.args.get("where")
        conjuncts = [] if where is None else list(where.this.flatten()) \
            if isinstance(where.this, exp.And) else [where.this]
        found.append((table.name, conjuncts))
    return found


def file_lines(source: str, sql: str, datasets: Mapping[str, ds.Dataset],
               versions: Mapping[str, int]) -> list[str]:
    """One line per table of a table format (Delta: its files and their statistics are
    in the log) that `sql` reads alone: the files its version has, and how many the
    conjuncts pyarrow evaluates exactly leave to read (partition values and min/max
    statistics both count)."""
    lines = []
    for name, conjuncts in single_table_selects(sql, datasets):
        dataset = datasets[name]
        exact = [c for c in conjuncts if to_arrow_filter([c], dataset.schema) is not None]
        every = len(list(dataset.get_fragments()))
        condition = to_arrow_filter(exact, dataset.schema)
        if condition is None:
            lines.append(f"Files of {source}.{name} (version {versions[name]}): all {every} read")
            continue
        kept = len(list(dataset.get_fragments(filter=condition)))
        lines.append(f"Files of {source}.{name} (version {versions[name]}): {kept} of {every} "
                     f"read, {every - kept} skipped by partition values and statistics "
                     f"for {condition}")
    return lines


def partition_lines(source: str, sql: str, datasets: Mapping[str, ds.Dataset],
                    roots: Mapping[str, str]) -> list[str]:
    """One line per partitioned table `sql` (DuckDB's dialect) reads alone in a SELECT:
    the folders read and pruned. `roots`: each table's folder, which folder names are
    relative to."""
    lines = []
    for name, conjuncts in single_table_selects(sql, datasets):
        dataset = datasets[name]
        partitioning = getattr(dataset, "partitioning", None)
        if partitioning is None or len(partitioning.schema) == 0:
            continue
        names = set(partitioning.schema.names)
        on_partitions = [c for c in conjuncts
                         if {col.name for col in c.find_all(exp.Column)} <= names
                         and to_arrow_filter([c], dataset.schema) is not None]
        lines.append(_line(source, name, dataset, roots[name],
                           to_arrow_filter(on_partitions, dataset.schema)))
    return lines


def _line(source: str, name: str, dataset: ds.Dataset, root: str, condition) -> str:
    every = _folders(dataset.get_fragments(), root)
    if condition is None:
        return f"Partitions of {source}.{name}: all {len(every)} folders read (no conjunct " \
               "on a partition column)"
    kept = _folders(dataset.get_fragments(filter=condition), root)
    pruned = [folder for folder in every if folder not in set(kept)]
    return (f"Partitions of {source}.{name}: {len(kept)} of {len(every)} folders read "
            f"({_named(kept)}), {len(pruned)} pruned ({_named(pruned)}) by {condition}")


def _folders(fragments, root: str) -> list[str]:
    """The folders (relative to `root`) holding `fragments`' files, in order, once each."""
    prefix = root.rstrip("/") + "/"
    found: dict[str, None] = {}
    for fragment in fragments:
        path = fragment.path
        relative = path[len(prefix):] if path.startswith(prefix) else path
        found[relative.rpartition("/")[0] or "."] = None
    return list(found)


def _named(folders: list[str]) -> str:
    if not folders:
        return "none"
    shown = ", ".join(folders[:SHOWN_FOLDERS])
    more = len(folders) - SHOWN_FOLDERS
    return f"{shown} and {more} more" if more > 0 else shown
