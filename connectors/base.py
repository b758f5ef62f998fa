"""Contracts between the planner, the executor and the outside world (docs/design.md §2).

The planner imports only this module from `connectors`: it reads each source's dialect and
capability answers, never the source's code. Sources and engines stream Arrow record
batches so memory stays bounded whatever the result size.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa
from sqlglot import exp


# Functions whose value changes per call or per statement: never shipped, never moved
# across joins or projections (docs/design.md §4).
VOLATILE = (exp.Rand, exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.Uuid,
            exp.CurrentTimestampLTZ)


def volatile_reason(expression: exp.Expression) -> str | None:
    """Why `expression` must stay where it is, or None when it is deterministic."""
    for node in expression.walk():
        if isinstance(node, VOLATILE):
            return f"function {node.sql('postgres').split('(')[0].lower()}() is volatile"
        if isinstance(node, exp.Anonymous) and str(node.this).lower() in (
                "random", "now", "clock_timestamp", "statement_timestamp", "timeofday",
                "gen_random_uuid", "nextval", "setseed", "txid_current"):
            return f"function {str(node.this).lower()}() is volatile"
    return None


# stddev, variance and their _pop/_samp forms: float8 of floats, numeric of the rest in
# PostgreSQL (planner.result_types types them, the DuckDB dialect computes them).
DEVIATIONS = (exp.Stddev, exp.StddevPop, exp.StddevSamp, exp.Variance, exp.VariancePop)
# What may stand around an aggregate call: `agg(x) FILTER (WHERE ...) OVER (...)` is
# Window > Filter > the call.
AGGREGATE_WRAPPERS = (exp.Filter, exp.Window)


def aggregate_call(node: exp.Expression) -> exp.Expression:
    """The call inside the FILTER and OVER of `node` (`node` itself when it has none)."""
    while isinstance(node, AGGREGATE_WRAPPERS):
        node = node.this
    return node


def in_same_context(node: exp.Expression, call: exp.Expression) -> exp.Expression:
    """`call` under copies of the FILTER and OVER that `node` (the outermost of an
    aggregate's chain) puts around its aggregate; `call` itself when it has none."""
    if not isinstance(node, AGGREGATE_WRAPPERS):
        return call
    outer = node.copy()
    inner = outer
    while isinstance(inner.this, AGGREGATE_WRAPPERS):
        inner = inner.this
    inner.set("this", call)
    return outer


class Pushdown(Enum):
    """How a source can evaluate a filter (DataFusion's TableProviderFilterPushDown)."""

    EXACT = "exact"  # the source's answer is exactly PostgreSQL's: no re-check needed
    INEXACT = "inexact"  # the source may return extra rows: ship it and re-check locally
    UNSUPPORTED = "unsupported"  # keep it local


@dataclass(frozen=True)
class TableRef:
    """A table as clients name it (source = schema) and as the source names it."""

    source: str
    name: str
    remote_schema: str | None = None
    remote_name: str | None = None

    @property
    def remote(self) -> tuple[str | None, str]:
        return self.remote_schema, self.remote_name or self.name


# Arrow field metadata a source sets on a text column whose comparisons follow a collation
# other than PostgreSQL's "C" (e.g. b"utf8mb4_general_ci" on MySQL); capability tables
# read it to decide how comparisons on that column may ship. Absent means binary (C) order.
COLLATION_KEY = "collation"


@dataclass(frozen=True)
class ColumnStats:
    """What a source's statistics say of one column (PostgreSQL's pg_stats, MySQL's index
    cardinality, SQLite's sqlite_stat1, Parquet's row-group min/max); None: not known.

    Values are the source's text spellings (pg_stats' anyarray read as text), compared with
    a literal as numbers when both parse as numbers, else as text. `n_distinct` is a count
    of distinct values (PostgreSQL's negative fraction already multiplied out).
    """

    null_frac: float | None = None
    n_distinct: float | None = None
    most_common: tuple[tuple[str, float], ...] = ()  # (value, frequency)
    histogram: tuple[str, ...] = ()  # equi-depth bucket bounds, ascending
    low: str | None = None  # min and max, when no histogram is kept
    high: str | None = None


@dataclass(frozen=True)
class TableInfo:
    ref: TableRef
    schema: pa.Schema
    row_estimate: int | None = None
    # Per column name, the source's statistics; read with the catalog and refreshed with it.
    column_stats: tuple[tuple[str, ColumnStats], ...] = ()
    primary_key: tuple[str, ...] = ()
    # The source's own OIDs of the relation's row type and of its array (a PostgreSQL
    # source's table whose every column the gateway describes with the source's type):
    # a relayed description naming them names the gateway catalog's row type instead.
    row_type: tuple[int, int] | None = None

    def stats(self, column: str) -> ColumnStats | None:
        """The statistics of `column`, None when the source keeps none."""
        for name, stats in self.column_stats:
            if name == column:
                return stats
        return None


@dataclass(frozen=True)
class Storage:
    """A relation's sizes in bytes and a view's definition, as PostgreSQL's functions
    report them: pg_relation_size per fork, pg_table_size, pg_indexes_size,
    pg_total_relation_size, pg_get_viewdef (plain and pretty; None for a table)."""

    main: int
    fsm: int
    vm: int
    init: int
    table: int
    indexes: int
    total: int
    definition: str | None = None
    pretty_definition: str | None = None


@runtime_checkable
class StorageReporter(Protocol):
    """A source that can say what its relations occupy now (the emulated catalog's size
    functions ask it per query, so the answer is live; gateway.pg_catalog.storage)."""

    name: str

    async def storage(self) -> dict[str, Storage]:
        """Each relation's Storage, keyed by the name `tables()` gives it."""


@runtime_checkable
class SettingChecker(Protocol):
    """A source that checks a value of one of its own settings as its SET would (a
    PostgreSQL server: a text search configuration or a tablespace must exist there)."""

    async def check_setting(self, name: str, value: str) -> None:
        """Raise the source's refusal of `value` for `name`; keep nothing set."""


@runtime_checkable
class FragmentExplainer(Protocol):
    """A source that can say more in EXPLAIN about how it reads one of its fragments (a
    file source: the partition folders it reads and prunes), without reading data."""

    def explain_fragment(self, sql: str) -> list[str]:
        """Lines for EXPLAIN about the fragment `sql`, in the source's dialect."""


@runtime_checkable
class VersionedTables(Protocol):
    """A source that can say cheaply (a stat per file, no read) which version of a table's
    rows it would read now, so that rows read before may be kept while it is unchanged
    (gateway.executor.inlined_rows)."""

    def table_version(self, name: str) -> Hashable | None:
        """A value equal to an earlier answer only while table `name` (as `tables()` names
        it) holds the rows it held then; None when the source cannot tell: read it."""


@runtime_checkable
class Pinged(Protocol):
    """A source that can say it serves statements now more cheaply than by reading its
    catalog: the health probe (every PROBE_EVERY_S, and for /readyz) asks it, where a
    `tables()` would read every table's columns and statistics only to throw them away."""

    async def ping(self) -> None:
        """One round trip to the source; raises as a statement would when it cannot."""


@runtime_checkable
class OnDemandTables(Protocol):
    """A source with tables it lists only once a statement has named them (a Delta
    table's older version, `sales@v3`): the catalog cannot list them all beforehand."""

    def wants_table(self, name: str) -> bool:
        """A statement named `name`, which the catalog lacks: True when the source's next
        `tables()` will list it."""


@dataclass(frozen=True)
class Classification:
    """A capability table's answer for one expression, with the reason when not EXACT."""

    pushdown: Pushdown
    reason: str | None = None


EXACT = Classification(Pushdown.EXACT)


def _ship_everything(expression: exp.Expression, table: TableInfo | None) -> Classification:
    return EXACT


def _renders_without_types(tree: exp.Expression) -> bool:
    return False


@dataclass(frozen=True)
class Dialect:
    """A source's SQL dialect and what it can evaluate exactly as PostgreSQL does.

    `classify` is the source's capability table as a pure function, so the planner can
    ask it without any I/O: given a predicate (columns qualified by the table's alias)
    and the table it filters (None for a predicate over several tables, e.g. a join
    condition), is the source's answer PostgreSQL's (EXACT), a superset that we re-check
    (INEXACT), or not to be trusted (UNSUPPORTED, with the reason EXPLAIN shows)?
    `render` turns a PostgreSQL-dialect sqlglot tree into the source's SQL, raising
    `PgError` 0A000 for a construct it cannot express. `ships` lists the relational
    operators the source may run for us: "join", "aggregate", "sort", "limit",
    "distinct", "union", "window".
    """

    name: str
    sqlglot: str
    # How the source spells a bind parameter: "$n" (numbered) or "?" (positional).
    paramstyle: str = "$n"
    classify: Callable[[exp.Expression, TableInfo | None], Classification] = _ship_everything
    render: Callable[[exp.Expression], str] | None = None
    ships: frozenset[str] = frozenset()
    # classify answers EXACT for more than single-table filters only when expressions carry
    # their types (sqlglot's annotate_types): the planner annotates queries that touch it.
    wants_types: bool = False
    # Whether `render` reads operand types to write a given tree (a division, say): the
    # planner annotates what it hands such a dialect (see `needs_types`).
    render_needs_types: Callable[[exp.Expression], bool] = _renders_without_types
    # An engine that divides numerics in double precision by design (Spark, whose decimal
    # division keeps too few digits): its float8 where PostgreSQL computes a numeric is
    # presented as it is; any other engine's is refused (gateway.executor.presented).
    numerics_in_double: bool = False

    def to_sql(self, tree: exp.Expression) -> str:
        return self.render(tree) if self.render is not None else tree.sql(self.sqlglot)

    def needs_types(self, tree: exp.Expression) -> bool:
        """Whether rendering `tree` in this dialect depends on its operand types."""
        return self.render_needs_types(tree)


# The call the planner writes for PostgreSQL's exact average of integers and numerics,
# `FEDGATE_AVG(sum, count, scale, the sum's scale)` (planner.pg_aggregates); every engine
# dialect, and every source dialect that can be handed one, expands it in `render`.
EXACT_AVERAGE = "FEDGATE_AVG"

# The call the planner wraps a VARIADIC argument in, `f(fedgate_variadic(arr))`
# (planner.pgcompat: sqlglot cannot parse the keyword); only the PostgreSQL dialect is
# handed one, and writes it back as `f(VARIADIC (arr))`.
VARIADIC_CALL = "fedgate_variadic"

# The `meta` key the planner sets on the SELECT whose rows go to the client as they are
# (a residual, a statement shipped whole): a dialect may compute those outputs in a form
# only the gateway reads back, such as PostgreSQL's text of a numeric of per-value scale
# (connectors.dialects.duckdb.quotient), which no query around them could compare.
CLIENT_OUTPUTS = "client_outputs"
# Beside it, the positions of the outputs the planner presents as a numeric
# (planner.result_types): only those may come back as numeric text, since the
# gateway reads a text column back as numeric only where the planner typed it so.
NUMERIC_OUTPUTS = "numeric_outputs"


# Spellings of UTC a client may set as its TimeZone. The sources run their sessions in
# UTC; any other zone makes zone-dependent expressions differ between PostgreSQL (session
# zone) and a source (planner.zone_dependent).
_UTC_NAMES = frozenset({"utc", "etc/utc", "gmt", "etc/gmt", "uct", "etc/uct", "zulu",
                        "etc/zulu", "universal", "etc/universal", "z", "gmt0", "etc/gmt0",
                        "gmt+0", "gmt-0", "etc/gmt+0", "etc/gmt-0", "greenwich",
                        "etc/greenwich", "+00", "+00:00", "0"})


def is_utc(zone: str) -> bool:
    """Whether the TimeZone `zone` is UTC, the zone every source's session runs in."""
    return zone.strip().lower() in _UTC_NAMES


@dataclass(frozen=True)
class ScanRequest:
    """Semantics: filter, then limit, then projection."""

    table: TableRef
    columns: list[str]
    filters: list[exp.Expression] = field(default_factory=list)
    limit: int | None = None


@dataclass(frozen=True)
class CommandResult:
    tag: str
    rows: int | None = None


class BatchStream(Protocol):
    """An async stream of record batches with a known schema; `aclose()` stops remote work."""

    schema: pa.Schema

    def __aiter__(self) -> AsyncIterator[pa.RecordBatch]: ...

    async def aclose(self) -> None: ...


async def count_rows(stream: BatchStream) -> int:
    """Read `stream` to the end, discarding its batches, and return how many rows it had.

    The stream is closed however the read ends (finished, failed or cancelled), so the
    remote work behind it stops. For EXPLAIN ANALYZE, benchmarks and memory tests, which
    need every row produced but none kept.
    """
    rows = 0
    try:
        async for batch in stream:
            rows += batch.num_rows
    finally:
        await stream.aclose()
    return rows


class TableStream:
    """A BatchStream over rows already in memory (a finished engine result, or rows read
    ahead of time), handed out batch by batch."""

    def __init__(self, table: pa.Table, batch_rows: int = 65_536) -> None:
        self.schema = table.schema
        self._batches = iter(table.to_batches(max_chunksize=batch_rows))

    def __aiter__(self) -> TableStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        batch = next(self._batches, None)
        if batch is None:
            raise StopAsyncIteration
        return batch

    async def aclose(self) -> None:
        self._batches = iter(())


@runtime_checkable
class Source(Protocol):
    name: str
    dialect: Dialect

    async def tables(self) -> list[TableInfo]:
        """Names, Arrow schemas and row estimates of every table the source exposes."""

    def classify(self, table: TableRef, filters: Sequence[exp.Expression]) -> list[Pushdown]:
        """One answer per filter, same order."""

    async def run_remote(self, sql: str, params: Sequence[Any] = ()) -> BatchStream:
        """Start a whole shipped sub-query (in the source's dialect) and stream its rows."""

    async def describe(self, sql: str, params: Sequence[Any] = ()) -> pa.Schema:
        """The Arrow schema `run_remote(sql)` would produce, without running the query."""

    async def close(self) -> None: ...


@runtime_checkable
class Engine(Protocol):
    """Runs residual SQL over fragment inputs (DuckDB in-process, or Spark)."""

    name: str
    dialect: Dialect  # the SQL it runs, which the gateway hands the planner
    # An engine may say `holds_inputs = False` (DuckDB): it scans each fed batch and asks
    # for the next, keeping none. One that does not say so is taken to hold every input
    # whole until the statement ends (Spark), and the gateway counts them all against
    # the statement's memory (gateway.state.memory).

    @property
    def start_pending(self) -> str | None:
        """What a statement run now would first wait for (Spark's session starting), as a
        notice for the client; None when it runs at once. Cheap and non-blocking: the
        session asks it on the event loop before each statement (docs/design.md §6)."""

    async def execute(self, sql: str, inputs: Mapping[str, pa.Table | pa.RecordBatchReader],
                      params: Sequence[Any] = ()) -> BatchStream: ...

    async def describe(self, sql: str, inputs: Mapping[str, pa.Schema],
                       params: Sequence[Any] = ()) -> pa.Schema: ...

    async def close(self) -> None: ...
