"""What the planner hands the executor: remote fragments plus residual SQL for the engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class RemoteFragment:
    """A sub-query shipped whole to one source, in that source's dialect."""

    name: str  # how the residual SQL refers to its rows: frag_0, frag_1, ...
    source: str
    sql: str
    # Renders the same query returning no rows, for its schema: only Describe needs it,
    # so it is rendered on first use rather than for every plan.
    describe: Callable[[], str] = field(repr=False, compare=False)
    uses_params: bool = False  # whether the statement's parameters are bound to it
    # Statement parameter numbers bound to this fragment's $1, $2, ... in order.
    param_numbers: tuple[int, ...] = ()
    # The same fragment with each (column, join key values) condition added: dynamic
    # filtering (the condition's shape per source: planner.key_sets).
    narrow: Callable[[Sequence[tuple[tuple[str | None, str], list]]], str] | None = field(
        default=None, repr=False, compare=False)

    # Rows the fragment is estimated to send, unnarrowed (planner.dynamic_filters'
    # estimate; None: a source gave none): small ones are handed to the engine whole.
    estimated_rows: int | None = None

    @cached_property
    def describe_sql(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class QueryPlan:
    """Fragments run at their sources; the residual (if any) runs in the engine over them.

    With a single fragment and no residual, the fragment's rows are the answer: no engine
    is involved (the path point queries take). With no fragment, the residual needs no
    source at all (`SELECT 1`).
    """

    fragments: tuple[RemoteFragment, ...]
    residual_sql: str | None
    residual_describe: Callable[[], str] | None = field(repr=False, compare=False)
    param_types: tuple[str, ...] = ()  # PostgreSQL type names of $1..$n
    column_names: tuple[str, ...] | None = None  # None: take the names the rows carry
    residual_params: tuple[int, ...] = ()  # statement parameter numbers of the residual's $1..
    # EXPLAIN's account, rendered on first use (rendering every plan's text would cost as
    # much as planning it): the optimized logical plan, and one line per filter conjunct
    # saying where it runs and why.
    details: Callable[[], tuple[tuple[str, ...], tuple[str, ...]]] | None = field(
        default=None, repr=False, compare=False)
    # Per join whose inputs live in one source: shipped whole or fetched apart, with the
    # estimates that decided it (planner.ship_join), for EXPLAIN.
    joins: tuple[str, ...] = ()
    # Fragments to narrow with another fragment's join keys (planner.dynamic_filters).
    dynamic_filters: tuple = ()
    # Rows the engine is expected to read: the fragments' estimated output (None: unknown).
    estimated_rows: int | None = None
    # Renders the residual for the engine of a name (connectors.base.Engine.name);
    # residual_sql is the residual in the catalog snapshot's first engine dialect.
    residual_render: Callable[[str], str] | None = field(default=None, repr=False, compare=False)
    # PostgreSQL's type name of each output column (planner.result_types; None: the
    # rows' own type), for rows the engine or a non-PostgreSQL source computes.
    result_types: tuple[str | None, ...] | None = None
    # Outputs whose values are a source's PostgreSQL text of their result type (an
    # unconstrained numeric, a jsonb, an array passed through the engine: planner.kept_texts).
    kept_texts: tuple[int, ...] = ()
    # Outputs that are a PostgreSQL source's enum: (position, source, the source's OID of
    # it, its typname), described as the gateway's catalog numbers it
    # (gateway.executor.enum_types).
    enum_outputs: tuple[tuple[int, str, int, str], ...] = ()
    # Outputs that are a whole row of a DuckDB source's table (planner.whole_rows):
    # (position, source, table), described as the catalog's row type of that table.
    row_outputs: tuple[tuple[int, str, str], ...] = ()
    # Tables of other sources the one fragment reads from array parameters after the
    # statement's own (planner.inline_sides): the executor reads their rows first.
    inlined: tuple = ()

    def residual_for(self, engine: str) -> str | None:
        if self.residual_render is None:
            return self.residual_sql
        return self.residual_render(engine)

    @cached_property
    def _details(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return self.details() if self.details is not None else ((), ())

    @property
    def optimized(self) -> tuple[str, ...]:
        return self._details[0]

    @property
    def conjuncts(self) -> tuple[str, ...]:
        return self._details[1]

    @cached_property
    def pushdown_counts(self) -> tuple[int, int, int]:
        """Filter conjuncts pushed exact, pushed inexact (re-checked), kept local: /metrics
        counts them per statement (computed once per plan, from EXPLAIN's account)."""
        exact = inexact = local = 0
        for line in self.conjuncts:
            if line.endswith(": pushed exact"):
                exact += 1
            elif ": pushed inexact" in line:
                inexact += 1
            else:
                local += 1
        return exact, inexact, local

    @cached_property
    def residual_describe_sql(self) -> str | None:
        return self.residual_describe() if self.residual_describe is not None else None

    @property
    def is_passthrough(self) -> bool:
        return self.residual_sql is None and len(self.fragments) == 1

    def explain(self, engine: str = "duckdb", why: str = "") -> list[str]:
        lines = []
        if self.optimized:
            lines.append("Logical plan:")
            lines.extend("  " + line for line in self.optimized)
        lines.extend(self.conjuncts)
        lines.extend(self.joins)
        if self.residual_sql is not None:
            label = "Engine" if engine == "duckdb" and not why else f"Engine {engine} ({why})"
            lines.append(f"{label}: {self.residual_for(engine)}")
        for fragment in self.fragments:
            prefix = "  " if self.residual_sql is not None else ""
            lines.append(f"{prefix}Remote {fragment.name} on {fragment.source}: {fragment.sql}")
        for side in self.inlined:
            numbers = ", ".join(f"${side.first_param + i}" for i in range(len(side.columns)))
            lines.append(f"  Inlined {side.alias}: Remote on {side.source}: {side.sql}, "
                         f"sent to {self.fragments[0].source} as {numbers}")
        if self.param_types:
            lines.append("Parameters: " + ", ".join(
                f"${i} {t}" for i, t in enumerate(self.param_types, 1)))
        return lines
