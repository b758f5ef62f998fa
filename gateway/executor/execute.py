"""Run a QueryPlan: start its remote fragments, feed the engine, return one batch stream.

A single-fragment plan streams straight from its source (no engine). Otherwise every
fragment starts at once and streams into the engine through a bounded queue
(`gateway.executor.feeds`); the engine's result stream owns the feeds, so closing it (the query
finished, failed or was cancelled) stops every remote query.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from connectors.base import BatchStream, Engine, Source, count_rows
from connectors.query_scope import query_scope
from gateway.executor.feeds import EngineStream, Feed, open_remote, start_engine
from gateway.executor.fragment_reads import FragmentReads
from gateway.executor.inlined_rows import InlinedRows
from gateway.executor.metered import Metered
from gateway.executor.presented import Presented, presented_schema
from gateway.executor.whole_reads import WholeStream, read_whole
from gateway.executor.enum_types import enum_typed, passed_enums
from gateway.executor.row_types import RowTyped, has_rows, named_rows, row_typed
from gateway.state.memory import HEAVY_ROWS, EngineMemory, StatementMemory
from gateway.state.metrics import Metrics
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from planner.dynamic_filters import DynamicFilter
from planner.key_sets import shape_for
from planner.query_plan import QueryPlan, RemoteFragment


# Fragments estimated at no more rows than this are handed to the engine as tables.
WHOLE_ROWS = 200_000


class Executor:
    def __init__(self, sources: Mapping[str, Source], engines: Mapping[str, Engine],
                 default: str = "duckdb", metrics: Metrics | None = None,
                 memory: EngineMemory | None = None) -> None:
        self.sources = sources
        # The engine's memory, shared out to statements (a unit test's executor: none).
        self.memory = memory
        # /metrics: the server context's counts (a unit test's executor keeps its own).
        self.metrics = metrics if metrics is not None else Metrics()
        self.engines = engines
        self.default = default
        self.reads = FragmentReads(sources)  # copies read once, big PostgreSQL scans split
        self.inlined = InlinedRows(sources, self.metrics)  # small tables sent as parameters

    @property
    def engine(self) -> Engine:
        return self.engines[self.default]

    async def run(self, plan: QueryPlan, params: Sequence[Any], engine: str | None = None,
                  dynamic_filtering: bool = True, memory: StatementMemory | None = None,
                  into: Any = None) -> BatchStream:
        """The plan's rows. `memory`: the statement's share (`fedgate.statement_memory`)
        and what it holds, counted while the stream is open (gateway.state.memory).
        `into`: where an engine that can (Spark: connectors.engines.spark_writes) writes
        the rows itself; the stream is then empty."""
        if plan.is_passthrough:
            fragment = plan.fragments[0]
            bound = _bound(fragment, params)
            if plan.inlined:  # other sources' small tables, as array parameters
                bound = [*bound, *await self.inlined.params(plan)]
            stream = Metered(await open_remote(self.sources[fragment.source], fragment.sql, bound),
                             self.metrics, fragment.source)
            if has_rows(stream.schema) or plan.row_outputs:
                try:
                    schema = await self._row_typed(stream.schema, fragment.source, plan.row_outputs)
                except BaseException:
                    await stream.aclose()
                    raise
                stream = RowTyped(stream, schema)
        else:
            # Sources learn how many fragments of this query they serve, so theirs can
            # read one snapshot (connectors.query_scope; gather's tasks copy the context).
            statement = await self._admitted(plan, memory)
            try:
                with query_scope(Counter(f.source for f in plan.fragments)):
                    stream = Metered(await self._through_engine(
                        plan, params, self.engines[engine or self.default], dynamic_filtering,
                        statement, into), self.metrics, None)
            except BaseException:
                if statement is not None and self.memory is not None:
                    self.memory.forget(statement)
                raise
        if plan.column_names is not None or plan.result_types is not None:
            stream = Presented(stream, plan.column_names, plan.result_types,
                               self._double_numerics(plan, engine), plan.kept_texts)
        typed = await self._enum_typed(plan, stream.schema)
        return stream if typed is None else RowTyped(stream, typed)

    async def describe(self, plan: QueryPlan, engine: str | None = None) -> pa.Schema:
        # A plan one source answers whole names no engine (or "source": planner.inline_sides).
        schema = await self._describe(plan, None if plan.is_passthrough else self.engines[engine or self.default])
        if plan.is_passthrough and (has_rows(schema) or plan.row_outputs):
            schema = await self._row_typed(schema, plan.fragments[0].source, plan.row_outputs)
        schema = presented_schema(schema, plan.column_names, plan.result_types,
                                  self._double_numerics(plan, engine), plan.kept_texts)
        return await self._enum_typed(plan, schema) or schema

    async def _enum_typed(self, plan: QueryPlan, schema: pa.Schema) -> pa.Schema | None:
        """`schema` with its enum outputs described as the catalog's enums; None: it has none."""
        outputs = passed_enums(schema, plan.fragments[0].source) if plan.is_passthrough \
            else plan.enum_outputs
        catalog = self.sources.get("pg_catalog")
        if not outputs or catalog is None:
            return None
        return await enum_typed(schema, outputs, catalog.row_type_oids)  # type: ignore[attr-defined]

    async def _row_typed(self, schema: pa.Schema, source: str,
                         outputs: Sequence[tuple[int, str, str]] = ()) -> pa.Schema:
        """Whole rows of `source`'s tables described as the catalog's row types: a
        PostgreSQL source's by its own row type OIDs, a DuckDB source's by the planner's
        `QueryPlan.row_outputs` (position, source, table)."""
        catalog = self.sources.get("pg_catalog")
        if catalog is None:
            raise PgError(FEATURE_NOT_SUPPORTED, "a whole-row reference needs the gateway's catalog")
        if outputs:
            oids = {i: await catalog.row_type_of(source_name, table)  # type: ignore[attr-defined]
                    for i, source_name, table in outputs}
            return named_rows(schema, oids)
        return row_typed(schema, source, await catalog.row_type_oids(source))  # type: ignore[attr-defined]

    def _double_numerics(self, plan: QueryPlan, engine: str | None) -> bool:
        """Whether the rows come from an engine that divides numerics in double precision."""
        return not plan.is_passthrough and \
            self.engines[engine or self.default].dialect.numerics_in_double

    async def _describe(self, plan: QueryPlan, engine: Engine | None) -> pa.Schema:
        """The result schema, from each piece's zero-row form: nothing is really computed."""
        nulls = [None] * len(plan.param_types)
        inlined = [None] * sum(len(side.columns) for side in plan.inlined)  # no rows
        schemas = {}
        for fragment in plan.fragments:
            stream = await open_remote(self.sources[fragment.source], fragment.describe_sql,
                                       [*_bound(fragment, nulls), *inlined])
            await stream.aclose()
            schemas[fragment.name] = stream.schema
        if plan.is_passthrough:
            return schemas[plan.fragments[0].name]
        assert engine is not None
        if engine.name == "duckdb":
            assert plan.residual_describe_sql is not None
            return await engine.describe(plan.residual_describe_sql, schemas,
                                         _pick(plan.residual_params, nulls))
        residual = plan.residual_for(engine.name)
        assert residual is not None
        return await engine.describe(residual, schemas, _pick(plan.residual_params, nulls))

    async def _admitted(self, plan: QueryPlan, memory: StatementMemory | None) -> StatementMemory | None:
        """The statement's share taken from the engine's memory (waiting while it is
        committed) when the plan is heavy, else only counted; None without a pool."""
        if self.memory is None:
            return memory
        if memory is None:  # a caller that names no share: the configured default's
            memory = StatementMemory(self.memory.default_share, "")
        # Unknown sizes (the emulated catalog's, a plan of no fragments) stay light: they
        # would queue psql's \d behind the heavy statements.
        if plan.estimated_rows is not None and plan.estimated_rows >= HEAVY_ROWS:
            return await self.memory.admit(memory)
        return self.memory.track(memory)

    async def _through_engine(self, plan: QueryPlan, params: Sequence[Any], engine: Engine,
                              dynamic: bool = True, memory: StatementMemory | None = None,
                              into: Any = None) -> EngineStream:
        # Per probe fragment, every filter narrowing it (a star's fact: one per dimension).
        filters: dict[str, list[DynamicFilter]] = {}
        for found in plan.dynamic_filters if dynamic else ():
            filters.setdefault(found.probe, []).append(found)
        builds = {f.build for probe_filters in filters.values() for f in probe_filters}
        notes: list[str] = []
        # Fragments the engine reads from their sources itself (Spark: JDBC, spark.read)
        # are described to it, not started here. A dynamic filter's build side is always
        # read here: its keys narrow the probe before anything starts.
        direct: dict[str, Any] = {}
        candidates = [f for f in plan.fragments if f.name not in filters and f.name not in builds]
        for fragment, read in zip(candidates, await asyncio.gather(
                *(self._direct(engine, f, f.sql, params, notes) for f in candidates))):
            if read is not None:
                direct[fragment.name] = read
        first = [f for f in plan.fragments if f.name not in filters and f.name not in direct]
        opened = await self.reads.open_all([(f, f.sql, _bound(f, params)) for f in first], notes,
                                           memory)
        try:
            failure = next((s for s in opened.values() if isinstance(s, BaseException)), None)
            if failure is not None:
                raise failure
            await self._open_probes(plan, params, engine, filters, builds, opened, direct, notes,
                                    memory)
            # Small fragments are read whole before the engine starts: an engine planning
            # over streams sees no row counts, and DuckDB then orders a star's joins blind
            # (TPC-DS Q72: cross products of the dimensions, out of memory).
            small = [f.name for f in plan.fragments if f.name in opened
                     and not isinstance(opened[f.name], WholeStream)
                     and f.estimated_rows is not None and f.estimated_rows <= WHOLE_ROWS]
            for name, table in zip(small, await asyncio.gather(*(read_whole(opened[n], memory, n)
                                                                 for n in small))):
                opened[name] = table
        except BaseException:
            for stream in opened.values():
                if not isinstance(stream, BaseException):
                    await stream.aclose()
            raise
        # An engine that does not say otherwise holds every input whole (Spark does).
        holds = getattr(engine, "holds_inputs", True)
        feeds = [Feed(f.name, f.source, opened[f.name], memory, holds)
                 for f in plan.fragments if f.name in opened]
        residual = plan.residual_for(engine.name)
        assert residual is not None
        try:
            inputs = {feed.stats.name: feed.reader() for feed in feeds} | direct
            residual_params = _pick(plan.residual_params, params)
            stream = await start_engine(
                engine.execute(residual, inputs, residual_params) if into is None else
                engine.execute(residual, inputs, residual_params, into=into), feeds)  # type: ignore[call-arg]
        except BaseException as exc:
            for feed in feeds:
                await feed.close()
            if isinstance(exc, Exception):
                raise next((f.error for f in feeds if f.error is not None), exc) from exc
            raise
        pool = self.memory
        result = EngineStream(stream, feeds, engine.name, memory,
                              None if memory is None or pool is None else lambda: pool.forget(memory))
        result.notes = notes
        return result

    async def _open_probes(self, plan: QueryPlan, params: Sequence[Any], engine: Engine,
                           filters: dict[str, list[DynamicFilter]], builds: set[str],
                           opened: dict[str, Any], direct: dict[str, Any], notes: list[str],
                           memory: StatementMemory | None = None) -> None:
        """Narrow and start the probe fragments, in waves: a probe whose build is itself a
        probe (a chain: nation -> supplier -> partsupp) waits for that build's wave. The
        builds of a wave are read whole concurrently; its probes start together, so copies
        narrowed the same way are read once (FragmentReads)."""
        pending = [f for f in plan.fragments if f.name in filters]
        while pending:
            names = {f.name for f in pending}
            wave = [f for f in pending if all(d.build not in names for d in filters[f.name])]
            assert wave, "dynamic filters form a cycle"
            pending = [f for f in pending if f.name in names - {w.name for w in wave}]
            wanted = list(dict.fromkeys(d.build for f in wave for d in filters[f.name]))
            for name, table in zip(wanted, await asyncio.gather(*(read_whole(opened[n], memory, n)
                                                                  for n in wanted))):
                opened[name] = table
            starts = []
            for probe in wave:
                sql = self._narrowed(probe, filters[probe.name], opened, notes)
                # A probe the engine could read itself is still read here when it is a
                # build: its keys are needed.
                read = None if probe.name in builds else \
                    await self._direct(engine, probe, sql, params, notes)
                if read is not None:
                    direct[probe.name] = read
                else:
                    starts.append((probe, sql, _bound(probe, params)))
            started = await self.reads.open_all(starts, notes, memory)
            opened.update(started)
            failure = next((s for s in started.values() if isinstance(s, BaseException)), None)
            if failure is not None:
                raise failure

    async def _direct(self, engine: Engine, fragment: RemoteFragment, sql: str,
                      params: Sequence[Any], notes: list[str]) -> Any | None:
        """The engine's description of `fragment` when the engine reads it itself, else None
        (the gateway starts it and hands its rows over). EXPLAIN ANALYZE says which and why."""
        reads_directly = getattr(engine, "reads_directly", None)
        if reads_directly is None:
            return None
        read = await reads_directly(fragment, self.sources[fragment.source], sql,
                                    _bound(fragment, params))
        where = f"{fragment.name} on {fragment.source}"
        if isinstance(read, str):
            notes.append(f"Read {where}: handed over to {engine.name} as Arrow ({read})")
            return None
        notes.append(f"Read {where}: by {engine.name} itself, {read.summary}")
        return read

    def _narrowed(self, probe: RemoteFragment, found: list[DynamicFilter],
                  opened: dict[str, Any], notes: list[str]) -> str:
        """`probe`'s SQL restricted to the keys of its builds (read whole already), one
        condition per join key (its shape for the probe's source: planner.key_sets)."""
        dialect = self.sources[probe.source].dialect.name
        conditions = []
        for dynamic, index, build_field, column in ((d, i, b, c) for d in found
                                                     for i, (b, c) in enumerate(d.keys)):
            if not isinstance(opened[dynamic.build], WholeStream):
                if index == 0:
                    notes.append(f"Dynamic filter: {probe.name} not narrowed by {dynamic.build}, "
                                 "whose rows outgrew half the statement's share "
                                 "(fedgate.statement_memory): it is streamed instead")
                continue
            table = opened[dynamic.build].table
            keys = pc.unique(table[build_field]).drop_null().to_pylist() or [None]
            shape = shape_for(dialect, keys, dynamic.types[index] if index < len(dynamic.types) else None)
            targets = dynamic.targets[index] if index < len(dynamic.targets) else (column,)
            name = ", ".join(".".join(c for c in target if c) for target in targets)
            if shape.kind == "none":
                notes.append(f"Dynamic filter: {probe.name} not narrowed by the {shape.keys} keys of "
                             f"{dynamic.build} ({name}: {shape.describe()})")
                continue
            notes.append(f"Dynamic filter: {probe.name} narrowed to {shape.keys} keys of {dynamic.build} "
                         f"({name}: {shape.describe()})")
            conditions.append((column, keys))
        assert probe.narrow is not None
        return probe.narrow(conditions) if conditions else probe.sql


def _pick(numbers: Sequence[int], params: Sequence[Any]) -> list[Any]:
    """The statement's parameters a query text numbers $1, $2, ... (by statement number)."""
    return [params[n - 1] for n in numbers]


def _bound(fragment: RemoteFragment, params: Sequence[Any]) -> Sequence[Any]:
    if fragment.param_numbers:
        return _pick(fragment.param_numbers, params)
    return params if fragment.uses_params else ()


@dataclass
class Measured:
    """A plan run to the end for EXPLAIN ANALYZE: rows out, time, and what each part did
    (`inner`: the engine's stream with its feeds, or the one fragment's stream)."""

    rows: int
    seconds: float
    inner: Any


async def measure(executor: Executor, plan: QueryPlan, params: Sequence[Any],
                  engine: str | None = None, dynamic_filtering: bool = True,
                  memory: StatementMemory | None = None) -> Measured:
    """Run the plan to the end, discarding rows."""
    started = time.perf_counter()
    stream = await executor.run(plan, params, engine, dynamic_filtering, memory)
    rows = await count_rows(stream)
    elapsed = time.perf_counter() - started
    inner = stream.inner if isinstance(stream, Presented) else stream
    if isinstance(inner, Metered):
        inner = inner.inner
    return Measured(rows, elapsed, inner)


def figures(measured: Measured) -> dict[str, dict[str, Any]]:
    """EXPLAIN (ANALYZE, FORMAT JSON)'s numbers: per fragment name, and "engine"
    (planner.explain_json.plan_document puts them on the plan's nodes)."""
    inner = measured.inner
    out: dict[str, dict[str, Any]] = {}
    if isinstance(inner, EngineStream):
        for feed in inner.feeds:
            s = feed.stats
            out[s.name] = {"Actual Rows": s.rows, "Bytes": s.bytes,
                           "Actual Total Time": round(s.seconds * 1000, 3)}
        out["engine"] = {"Actual Rows": measured.rows,
                         "Actual Total Time": round(measured.seconds * 1000, 3),
                         "Notes": list(inner.notes)}
    else:
        out["frag_0"] = {"Actual Rows": measured.rows,
                         "Actual Total Time": round(measured.seconds * 1000, 3)}
    return out


def stream_figures(stream: Any) -> dict[str, dict[str, Any]] | None:
    """What a stream `Executor.run` returned did (so far), in `figures`' shape, for a
    statement the status page keeps; None for a plan without an engine."""
    inner = stream.inner if isinstance(stream, Presented) else stream
    if isinstance(inner, Metered):
        inner = inner.inner
    if not isinstance(inner, EngineStream):
        return None
    out: dict[str, dict[str, Any]] = {}
    for feed in inner.feeds:
        s = feed.stats
        out[s.name] = {"Actual Rows": s.rows, "Bytes": s.bytes,
                       "Actual Total Time": round(s.seconds * 1000, 3)}
    ended = inner.finished if inner.finished is not None else time.perf_counter()
    out["engine"] = {"Actual Rows": inner.rows,
                     "Actual Total Time": round((ended - inner.started) * 1000, 3)}
    return out


async def analyze(executor: Executor, plan: QueryPlan, params: Sequence[Any],
                  engine: str | None = None, why: str = "", dynamic_filtering: bool = True) -> list[str]:
    """Run the plan to the end, discarding rows, and report what each part did."""
    measured = await measure(executor, plan, params, engine, dynamic_filtering)
    return analysis_lines(plan, measured, engine or executor.default, why)


def analysis_lines(plan: QueryPlan, measured: Measured, engine: str, why: str = "") -> list[str]:
    """EXPLAIN ANALYZE's text: the plan, then what each part did."""
    rows, elapsed, inner = measured.rows, measured.seconds, measured.inner
    lines = list(plan.explain(engine, why))
    if isinstance(inner, EngineStream):
        lines.extend(inner.notes)
        for feed in inner.feeds:
            s = feed.stats
            lines.append(f"Analyze {s.name} on {s.source}: {s.rows} rows, {s.bytes} bytes fetched "
                         f"in {s.seconds * 1000:.1f} ms")
        lines.append(f"Analyze engine {inner.engine}: {rows} rows out, "
                     f"{elapsed * 1000:.1f} ms in all")
    else:
        fragment = plan.fragments[0] if plan.fragments else None
        where = f"frag_0 on {fragment.source}" if fragment else "engine"
        lines.append(f"Analyze {where}: {rows} rows in {elapsed * 1000:.1f} ms (no engine)")
    return lines
