"""Which statements go straight to one PostgreSQL source, and which go to the planner.

A statement whose tables all belong to one PostgreSQL source is sent there as the client
wrote it (the relay, `connectors.postgres.link`): PostgreSQL gives PostgreSQL's answer, and
the gateway adds no planning, no Arrow and no re-encoding. Writes (DML, DDL, COPY FROM,
VACUUM ...) always take this road to the source that owns their table.

Sending the client's text unchanged is right only when PostgreSQL resolves the names as
we do: every table is unqualified (the link's search_path is the source's schema) and
the statement calls nothing whose answer is the gateway's own (current_schema(),
version(), the emulated catalog). A statement that qualifies its tables with the
source's name (`pg.t`, `"pg"."t"`, `fedgate.pg.t`) is relayed too, each qualifier
respelled as the source's schema (`gateway.relay.respell`; `Route.respelled`); one that
names the source where respelling does not reach goes to the planner (a write: 0A000).
Reads of tables the gateway does not know in that source go to the planner, which says
so as PostgreSQL would.

Routes are cached by the statement's shape: the text with literals blanked out, so
pgbench's `... WHERE aid = 4711` is decided once, whatever the number, and
`... FROM pg.pgbench_accounts WHERE aid = 4711` too.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from connectors.bulk import FILE_KINDS
from pgwire.errors import (FEATURE_NOT_SUPPORTED, READ_ONLY_SQL_TRANSACTION, PgError)
from gateway.pg_catalog.callable import CALLABLE_FUNCTIONS
from gateway.relay.respell import Respelled, respelled
from gateway.relay.shapes import shape_of
from planner import access
from gateway.state.access import schema_denied
from gateway.state.route import Route
from planner.function_check import check_functions

if TYPE_CHECKING:
    from gateway.state.context import ServerContext

CACHE_LIMIT = 20_000
WRITE_VERBS = frozenset({"insert", "update", "delete", "merge", "create", "drop", "alter",
                         "truncate", "vacuum", "analyze", "analyse", "comment", "grant",
                         "revoke", "reindex", "cluster", "refresh", "lock", "copy"})
READ_VERBS = frozenset({"select", "with", "values", "table"})
# Functions whose answer is the gateway's, not the source's: never relayed.
GATEWAY_FUNCTIONS = frozenset({
    "current_schema", "current_schemas", "current_database", "current_catalog", "version",
    "current_setting", "set_config", "inet_server_addr", "inet_server_port", "pg_backend_pid",
    "has_table_privilege", "has_schema_privilege", "has_database_privilege", "to_regclass",
    "obj_description", "col_description", "format_type", "current_user", "session_user", "user"})
_GATEWAY_EXPRESSIONS = tuple(getattr(exp, name) for name in (
    "CurrentSchema", "CurrentUser", "CurrentDatabase", "CurrentVersion", "CurrentCatalog",
    "SessionUser") if hasattr(exp, name))

_VERB = re.compile(r"\s*(?:/\*.*?\*/\s*|--[^\n]*\n\s*)*([A-Za-z]+)", re.S)
_COPY_WHERE = re.compile(r"\bFROM\s+STDIN\b.*?\bWHERE\b(.*)$", re.I | re.S)
_COPY_FROM_STDIN = re.compile(r"\s*COPY\s+(.+?)\s+FROM\s+STDIN\b", re.I | re.S)
# Tables named by statements sqlglot keeps opaque (VACUUM, ANALYZE, TRUNCATE's options ...).
_NAME = r'(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)(?:\.(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*))?'
_OPAQUE_TABLES = {
    "vacuum": re.compile(r"\s*VACUUM\s*(?:\([^)]*\)\s*)?(?:(?:FULL|FREEZE|VERBOSE|ANALYZE|ANALYSE)\s+)*(.*)", re.I | re.S),
    "analyze": re.compile(r"\s*ANALY[SZ]E\s*(?:\([^)]*\)\s*)?(?:VERBOSE\s+)?(.*)", re.I | re.S),
    "analyse": re.compile(r"\s*ANALY[SZ]E\s*(?:\([^)]*\)\s*)?(?:VERBOSE\s+)?(.*)", re.I | re.S),
    "truncate": re.compile(r"\s*TRUNCATE\s+(?:TABLE\s+)?(?:ONLY\s+)?(.*?)(?:\s+(?:RESTART|CONTINUE|CASCADE|RESTRICT)\b.*)?$", re.I | re.S),
    "lock": re.compile(r"\s*LOCK\s+(?:TABLE\s+)?(?:ONLY\s+)?(.*?)(?:\s+IN\s+.*|\s+NOWAIT)?$", re.I | re.S),
}

# What leaves state on the source's session that another client must not see and that a
# link of its own would lose: temporary tables (CREATE TEMP ...). Such a statement pins
# the session to its link (gateway.relay.links.SessionLinks.pin). SELECT ... INTO TEMP and
# session advisory locks are matched too, though the planner takes them today; LISTEN,
# DECLARE ... WITH HOLD, PREPARE [TRANSACTION] and SET SESSION AUTHORIZATION are never
# relayed (the gateway answers or refuses them itself).
# CREATE TABLE ... AS EXECUTE name [(args)] [WITH [NO] DATA]: its statement is the session's.
_CREATE_AS_EXECUTE = re.compile(r"\bAS\s+EXECUTE\s+[^\s(]+\s*(?:\(.*\))?\s*(?:WITH\s+(?:NO\s+)?DATA\s*)?;?\s*$",
                                re.I | re.S)
_PINNING = re.compile(r"\bTEMP(?:ORARY)?\s+(?:TABLE|VIEW|SEQUENCE)\b|\bCREATE\s+(?:OR\s+REPLACE\s+)?"
                      r"(?:GLOBAL\s+|LOCAL\s+)?TEMP(?:ORARY)?\b|\bINTO\s+(?:TEMP|TEMPORARY)\b"
                      r"|\bpg_(?:try_)?advisory_lock(?:_shared)?\s*\(", re.I)


def verb_of(sql: str) -> str:
    found = _VERB.match(sql)
    return found.group(1).lower() if found else ""


class Router:
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self._cache: dict[tuple, Route | None] = {}
        self._respelled: dict[tuple[str, str], Respelled | None] = {}  # by (text, source)
        self.kinds = {s.name: s.kind for s in ctx.config.sources}
        self.read_only = {s.name for s in ctx.config.sources if s.options.get("read_only")}

    def route(self, sql: str, search_path: tuple[str, ...],
              hidden: frozenset[str] = frozenset()) -> Route | None:
        """The relay route of `sql`, or None when the planner takes it. `hidden`: the
        sources the session's user may not see (`search_path` no longer holds them);
        naming one is 42501."""
        verb = verb_of(sql)
        if verb not in WRITE_VERBS and verb not in READ_VERBS:
            return None
        if verb == "create" and _CREATE_AS_EXECUTE.search(sql):
            # Relayed, the source would look for a prepared statement of its own.
            raise PgError(FEATURE_NOT_SUPPORTED, "CREATE TABLE ... AS EXECUTE is not supported by "
                          "fedgate (write the prepared statement's query instead)")
        key = (shape_of(sql), search_path, self.ctx.catalog.version, hidden)
        try:
            return self._cache[key]
        except KeyError:
            pass
        route, cacheable = self._decide(sql, verb, search_path, hidden)
        if cacheable:
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = route
        if route is not None and route.writes and route.source in self.read_only:
            # A cached route of a source configured read-only: refused every time.
            raise PgError(READ_ONLY_SQL_TRANSACTION,
                          f'cannot execute {verb.upper()}: source "{route.source}" is read-only')
        return route

    # --- deciding ------------------------------------------------------------------------

    def _decide(self, sql: str, verb: str, search_path: tuple[str, ...],
                hidden: frozenset[str]) -> tuple[Route | None, bool]:
        route, cacheable = self._decide_route(sql, verb, search_path, hidden)
        if route is None:
            return route, cacheable
        called = _admin_calls(sql, verb, route)
        if called:
            route = replace(route, admin_calls=called)
        if _PINNING.search(sql):
            route = replace(route, pins=True)
        return route, cacheable

    def _decide_route(self, sql: str, verb: str, search_path: tuple[str, ...],
                hidden: frozenset[str]) -> tuple[Route | None, bool]:
        copy = _COPY_FROM_STDIN.match(sql) if verb == "copy" else None
        if verb == "copy" and copy is None:
            return None, True  # COPY ... TO STDOUT: the gateway's own (gateway.session.copy_out)
        tree = None if verb in _OPAQUE_TABLES or copy is not None else _parse(sql)
        writes = verb in WRITE_VERBS or (tree is not None and _modifies(tree))
        spans: list[tuple[int, int]] = []  # where the names are, in statements sqlglot keeps opaque
        if copy is not None:
            names, spans = _names_in(sql, copy.start(1), copy.end(1), first_only=True)
        elif tree is None or isinstance(tree, exp.Command):
            if not writes:
                return None, True
            pattern = _OPAQUE_TABLES.get(verb)
            found = pattern.match(sql) if pattern else None
            names, spans = _names_in(sql, found.start(1), found.end(1)) if found else ([], [])
            if found is None and hidden:
                # Relayed as written, it could name a schema of the source's database
                # that is another source this user may not see: refused, not guessed.
                raise PgError(FEATURE_NOT_SUPPORTED,
                              f"{verb.upper()} statements of this form are not supported for "
                              "users limited to some sources ([[users]] sources)")
        else:
            if not writes and _calls_gateway(tree):
                return None, True
            names = _table_names(tree)
        for schema, _ in names:
            if schema is not None and schema in hidden:
                raise schema_denied(schema)
        sources = {self._owner(schema, name, search_path, writes) for schema, name in names}
        if not sources:
            if not writes:
                return None, True
            sources = {self._default_source(search_path)}
        if writes and tree is not None and (len(sources) > 1 or None in sources):
            target = move_target(tree)
            if target is not None:
                return self._move_route(target, verb, tree, search_path), False
        if len(sources) > 1 or None in sources:
            if writes:
                raise PgError(FEATURE_NOT_SUPPORTED,
                              "a statement that writes may only use tables of one source "
                              f"(this one names {', '.join(sorted(s or '?' for s in sources))})")
            return None, True
        source = sources.pop()
        assert source is not None
        if writes and source in self.read_only:
            raise PgError(READ_ONLY_SQL_TRANSACTION,
                          f'cannot execute {verb.upper()}: source "{source}" is read-only')
        kind = self.kinds.get(source)
        if writes and kind in FILE_KINDS and tree is not None:
            target = move_target(tree, values=True)  # a file written from the engine's rows
            if target is not None:
                return self._move_route(target, verb, tree, search_path), False
        if kind != "postgres":
            if not writes:
                return None, True
            if copy is not None:
                return Route(source, verb, True, copy_in=True, kind=kind or ""), False
            if tree is None or isinstance(tree, exp.Command):
                raise PgError(FEATURE_NOT_SUPPORTED,
                              f'{verb.upper()} on {kind} sources is not supported (source "{source}")')
            # Rendered in the source's dialect by sqlglot: only PostgreSQL's functions, so
            # none of the source's own (MySQL's load_file) is reached in PostgreSQL's name.
            check_functions(tree, sql, CALLABLE_FUNCTIONS)
            return Route(source, verb, True, kind=kind or "", tree=tree), False
        qualified = any(schema is not None for schema, _ in names)
        if not qualified:
            return Route(source, verb, writes, copy_in=copy is not None), True
        if spans:  # COPY, VACUUM, TRUNCATE ...: the qualified names rewritten in the text
            return Route(source, verb, writes, sql=self._opaque_respelled(sql, names, spans, source),
                         copy_in=copy is not None), False
        if tree is None or isinstance(tree, exp.Command) or self.respell(sql, source, tree) is None:
            if writes:
                raise PgError(FEATURE_NOT_SUPPORTED,
                              f"{verb.upper()} with schema-qualified names is not supported here; "
                              "name the table without its source (SET search_path)")
            return None, True
        # Every text of this shape is respelled the same way (SessionLinks.spelled_out).
        return Route(source, verb, writes, respelled=True), True

    def _move_route(self, target: exp.Table, verb: str, tree: exp.Expression,
                    search_path: tuple[str, ...]) -> Route:
        """The route of a move (`Route.move`): the target's source, checked writable."""
        source = self._owner(_ident(target.args.get("db")), _ident(target.this) or target.name,
                             search_path, True)
        assert source is not None
        if source in self.read_only:
            raise PgError(READ_ONLY_SQL_TRANSACTION,
                          f'cannot execute {verb.upper()}: source "{source}" is read-only')
        return Route(source, verb, True, kind=self.kinds.get(source, ""), tree=tree, move=True)

    def respell(self, sql: str, source: str, tree: exp.Expression | None = None) -> Respelled | None:
        """`sql` with its names qualified by `source` respelled for the source
        (`gateway.relay.respell`), kept by text: a lifted shape's text is respelled once."""
        key = (sql, source)
        try:
            return self._respelled[key]
        except KeyError:
            pass
        if tree is None:
            tree = _parse(sql)
        remote_schema = getattr(self.ctx.sources[source], "schema", "public")
        found = None if tree is None else respelled(sql, tree, source, remote_schema,
                                                    self.ctx.config.server.database)
        if len(self._respelled) >= CACHE_LIMIT:
            self._respelled.clear()
        self._respelled[key] = found
        return found

    def _owner(self, schema: str | None, name: str, search_path: tuple[str, ...],
               writes: bool) -> str | None:
        catalog = self.ctx.catalog.sources
        if schema is not None:
            if schema in catalog and schema in self.kinds:
                # A read of a table the catalog does not hold: the planner's 42P01 names
                # it as the client did (the source would name its own schema).
                return schema if writes or name in catalog[schema].tables else None
            if not writes:
                return None
            raise PgError("3F000", f'schema "{schema}" does not exist')
        for source in search_path:
            entry = catalog.get(source)
            if entry is not None and name in entry.tables:
                return source if source in self.kinds else None
        return self._default_source(search_path) if writes else None

    def _default_source(self, search_path: tuple[str, ...]) -> str:
        """Where a new table goes: the first source on search_path, as PostgreSQL creates
        in the first schema of its search_path."""
        for source in search_path:
            if source in self.kinds:
                return source
        raise PgError("3F000", "no schema has been selected to create in")

    def _opaque_respelled(self, sql: str, names: list[tuple[str | None, str]],
                          spans: list[tuple[int, int]], source: str) -> str:
        """`sql` (a statement sqlglot keeps opaque) with each `source.table` spelled as the
        source's `schema.table`."""
        remote_schema = getattr(self.ctx.sources[source], "schema", "public")
        out, last = [], 0
        for (schema, name), (start, end) in zip(names, spans):
            if schema is None:
                continue
            out.append(sql[last:start])
            out.append(exp.table_(name, db=remote_schema, quoted=True).sql(dialect="postgres"))
            last = end
        return "".join(out) + sql[last:]


def _admin_calls(sql: str, verb: str, route: Route) -> tuple[str, ...]:
    """The server-administration function a routed statement calls, if any: in its tree,
    or in the WHERE clause of a COPY ... FROM STDIN."""
    if route.tree is not None:
        return access.admin_calls(route.tree)
    if verb == "copy":
        found = _COPY_WHERE.search(sql)
        if found is None:
            return ()
        tree = _parse(f"SELECT 1 WHERE {found.group(1)}")
        if tree is None:  # PostgreSQL may parse what we cannot: refuse rather than guess
            raise PgError(FEATURE_NOT_SUPPORTED, "this COPY ... WHERE condition is not supported")
        return access.admin_calls(tree)
    tree = None if verb in _OPAQUE_TABLES else _parse(sql)
    return access.admin_calls(tree) if tree is not None else ()


def _parse(sql: str) -> exp.Expression | None:
    try:
        return sqlglot.parse_one(sql, read="postgres")
    except (ParseError, ValueError):
        return None


def move_target(tree: exp.Expression, values: bool = False) -> exp.Table | None:
    """The table an `INSERT INTO t [(cols)] <query>` or `CREATE TABLE t AS <query>` writes
    (a move, when its query reads other sources), or None for any other statement. A
    VALUES list is no move (it names no table, so the statement has one source) unless
    `values`: a file target takes every row from the engine."""
    if isinstance(tree, exp.Insert):
        query = tree.expression
    elif isinstance(tree, exp.Create) and str(tree.args.get("kind") or "").upper() == "TABLE":
        query = tree.expression
    else:
        return None
    if not isinstance(query, exp.Query) and not (values and isinstance(query, exp.Values)):
        return None
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    return target if isinstance(target, exp.Table) else None


def _modifies(tree: exp.Expression) -> bool:
    return tree.find(exp.Insert, exp.Update, exp.Delete, exp.Merge) is not None


def _calls_gateway(tree: exp.Expression) -> bool:
    for node in tree.find_all(exp.Func):
        if isinstance(node, _GATEWAY_EXPRESSIONS):
            return True
        name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
        if name in GATEWAY_FUNCTIONS or name.startswith("pg_"):
            return True
    return False


def _table_names(tree: exp.Expression) -> list[tuple[str | None, str]]:
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    names = []
    for table in tree.find_all(exp.Table):
        if not table.name or (table.name in ctes and not table.args.get("db")):
            continue
        if isinstance(table.this, exp.Func):  # generate_series(...) and friends
            continue
        names.append((_ident(table.args.get("db")), _ident(table.this) or table.name))
    return names


def _ident(node: exp.Expression | None) -> str | None:
    """An identifier as PostgreSQL folds it: unquoted names are lower case."""
    if not isinstance(node, exp.Identifier):
        return None
    return node.this if node.quoted else node.this.lower()


def _names_in(sql: str, start: int, end: int, first_only: bool = False
              ) -> tuple[list[tuple[str | None, str]], list[tuple[int, int]]]:
    """Table names in `sql[start:end]` (a comma list; column lists in parentheses are
    skipped), with their positions in `sql`."""
    text = re.sub(r"\([^)]*\)", lambda m: " " * len(m.group(0)), sql[start:end])
    names, spans = [], []
    for found in re.finditer(_NAME, text):
        parts = [p[1:-1].replace('""', '"') if p.startswith('"') else p.lower()
                 for p in re.findall(r'"(?:[^"]|"")+"|[^.]+', found.group(0))]
        names.append((parts[0], parts[1]) if len(parts) == 2 else (None, parts[0]))
        spans.append((start + found.start(), start + found.end()))
        if first_only:
            break
    return names, spans
