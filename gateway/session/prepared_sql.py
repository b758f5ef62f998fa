"""SQL-level prepared statements: PREPARE name [(type, ...)] AS statement, EXECUTE name [(arg, ...)].

As in PostgreSQL, PREPARE and the extended protocol's Parse share one namespace: PREPARE
prepares its statement exactly as Parse would (`prepare_text`: relayed to its PostgreSQL
source and described there, or planned) and keeps it among the session's named
statements, so DEALLOCATE, DISCARD ALL, and a Bind of that name all find it. A prepared
statement is not transactional: a PREPARE inside a block that rolls back stays.

EXECUTE binds the arguments as text parameters (`gateway.session.prepared_args`) and runs
the statement on the road it was prepared for, answering as the statement does: its rows
and its own command tag (SELECT n, UPDATE n, ...). Over the extended protocol, a Describe
of EXECUTE says what the prepared statement returns (`describe_execute`).
`PreparedSqlMixin` builds on the relay (`gateway.session.relay.RelayMixin`).
"""

from __future__ import annotations

import time

from gateway.relay.relayed import relayed_description
from gateway.relay.routing import verb_of
from gateway.session.prepared_args import argument_texts, declared_types, parse_arguments
from gateway.session.enum_params import decode_params
from gateway.session.relay import RelayMixin
from gateway.state.portals import Portal, Prepared
from gateway.state.statements import Utility, parse_utility
from pgwire.errors import DUPLICATE_PREPARED_STATEMENT, SYNTAX_ERROR, PgError
from pgwire.protocol import encoder
from pgwire.types.rows import row_description

# PostgreSQL's PreparableStmt: what PREPARE may name (a parenthesized SELECT starts "(").
_PREPARABLE = frozenset({"select", "with", "values", "table", "insert", "update", "delete", "merge"})


class PreparedSqlMixin(RelayMixin):
    async def prepare_text(self, sql: str, param_types: tuple[int, ...]) -> Prepared:
        """One statement prepared as Parse prepares it: relayed when its route says so
        (and its source can describe it to clients), planned otherwise."""
        route = await self.route_fresh(sql) if sql else None
        prepared = await self.prepare_relay(route, sql, param_types) if route else None
        if prepared is None:
            prepared = await self.prepare(sql, param_types)
        return prepared

    async def run_prepared_sql(self, portal: Portal, describe: bool) -> None:
        """PREPARE or EXECUTE, run for the portal holding it."""
        utility = portal.statement.utility
        assert utility is not None and utility.name is not None
        if utility.kind == "prepare":
            await self._prepare_named(portal.statement.sql, utility)
            self.write(encoder.command_complete("PREPARE"))
        else:
            await self._execute_named(utility, portal.formats, describe)
        portal.ran_to_end()

    async def _prepare_named(self, sql: str, utility: Utility) -> None:
        assert utility.name is not None and utility.value is not None
        declared = declared_types(utility.args, utility.args_at)
        inner = utility.value
        verb = verb_of(inner)
        if verb not in _PREPARABLE and not inner.startswith("("):
            word = inner.split(None, 1)[0] if inner.split() else inner
            at = sql.rfind(inner)
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{word}"',
                          position=at + 1 if at >= 0 else None)
        prepared = await self.prepare_text(inner, declared)
        # Checked after the statement is prepared, as PostgreSQL does: a statement that
        # does not prepare reports its own error first.
        if utility.name in self.statements:
            raise PgError(DUPLICATE_PREPARED_STATEMENT, f'prepared statement "{utility.name}" already exists')
        prepared.prepared_at, prepared.from_sql = time.time(), sql
        self.statements[utility.name] = prepared

    def _bound(self, utility: Utility) -> tuple[Prepared, list[bytes | None]]:
        """EXECUTE's statement, and its arguments as the statement's text parameters."""
        assert utility.name is not None
        prepared = self.statement(utility.name)
        arguments = parse_arguments(utility.args)
        if len(arguments) != len(prepared.param_oids):
            raise PgError(SYNTAX_ERROR, f'wrong number of parameters for prepared statement "{utility.name}"',
                          detail=f"Expected {len(prepared.param_oids)} parameters but got {len(arguments)}.")
        return prepared, argument_texts(arguments, prepared.param_oids)

    def _decoded(self, prepared: Prepared, texts: list[bytes | None]) -> list:
        zone = self.settings.timezone
        types = prepared.plan.param_types if prepared.plan is not None else ()
        return decode_params(types, prepared.param_oids, [0] * len(texts), texts, zone)

    async def explained_execute(self, sql: str) -> tuple[str, list, tuple[str | None, ...]]:
        """What EXPLAIN EXECUTE explains: the prepared statement's text, the arguments'
        values, and the parameters' types (by name, as the planner takes them)."""
        utility = parse_utility(sql)
        assert utility is not None and utility.kind == "execute"
        prepared, texts = self._bound(utility)
        declared = tuple(self.type_name(oid) for oid in prepared.param_oids)
        return prepared.sql, self._decoded(prepared, texts), declared

    async def _execute_named(self, utility: Utility, formats: tuple[int, ...], describe: bool) -> None:
        prepared, texts = self._bound(utility)
        if prepared.route is not None:
            run = Portal(prepared, [], formats, raw_params=texts, param_formats=())
            if describe and prepared.remote is not None:
                found = prepared.remote.description(tuple(formats))
                if found is not None:  # the simple protocol sends no NoData
                    self.write(found)
            await self.relay(run, 0)
            return
        run = Portal(prepared, self._decoded(prepared, texts), formats)
        await self.execute(run, 0, describe=describe)

    async def describe_execute(self, prepared: Prepared, formats: tuple[int, ...]) -> bytes:
        """The RowDescription (or NoData) a Describe of EXECUTE answers: that of the
        statement it runs. Of a name not prepared, NoData, as PostgreSQL describes it; the
        Execute then says it does not exist."""
        utility = prepared.utility
        assert utility is not None and utility.name is not None
        named = self.statements.get(utility.name)
        if named is None:
            return encoder.no_data()
        if named.route is not None:
            return relayed_description(named, formats)
        schema = await self.describe(named)
        return row_description(schema, formats) if schema is not None else encoder.no_data()
