"""How many rows a plan's fragments will send the engine, from the sources' estimates.

The engine choice (DuckDB or Spark) and the memory a statement is granted read this.
"""

from __future__ import annotations

from planner.logical import Node, Scan
from planner.selectivity import selectivity


def estimate_rows(fragment_roots: list[Node]) -> int | None:
    """What the fragments will send the engine, from the sources' row estimates and column
    statistics (planner.selectivity)."""
    total = 0
    for root in fragment_roots:
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, Scan):
                if node.table.row_estimate is None:
                    return None
                rows = float(node.table.row_estimate) + 1e-6  # 27 x (1/3)^3 is 1 row, not 0.99
                for f in node.filters:
                    rows *= selectivity(f, node.table)
                total += int(min(rows, node.limit) if node.limit is not None else rows)
            stack.extend(node.children)
    return total
