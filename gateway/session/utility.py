"""Statements a session answers itself (SET, SHOW, EXPLAIN, COPY TO, transaction control).

`gateway.session.utility_results` computes their results; this mixin runs them for the
session: EXPLAIN plans (or reports the relay), transaction control also reaches the
sources the block touched (`gateway.relay.links`), and the results are written as
PostgreSQL would. It builds on the cursors' mixin (`gateway.session.cursors`), which
runs DECLARE/FETCH/MOVE/CLOSE.
"""

from __future__ import annotations

import pyarrow as pa

from connectors.base import FragmentExplainer, SettingChecker
from gateway.session import copy_out, signals
from gateway.session import utility_results as util
from gateway.session.cursors import CursorMixin
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from gateway.executor.execute import analysis_lines, figures, measure
from gateway.relay.relayed import spelled_out
from gateway.state.portals import Portal, Prepared
from pgwire.protocol import encoder
from pgwire.types.rows import encode_rows, resolve_formats, row_description
from gateway.state.activity import note_figures, note_plan
from gateway.state.settings import is_checked_by_source
from gateway.state.statements import Utility, is_execute
from planner.explain_json import plan_document, relay_document
from planner.query_plan import QueryPlan

_TRANSACTION_KINDS = frozenset({"begin", "commit", "rollback", "savepoint", "release", "rollback_to"})
_CURSOR_KINDS = frozenset({"declare", "fetch", "move", "close"})


class UtilityMixin(CursorMixin):
    async def execute_utility(self, portal: Portal, describe: bool) -> None:
        utility = portal.statement.utility
        assert utility is not None
        if utility.kind == "copy":  # COPY ... TO STDOUT streams its own messages
            assert utility.value is not None
            await copy_out.run(self, utility.value)
            portal.ran_to_end()
            return
        if utility.kind in _TRANSACTION_KINDS:
            await self._transaction(portal, utility)
            return
        if utility.kind in ("prepare", "execute"):
            await self.run_prepared_sql(portal, describe)
            return
        if utility.kind in _CURSOR_KINDS:
            await self._cursor_statement(portal, utility, describe)
            return
        if utility.kind == "signal":
            assert utility.name is not None and utility.value is not None
            pid = signals.target_pid(portal, utility.value)
            rows = signals.signal(self, utility.name, pid)
            self._utility_done(portal, util.UtilityResult("SELECT 1", rows), describe)
            return
        # EXPLAIN EXECUTE explains the prepared statement's text, run with the arguments.
        target, params, declared = utility.value, [], ()
        if utility.kind == "explain" and target and is_execute(target):
            target, params, declared = await self.explained_execute(target)
        route = self.links.route(target) if utility.kind == "explain" and target else None
        if route is not None:
            assert target is not None
            route = spelled_out(self.ctx.router, route, target)  # EXPLAIN shows the respelled text
        as_json = "JSON" in utility.options
        if route is not None and route.move:
            if as_json:
                raise PgError(FEATURE_NOT_SUPPORTED, "EXPLAIN (FORMAT JSON) of a move between "
                              "sources is not supported; EXPLAIN it as text")
            lines = await self.explain_move(route, utility.analyze)
            result = util.UtilityResult("EXPLAIN", util.text_rows(["QUERY PLAN"], [(line,) for line in lines]))
        elif route is not None and not utility.analyze and as_json:
            result = util.UtilityResult("EXPLAIN", util.json_rows(relay_document(route.source, route.sql)))
        elif route is not None and not utility.analyze:
            lines = [f'Relay: the whole statement goes to source "{route.source}" (PostgreSQL '
                     "evaluates all of it; no engine)",
                     f"  Remote SQL: {route.sql or 'the statement as written'}"]
            result = util.UtilityResult("EXPLAIN", util.text_rows(["QUERY PLAN"], [(line,) for line in lines]))
        elif utility.kind == "explain":
            assert target is not None
            plan = await self.plan_query(target, declared)
            engine, why = self.engine_for(plan)
            note_plan(self, plan)  # the status page draws it while it runs
            if utility.analyze:
                await self.announce_engine_start(self.ctx.executor, plan, engine)
            measured = await measure(self.ctx.executor, plan, params, engine, self.dynamic_filtering,
                                     self.statement_memory()) if utility.analyze else None
            numbers = figures(measured) if measured is not None else None
            if numbers is not None:
                note_figures(self, numbers)  # and keeps it, with its figures, once done
            if as_json:
                result = util.UtilityResult("EXPLAIN", util.json_rows(plan_document(plan, engine, why, numbers)))
                self._utility_done(portal, result, describe)
                return
            lines = analysis_lines(plan, measured, engine, why) if measured is not None \
                else plan.explain(engine, why)
            lines = [*lines, *self.fragment_lines(plan)]
            result = util.UtilityResult("EXPLAIN", util.text_rows(["QUERY PLAN"], [(line,) for line in lines]))
        else:
            if utility.kind == "set" and utility.name and utility.value \
                    and is_checked_by_source(utility.name, utility.value):
                await self._check_at_sources(utility.name, utility.value)
            result = util.HANDLERS[utility.kind](self, utility)
        self._utility_done(portal, result, describe)

    async def _check_at_sources(self, name: str, value: str) -> None:
        """A string setting the gateway forwards is checked by its PostgreSQL sources at
        SET, as PostgreSQL checks it then, not at the next statement that reaches one. A
        source that cannot be reached now is not asked: the value is checked by it when
        it is sent there, before a statement."""
        for source_name, source in self.ctx.sources.items():
            if isinstance(source, SettingChecker) and source_name not in self.ctx.system_schemas:
                try:
                    await source.check_setting(name, value)
                except PgError as exc:
                    if not exc.sqlstate.startswith("08"):
                        raise

    def fragment_lines(self, plan: QueryPlan) -> list[str]:
        """What the sources say of how they read their fragments (a file source: the
        partition folders read and pruned), under the plan's own lines."""
        lines = []
        for fragment in plan.fragments:
            source = self.ctx.sources.get(fragment.source)
            if isinstance(source, FragmentExplainer):
                lines.extend(f"  {line}" for line in source.explain_fragment(fragment.sql))
        return lines

    async def utility_schema(self, prepared: Prepared) -> pa.Schema | None:
        """What Describe says of a statement the session answers itself."""
        assert prepared.utility is not None
        if prepared.utility.kind == "fetch":
            return await self.fetch_schema(prepared)
        if prepared.utility.kind == "signal":
            return signals.result_schema(prepared.utility.name or "")
        return util.result_schema(prepared.utility)

    async def _cursor_statement(self, portal: Portal, utility: Utility, describe: bool) -> None:
        if utility.kind == "declare":
            await self.declare(portal, utility)
        elif utility.kind == "close":
            self.close_cursor(portal, utility)
        else:
            await self.fetch(portal, utility, describe)

    async def _transaction(self, portal: Portal, utility: Utility) -> None:
        """Transaction control: the session's status, and the sources the block touched."""
        kind = utility.kind
        error: PgError | None = None
        if kind in ("commit", "rollback") and self.in_block:
            try:
                await self.links.end(commit=kind == "commit")
            except PgError as err:
                error = err
        if kind == "begin" and not self.in_block:
            self.links.block_began(portal.statement.sql)
        result = util.HANDLERS[kind](self, utility)
        if kind in ("savepoint", "release", "rollback_to"):
            await self.links.savepoint(kind, utility.name or "")
        if error is not None:
            raise error
        self._utility_done(portal, result, False)

    def _utility_done(self, portal: Portal, result: util.UtilityResult, describe: bool) -> None:
        for notice in result.notices:
            self.write(encoder.notice_response("WARNING", "25001" if "already" in notice else "25P01", notice))
        if result.rows is not None:
            if describe:
                self.write(row_description(result.rows.schema, portal.formats))
            formats = resolve_formats(portal.formats, result.rows.num_columns)
            # (SHOW and EXPLAIN are tagged as themselves, without a count, as PostgreSQL does)
            self.write(encode_rows(result.rows, formats, timezone=self.settings.timezone))
        self.write(encoder.command_complete(result.tag))
        portal.ran_to_end()
