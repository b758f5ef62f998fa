"""EXPLAIN (FORMAT JSON): the federated plan as data, the tree EXPLAIN's text describes.

The shape follows PostgreSQL's JSON plans: a one-element array holding {"Plan": node},
each node a "Node Type" with its children under "Plans". fedgate's nodes:

- "Engine": the residual (its SQL, the engine, why that engine) over its inputs;
- "Remote Fragment": a sub-query shipped whole to one source ("Fragment", "Source",
  "Remote SQL"); the root itself when no engine is involved;
- "Relay": a statement that goes to one PostgreSQL source as written.

With ANALYZE, a node carries "Actual Rows" and "Actual Total Time" (ms), a fragment its
"Bytes". The status page draws its plan graphs from this same structure
(gateway.server.http.plan_svg).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.query_plan import QueryPlan


def plan_document(plan: QueryPlan, engine: str = "duckdb", why: str = "",
                  figures: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The plan as EXPLAIN (FORMAT JSON) returns it; `figures` (EXPLAIN ANALYZE's numbers,
    by fragment name and "engine") are merged into the nodes."""
    figures = figures or {}
    fragments = []
    for fragment in plan.fragments:
        node: dict[str, Any] = {"Node Type": "Remote Fragment", "Fragment": fragment.name,
                                "Source": fragment.source, "Remote SQL": fragment.sql}
        node.update(figures.get(fragment.name, {}))
        fragments.append(node)
    if plan.is_passthrough:
        root = fragments[0]
        if plan.inlined:  # other sources' tables sent with it (planner.inline_sides)
            root["Plans"] = [{"Node Type": "Inlined Table", "Alias": side.alias, "Source": side.source,
                              "Remote SQL": side.sql, "Parameters": [
                                  f"${side.first_param + i}" for i in range(len(side.columns))]}
                             for side in plan.inlined]
    else:
        root = {"Node Type": "Engine", "Engine": engine, "Residual SQL": plan.residual_for(engine)}
        if why:
            root["Engine Reason"] = why
        root.update({k: v for k, v in figures.get("engine", {}).items() if k != "Notes"})
        if fragments:
            root["Plans"] = fragments
    document: dict[str, Any] = {"Plan": root}
    if plan.optimized:
        document["Logical Plan"] = list(plan.optimized)
    if plan.conjuncts:
        document["Conjuncts"] = list(plan.conjuncts)
    if plan.param_types:
        document["Parameters"] = [f"${i} {t}" for i, t in enumerate(plan.param_types, 1)]
    notes = figures.get("engine", {}).get("Notes")
    if notes:
        document["Notes"] = list(notes)
    if "engine" in figures or "frag_0" in figures and plan.is_passthrough:
        total = (figures.get("engine") or figures["frag_0"])["Actual Total Time"]
        document["Execution Time"] = total
    return [document]


def relay_document(source: str, sql: str | None) -> list[dict[str, Any]]:
    """A statement relayed to one PostgreSQL source as written."""
    return [{"Plan": {"Node Type": "Relay", "Source": source,
                      "Remote SQL": sql or "the statement as written"}}]
