"""Which engine runs a statement's residual work, and how far PostgreSQL sources run
statements whole with small tables inlined: the session's choice, the configured default,
else by the rows estimated to enter the engine."""

from __future__ import annotations

from gateway.config import EngineConfig
from planner import QueryPlan
from planner.inline_sides import NO_INLINING, Inlining


def choose_engine(chosen: str, named: bool, config: EngineConfig, plan: QueryPlan) -> tuple[str, str]:
    """The residual engine for `plan`, and why (for EXPLAIN): `chosen` is the session's
    `fedgate.engine`, `named` whether the session set it (`SET fedgate.engine`), else
    `[engine] default = "spark"`, else by size."""
    if chosen == "source":
        # A statement of a PostgreSQL source and others ran whole on it (or was
        # refused: planner.inline_sides); one that reads no PostgreSQL source has no
        # source to run it and takes the engine as without the setting.
        if plan.is_passthrough:
            return chosen, "SET fedgate.engine"
        name, why = ("spark", "the configured default") if config.default == "spark" \
            else engine_by_size(config, plan.estimated_rows)
        return name, "; ".join(filter(None, (why, "no PostgreSQL source runs it whole")))
    if named:
        return chosen, "SET fedgate.engine"
    if chosen == "spark":
        return chosen, "the configured default"
    return engine_by_size(config, plan.estimated_rows)


def engine_by_size(engine: EngineConfig, estimated_rows: int | None) -> tuple[str, str]:
    """DuckDB or Spark by the rows estimated to enter the engine, and why; no reason when
    there is no size threshold (EXPLAIN then says just "Engine")."""
    threshold = engine.size_threshold
    if not threshold:
        return "duckdb", ""
    limit = f"spark_threshold_rows {threshold}"
    if engine.spark_threshold_rows is None:
        limit += ", the default on a cluster"
    if estimated_rows is None:
        return "duckdb", f"no row estimate to compare with {limit}"
    if estimated_rows > threshold:
        return "spark", f"about {estimated_rows} rows to combine, over {limit}"
    return "duckdb", f"about {estimated_rows} rows to combine, within {limit}"


def configured_inlining(engine: EngineConfig) -> Inlining:
    """The inlining of a session that named no engine: up to `[engine] inline_rows` rows
    per table, none when `[engine] default` is Spark (its users asked for the engine)."""
    return NO_INLINING if engine.default == "spark" else Inlining(engine.inline_rows)
