"""What the gateway hands the planner besides the sources, for tests that build a catalog
snapshot of their own: the residual engines' dialects, in the gateway's order (the
residual is written in DuckDB's, rendered for Spark on demand)."""

from __future__ import annotations

from connectors.dialects import duckdb, spark

ENGINE_DIALECTS = (duckdb.DIALECT, spark.DIALECT)
