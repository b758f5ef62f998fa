"""The rule driver: named batches of rules run Once or to a fixed point.

In the spirit of Catalyst's RuleExecutor and Calcite's HepPlanner. A rule is a plain
function `rule(plan, context) -> plan` that returns the same object when it changes
nothing; a FixedPoint batch repeats until a full pass changes nothing (or its iteration
budget runs out). After every rule the output columns must be what they were: a rule
that changes the query's shape is a bug, reported as such rather than run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pgwire.errors import INTERNAL_ERROR, PgError
from planner.catalog import CatalogSnapshot
from planner.logical import Node

log = logging.getLogger("fedgate.planner")


@dataclass(frozen=True)
class RuleContext:
    catalog: CatalogSnapshot
    pre_aggregate: bool = False  # rules.push_aggregate_below_join may fire (opt-in)


Rule = Callable[[Node, RuleContext], Node]


@dataclass(frozen=True)
class Once:
    pass


@dataclass(frozen=True)
class FixedPoint:
    max_iterations: int = 16


@dataclass(frozen=True)
class Batch:
    name: str
    strategy: Once | FixedPoint
    rules: tuple[Rule, ...]


def run_rule(rule: Rule, plan: Node, context: RuleContext) -> Node:
    result = rule(plan, context)
    if result is plan:
        return plan
    if [name for _, name in result.output] != [name for _, name in plan.output]:
        raise PgError(INTERNAL_ERROR, f"optimizer rule {rule.__name__} changed the output columns "
                                      f"from {plan.output} to {result.output}")
    if log.isEnabledFor(logging.DEBUG):
        log.debug("rule %s fired:\n%s\n=>\n%s", rule.__name__, plan, result)
    return result


def optimize(plan: Node, context: RuleContext, batches: Sequence[Batch]) -> Node:
    for batch in batches:
        iterations = 1 if isinstance(batch.strategy, Once) else batch.strategy.max_iterations
        for _ in range(iterations):
            before = plan
            for rule in batch.rules:
                plan = run_rule(rule, plan, context)
            if plan is before:
                break
    return plan
