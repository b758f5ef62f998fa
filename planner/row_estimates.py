"""How many rows a plan's fragments will send the engine, from the sources' estimates.

The engine choice (DuckDB or Spark) and the memory a statement is granted read this.
"""

from __future__ import annotations

from planner.logical import Node, Scan

# Textbook selectivity of one pushed filter conjunct when the source gives no statistics.
FILTER_SELECTIVITY = 1 / 3


def estimate_rows(fragment_roots: list[Node]) -> int | None:
    """What the fragments will send the engine, from the sources' row estimates."""
    total = 0
    for root in fragment_roots:
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, Scan):
                if node.table.row_estimate is None:
                    return None
                rows = node.table.row_estimate * FILTER_SELECTIVITY ** len(node.filters)
                total += int(min(rows, node.limit) if node.limit is not None else rows)
            stack.extend(node.children)
    return total
