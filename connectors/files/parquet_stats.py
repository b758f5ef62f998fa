"""Row counts and column statistics of Parquet tables, from the files' footers.

The footer the row count is read from also keeps, per row group and column, the min, the
max and the null count: over every row group of every file of a table they give the
column's low and high and its null fraction (planner.selectivity places a range's bounds
between low and high). Only plain columns whose values have a text that compares as the
source's does are kept: numbers (decimals too), text, dates and timestamps (ISO text sorts as they do);
booleans, bytes and nested columns are left without statistics.

    file.parquet: 2 row groups   amount: [0, 480] and [481, 999], 10 + 0 nulls
    -> ColumnStats(null_frac=10/2000, low="0", high="999")
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from connectors.base import ColumnStats

_KEPT = (int, float, Decimal, str, dt.date, dt.datetime)


def parquet_estimates(dataset: ds.Dataset) -> tuple[int | None, tuple[tuple[str, ColumnStats], ...]]:
    """The table's rows (None: not Parquet) and its columns' statistics."""
    if not (isinstance(dataset, ds.FileSystemDataset) and dataset.format.default_extname == "parquet"):
        return None, ()
    rows = 0
    low: dict[str, Any] = {}
    high: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    missing: set[str] = set()  # a row group without statistics for it: no bounds are known
    plain = {f.name for f in dataset.schema if not pa.types.is_nested(f.type)}
    for fragment in dataset.get_fragments():
        metadata = fragment.metadata
        rows += metadata.num_rows
        for g in range(metadata.num_row_groups):
            group = metadata.row_group(g)
            for c in range(group.num_columns):
                column = group.column(c)
                name, stats = column.path_in_schema, column.statistics
                if name not in plain or name in missing:
                    continue
                if stats is None or not stats.has_min_max or not _comparable(stats.min, stats.max):
                    if group.num_rows:
                        missing.add(name)
                    continue
                low[name] = stats.min if name not in low else min(low[name], stats.min)
                high[name] = stats.max if name not in high else max(high[name], stats.max)
                nulls[name] = nulls.get(name, 0) + (stats.null_count or 0)
    found = []
    for name in dataset.schema.names:
        if name in low and name not in missing:
            found.append((name, ColumnStats(null_frac=nulls[name] / rows if rows else None,
                                            low=_text(low[name]), high=_text(high[name]))))
    return rows, tuple(found)


def _comparable(low: Any, high: Any) -> bool:
    if type(low) is not type(high) or isinstance(low, bool) or not isinstance(low, _KEPT):
        return False
    return not (isinstance(low, float) and (math.isnan(low) or math.isnan(high)))


def _text(value: Any) -> str:
    return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else str(value)
