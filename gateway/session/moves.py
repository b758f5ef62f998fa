"""Moves in a session: `INSERT INTO src.t [(cols)] <query>` and `CREATE TABLE src.t AS
<query> [WITH NO DATA]` whose query reads other sources than the target
(docs/design.md §5, "Moves").

`gateway.relay.routing` gives such a statement a `Route.move` to the target's source.
The query is planned and run as any federated read (the session's engine, DuckDB or
Spark); its rows go into the target through its bulk path (`gateway.executor.moves`),
in one transaction of the target's. Inside an explicit block a SQLite or MySQL target's
move joins the block's connection there, and a PostgreSQL target's move runs on the
block's relayed link, by binary COPY through the relay (`connectors.postgres.link_bulk_write`).
RETURNING and ON CONFLICT into PostgreSQL take that link too (its own transaction
outside a block): the rows go into a staging table, and the client's INSERT, aimed at
it, answers as PostgreSQL does. The statements built for that, and the probes that type
a move's parameters, are `gateway.session.move_statements`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from sqlglot import exp

from connectors.bulk import FILE_KINDS, BulkWriter
from connectors.ddl_types import create_table
from connectors.engines.spark_writes import StageInto
from connectors.postgres.bulk_write import PostgresBulkWriter
from connectors.postgres.link_bulk_write import LinkBulkWriter
from connectors.staged_write import StagedBulkWriter
from gateway.executor.moves import BULK_PATHS, open_target, pour, written_columns
from gateway.relay.routing import move_target
from gateway.session.core import SessionCore
from gateway.session.enum_params import decode_params
from gateway.session.move_statements import (bare_outputs, final_params, final_probe, folded,
                                              last_param, move_query, outside_params, parameters,
                                              result_columns, staged_insert, target_probe,
                                              unknown_outputs)
from gateway.state.portals import Portal, Prepared
from gateway.state.route import Route
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.protocol import encoder
from pgwire.types.pg_type import TEXT
from pgwire.types.rows import resolve_formats
from planner import QueryPlan

log = logging.getLogger("fedgate.moves")


def move_tag(creates: bool, count: int) -> str:
    """PostgreSQL's tags: CREATE TABLE AS counts its rows as a SELECT does."""
    return f"SELECT {count}" if creates else f"INSERT 0 {count}"


async def _rolled_back(writer: BulkWriter | LinkBulkWriter | StagedBulkWriter, source: str) -> None:
    """Roll a failed move's writer back. Its own failure is only logged: the move's error
    is the one the client hears. (A CopyFail queued behind megabytes of rows already sent
    may not be answered within FAIL_WITHIN_S: the writer has closed its link then, and the
    client still hears 57014.)"""
    try:
        await writer.finish(commit=False)
    except Exception as err:  # noqa: BLE001 - see above
        log.warning("rolling back a move into %s failed: %s", source,
                    err.message if isinstance(err, PgError) else f"{type(err).__name__}: {err}")


class MoveMixin(SessionCore):
    async def move_param_oids(self, route: Route, declared_oids: tuple[int, ...]) -> tuple[int, ...]:
        """The parameters of a move prepared by a driver: its query's, typed as the query
        is planned (declared types first; into PostgreSQL, an output that is a parameter
        alone as its target column, `target_probe`). Those beyond the query (ON CONFLICT's
        SET, RETURNING) are the final INSERT's on a PostgreSQL target, typed there by
        PostgreSQL (`final_probe`)."""
        tree = route.tree
        assert tree is not None
        if not parameters(tree):
            return declared_oids
        query = move_query(tree)
        outside = outside_params(tree)
        if outside and route.kind != "postgres":
            raise PgError(FEATURE_NOT_SUPPORTED, f"{route.verb.upper()} ... reading other sources "
                          f"than its target takes parameters in its query only into {route.kind} "
                          "(into PostgreSQL, in ON CONFLICT and RETURNING too)")
        schema = getattr(self.ctx.sources[route.source], "schema", "public")
        declared = list(declared_oids)
        bare = [(i, n) for i, n in bare_outputs(query) if n > len(declared) or not declared[n - 1]]
        if bare and route.kind == "postgres" and isinstance(tree, exp.Insert):
            # As PostgreSQL types them: by the target's columns, not by the query alone.
            numbers = sorted({n for _, n in bare})
            declared += [0] * (max(numbers) - len(declared))
            remote = await self.links.prepare(replace(route, sql=None),
                                              target_probe(tree, schema, bare), ())
            for n, oid in zip(numbers, remote.param_oids):
                declared[n - 1] = oid
        oids = list((await self.prepare(query.sql(dialect="postgres"), tuple(declared))).param_oids
                    if parameters(query) else declared)
        if not outside:
            return tuple(oids)
        oids += [0] * (max(outside) - len(oids))
        remote = await self.links.prepare(replace(route, sql=None), final_probe(tree, schema),
                                          tuple(oids[n - 1] for n in outside))
        for n, oid in zip(outside, remote.param_oids):
            oids[n - 1] = oids[n - 1] or oid
        return tuple(oid or TEXT.oid for oid in oids)

    async def run_move(self, route: Route, sql: str, bound: Portal | None = None,
                       answer: bool = True, notes: list[str] | None = None) -> int:
        """Run a move and give its rows' count; `bound`: the client's portal of a prepared
        one, whose parameters its query takes. `answer`: tell the client its tag (EXPLAIN
        ANALYZE answers with its plan instead, and gets `notes` of where the time went)."""
        tree = route.tree
        assert tree is not None
        target = move_target(tree, values=True)
        assert target is not None
        creates = isinstance(tree, exp.Create)
        self._refuse_unsupported(route, tree, creates)
        if not answer and (tree.args.get("returning") is not None
                           or tree.args.get("conflict") is not None):
            # Their answer is the target's own INSERT's, relayed to the client as it comes.
            raise PgError(FEATURE_NOT_SUPPORTED, "EXPLAIN ANALYZE of a move with RETURNING or "
                          "ON CONFLICT is not supported; EXPLAIN it without ANALYZE")
        table = folded(target.this)
        named = ([folded(c) for c in tree.this.expressions]
                 if isinstance(tree.this, exp.Schema) else None)
        query = move_query(tree)
        param_oids = bound.statement.param_oids if bound is not None else ()
        prepared = await self.prepare(query.sql(dialect="postgres"), param_oids)
        params: list = []
        if bound is not None and bound.raw_params:
            assert prepared.plan is not None
            params = decode_params(prepared.plan.param_types, prepared.param_oids,
                                   resolve_formats(bound.param_formats, len(bound.raw_params)),
                                   bound.raw_params, self.settings.timezone)
            # The query takes its own; those beyond it are the final INSERT's (`final_params`).
            params = params[:last_param(query)]
        source = self.ctx.sources[route.source]
        # RETURNING and ON CONFLICT: through a staging table, on the session's link into
        # PostgreSQL, on the target's connection into SQLite and MySQL.
        final = None if creates else staged_insert(
            tree, table, getattr(source, "schema", "public") if route.kind == "postgres" else None)
        if self.executors_refusal(route, prepared.plan, final) is None:
            return await self._move_by_executors(route, prepared, params, table, named, answer,
                                                 notes if notes is not None else [])
        on_link = route.kind == "postgres" and (self.in_block or final is not None)
        if on_link and self.in_block:
            assert prepared.plan is not None
            if any(f.source == route.source for f in prepared.plan.fragments):
                # The block's link would carry the query's read and the COPY at once.
                raise PgError(FEATURE_NOT_SUPPORTED, f'a move into source "{route.source}" '
                              "inside a transaction block cannot also read that source",
                              hint="Run it outside the block; it is one transaction of its own.")
        if on_link:
            link, prefix = await self.links.block_link(route)
        else:
            held = await self.links.block_writer(route)  # (checks the write first)
        portal = Portal(prepared, params, ())
        writer = None
        try:
            await self.start(portal)
            assert portal.stream is not None
            if on_link:
                writer = LinkBulkWriter(link, prefix, table, getattr(source, "schema", "public"),
                                        final, self.links.state, own=not self.in_block,
                                        formats=bound.formats if bound is not None else None,
                                        final_params=final_params(tree, bound))
            else:
                writer = await open_target(source, route.kind, route.source, table, held, creates,
                                           final, self.ctx.config.engine.temp_directory)
            if creates:
                await writer.create(self.create_ddl(route, table, portal.stream.schema),
                                    portal.stream.schema)
            columns = written_columns(table, await writer.columns(), named,
                                      len(portal.stream.schema))
            if isinstance(writer, LinkBulkWriter):
                writer.written = [c.name for c in columns]
            elif isinstance(writer, StagedBulkWriter):
                await writer.open_stage([c.name for c in columns], await self.returning_schema(route))
            count = 0
            if not self._no_data(tree):
                count = await pour(portal.stream, writer, table, columns,
                                   unknown_outputs(query), self.settings.timezone)
        except BaseException:
            await portal.close()
            if writer is not None:
                await _rolled_back(writer, route.source)
            raise
        await portal.close()
        await writer.finish(commit=True)
        if creates:
            self.links.ddl = True
            if not self.in_block:
                self.links.ddl = False
                await self.ctx.catalog_changed()
        elif route.kind in FILE_KINDS and count:
            await self.ctx.catalog_changed()  # the folder has one more file
        if isinstance(writer, StagedBulkWriter):
            assert writer.result is not None
            self.answer_write(writer.result, describe=bound is None,
                              formats=bound.formats if bound is not None else ())
            return count
        if final is not None:
            return count  # PostgreSQL's own answer to the staged INSERT went to the client
        if answer:
            self.write(encoder.command_complete(move_tag(creates, count)))
        return count

    def executors_refusal(self, route: Route, plan: QueryPlan | None, final: object) -> str | None:
        """None when the move's rows go from Spark's executors into the PostgreSQL
        target themselves (connectors.engines.spark_writes); otherwise why not, or ""
        when the move does not run on Spark at all."""
        if route.kind != "postgres" or plan is None or plan.is_passthrough:
            return ""
        if self.engine_for(plan)[0] != "spark":
            return ""
        engine = self.ctx.executor.engines["spark"]
        chosen = self.settings.values["fedgate.spark_writes"]
        if chosen == "off":
            return "fedgate.spark_writes = off"
        if chosen == "auto" and not engine.cluster:  # type: ignore[attr-defined]
            return "a local Spark (fedgate.spark_writes = auto: on a cluster only)"
        if final is not None:
            return "RETURNING and ON CONFLICT are the target's own INSERT's"
        if self.in_block:
            return "inside a transaction block the move joins the block's link"
        tree = route.tree
        if tree is not None and self._no_data(tree):
            return "WITH NO DATA writes no rows"
        return engine.writes_stage(route.source)  # type: ignore[attr-defined]

    async def _move_by_executors(self, route: Route, prepared: Prepared, params: list,
                                 table: str, named: list[str] | None, answer: bool,
                                 notes: list[str]) -> int:
        """Spark's executors write the query's rows into a stage by JDBC, in parallel, one
        transaction per partition; the stage then goes into the target in one
        transaction, which PostgreSQL's own assignment casts and constraints check."""
        tree = route.tree
        assert tree is not None and prepared.plan is not None
        creates = isinstance(tree, exp.Create)
        await self.links.block_writer(route)  # a write's checks (outside a block: no writer)
        schema = await self.describe(prepared)
        assert schema is not None
        writer = await PostgresBulkWriter.open(self.ctx.sources[route.source], table)
        try:
            if creates:
                await writer.create(self.create_ddl(route, table, schema), schema)
            columns = written_columns(table, await writer.columns(), named, len(schema))
            stage = StageInto(route.source, await writer.open_stage(
                [(f"c{i}", name, typmod) for i, (_, name, typmod) in enumerate(result_columns(schema), 1)]),
                tuple(f"c{i}" for i in range(1, len(schema) + 1)))
            executor = self.ctx.executor  # (outside a block: no link of the session's reads)
            await self.announce_engine_start(executor, prepared.plan, "spark")
            began = time.perf_counter()
            stream = await executor.run(prepared.plan, params, "spark", self.dynamic_filtering,
                                        self.statement_memory(), into=stage)
            try:
                async for _ in stream:  # none: the rows went into the stage
                    pass
            finally:
                await stream.aclose()
            written = time.perf_counter()
            count = await writer.move_stage(columns, unknown_outputs(move_query(tree)))
            notes.append(f"Spark's executors wrote {count} rows into stage {stage.table} in "
                         f"{(written - began) * 1000:.3f} ms; the stage went into the table in "
                         f"{(time.perf_counter() - written) * 1000:.3f} ms")
            log.info("move into %s.%s: %s", route.source, table, notes[-1])
        except BaseException:
            await _rolled_back(writer, route.source)
            raise
        await writer.finish(commit=True)
        if creates:
            await self.ctx.catalog_changed()
        if answer:
            self.write(encoder.command_complete(move_tag(creates, count)))
        return count

    async def explain_move(self, route: Route, analyze: bool) -> list[str]:
        """EXPLAIN of a move: where the rows go and how, the DDL a CREATE TABLE AS sends,
        then the query's own plan. ANALYZE runs the move, as PostgreSQL's does an INSERT,
        and adds the rows it moved and its time."""
        lines = await self._move_plan(route)
        if not analyze:
            return lines
        began = time.perf_counter()
        notes: list[str] = []
        count = await self.run_move(route, route.sql or "", answer=False, notes=notes)
        return [*lines, *notes, f"Rows moved: {count}",
                f"Execution Time: {(time.perf_counter() - began) * 1000:.3f} ms"]

    async def _move_plan(self, route: Route) -> list[str]:
        tree = route.tree
        assert tree is not None
        target = move_target(tree, values=True)
        assert target is not None
        table = folded(target.this)
        prepared = await self.prepare(move_query(tree).sql(dialect="postgres"), ())
        assert prepared.plan is not None
        kind = {"postgres": "PostgreSQL", "mysql": "MySQL", "sqlite": "SQLite"}.get(route.kind, route.kind)
        clauses = tree.args.get("returning") or tree.args.get("conflict")
        refusal = self.executors_refusal(route, prepared.plan, clauses)
        if refusal is None:
            lines = [f'Move: Spark\'s executors write the query\'s rows by JDBC into a stage beside '
                     f'table "{table}" of source "{route.source}" ({kind}), one transaction per '
                     "partition; the stage goes into the table in one transaction there",
                     "  Values converted to the target columns' types by PostgreSQL's own "
                     "assignment casts"]
        else:
            lines = [f'Move: the query\'s rows go into table "{table}" of source "{route.source}" '
                     f"({kind}) by {BULK_PATHS.get(route.kind, 'its writes')}, in one transaction there",
                     "  Values converted to the target columns' types by PostgreSQL's assignment casts"]
            if refusal:
                lines.append(f"  Not written by Spark's executors: {refusal}")
        if isinstance(tree, exp.Create):
            ddl = self.create_ddl(route, table, await self.describe(prepared))
            if ddl is not None:
                lines.append(f"  DDL sent first: {ddl}")
            if self._no_data(tree):
                lines.append("  WITH NO DATA: the query is not run")
        engine, why = self.engine_for(prepared.plan)
        return lines + prepared.plan.explain(engine, why)

    def create_ddl(self, route: Route, table: str, schema: object) -> str | None:
        """The CREATE TABLE of a CREATE TABLE AS, from the query's result types (None
        for a file source: its file is made of the result's Arrow types)."""
        if route.kind in FILE_KINDS:
            return None
        columns = result_columns(schema)  # type: ignore[arg-type]
        remote_schema = getattr(self.ctx.sources[route.source], "schema", None) \
            if route.kind == "postgres" else None
        return create_table(route.kind, exp.table_(table, db=remote_schema, quoted=True), columns)

    @staticmethod
    def _no_data(tree: exp.Expression) -> bool:
        properties = tree.args.get("properties")
        return properties is not None and any(
            isinstance(p, exp.WithDataProperty) and p.args.get("no")
            for p in properties.expressions)

    def _refuse_unsupported(self, route: Route, tree: exp.Expression, creates: bool) -> None:
        verb = "CREATE TABLE AS" if creates else "INSERT ... SELECT"
        for clause, spelled, into in (("returning", "RETURNING", ("postgres", "sqlite", "mysql")),
                                      ("conflict", "ON CONFLICT", ("postgres", "sqlite"))):
            if tree.args.get(clause) is not None and route.kind not in into:
                raise PgError(FEATURE_NOT_SUPPORTED, f"{spelled} is not supported in an INSERT "
                              f'into a {route.kind} source ("{route.source}") whose query reads '
                              f"other sources (only into {', '.join(into)})")
        if route.kind not in ("postgres", "mysql", "sqlite", *FILE_KINDS):
            from connectors.writes import check_writable
            check_writable(route.kind, route.source)
        if self.in_block and route.kind in FILE_KINDS:
            raise PgError(FEATURE_NOT_SUPPORTED,
                          f'{verb} into source "{route.source}" ({route.kind}) cannot run '
                          "inside a transaction block: its files have no transaction to join",
                          hint="Run it outside the block: what it writes appears whole or not "
                               "at all.")
        if self.in_block and creates and route.kind == "mysql":
            why = "MySQL commits a block's transaction at CREATE TABLE"
            raise PgError(FEATURE_NOT_SUPPORTED,
                          f'{verb} into source "{route.source}" from other sources cannot run '
                          f"inside a transaction block: {why}",
                          hint="Run it outside the block; it is one transaction of its own.")
        if creates and (tree.args.get("exists") or tree.args.get("replace")):
            raise PgError(FEATURE_NOT_SUPPORTED, f"{verb} with IF NOT EXISTS or OR REPLACE "
                          "reading other sources is not supported")
