"""Optimizer rules, one per module; each module's function is named after the module.

`transform_up` applies a node-level rewrite through a whole plan, rebuilding only the
path to what changed (copy-on-write), and returns the same plan when nothing changed.
"""

from __future__ import annotations

from collections.abc import Callable

from planner.logical import Node

Rewrite = Callable[[Node], Node]


def transform_up(plan: Node, rewrite: Rewrite) -> Node:
    """Children first, then the node itself."""
    children = plan.children
    if children:
        new_children = tuple(transform_up(c, rewrite) for c in children)
        if any(a is not b for a, b in zip(new_children, children)):
            plan = plan.with_children(new_children)
    return rewrite(plan)
