"""Parquet and CSV sources: DuckDB over pyarrow datasets ("duckdb-over-files").

A shipped sub-query runs in an in-process DuckDB that reads a single Parquet file through
its own `read_parquet` (connectors.files.parquet_views, when the file's types match the
catalog's) and other files through pyarrow datasets (DuckDB pushes projections and filters
into the dataset scanner, so row groups are pruned by their statistics). Its capability
table and renderer are therefore DuckDB's (connectors.dialects.duckdb), under a name that
says where the SQL really runs.
"""

from __future__ import annotations

from dataclasses import replace

from connectors.dialects import duckdb

NAME = "duckdb-over-files"
DIALECT = replace(duckdb.DIALECT, name=NAME)
classify = duckdb.classify
