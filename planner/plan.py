"""SQL text + catalog snapshot -> QueryPlan: the planner's entry point (docs/design.md §3).

- Every table in one source, and the source's capability table accepts the whole
  statement: it ships whole, no engine (the path point queries take). A source that runs
  it in DuckDB gets its sums and averages typed as PostgreSQL's (planner.pg_aggregates).
- Otherwise the statement is qualified, built into a logical plan, optimized by the rule
  batches of `planner.pipeline`, cut into the largest sub-plans single sources can run
  (`planner.pushdown`), and rendered as remote fragments plus residual SQL for the engine
  (`planner.physical`). A statement without tables is all residual.
Whatever the route, parameters get their types here and every output column gets the name
PostgreSQL would give it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError, UNDEFINED_COLUMN, UNDEFINED_FUNCTION
from pgwire.function_names import POSTGRES_FUNCTIONS
from connectors.base import CLIENT_OUTPUTS, NUMERIC_OUTPUTS, Dialect, Pushdown, TableInfo, is_utc
from planner import pgcompat, physical
from planner import zone_dependent as session_zone
from planner import access
from planner.build import build
from planner.conjuncts import split_conjuncts
from planner.explain import conjunct_lines
from planner.optimizer import RuleContext, optimize
from planner.pipeline import BATCHES
from planner.pushdown import fragments
from planner.row_estimates import estimate_rows
from planner.catalog import CatalogSnapshot, SourceEntry
from planner.colnames import figure_colname
from planner.derived_names import derived_names
from planner.ambiguous_columns import ambiguous_columns
from planner.star_names import star_names
from planner.ungrouped_columns import ungrouped_columns
from planner.constant_keys import constant_keys
from planner.window_aggregates import window_aggregates
from planner.order_names import order_names
from planner.using_star import using_star
from planner.whole_rows import whole_rows
from planner.empty_select import empty_select
from planner.variadic_arrays import variadic_arrays
from planner.function_check import check_functions
from planner.signature_check import signature_check
from planner.pg_annotate import annotate_postgres
from planner.enum_values import other_sources_enums, param_type_names, typed_parameters
from planner.params import parameters
from planner.kept_texts import kept_texts
from planner.source_values import refuse_outside_duckdb
from planner.pg_aggregates import pg_typed_query, pg_typed_select
from planner.pass_through import pass_through
from planner.parse import parse_query
from planner.query_plan import QueryPlan, RemoteFragment
from planner.inline_sides import Inlining, InlinedSide, home_for, inline_at
from planner.result_types import result_names, result_types
from planner.regclass_arguments import regclass_arguments
from planner.unknown_literals import unknown_literals
from planner.case_scales import case_scales
from planner.nullif_casts import nullif_casts
from planner.set_scales import set_scales
from planner.type_names import datatype_from_pg


@dataclass(frozen=True)
class PlanSettings:
    search_path: tuple[str, ...]
    user: str = "fedgate"
    database: str = "fedgate"
    version: str = "PostgreSQL 15.0 (fedgate)"
    declared_param_types: tuple[str | None, ...] = ()  # PostgreSQL type names, None = infer
    # The client's TimeZone: outside UTC, zone-dependent expressions stay in the engine.
    timezone: str = "UTC"
    # Pre-aggregate a cross-source join's side at its source (`fedgate.pre_aggregate`).
    pre_aggregate: bool = False
    # The functions a statement may call, by name (planner.function_check): PostgreSQL's;
    # the gateway adds those its emulated catalog answers.
    functions: frozenset[str] = field(default=POSTGRES_FUNCTIONS, repr=False)
    # Sources the session's user may not see: naming one is 42501 (planner.access).
    hidden_schemas: frozenset[str] = frozenset()
    # A statement of a PostgreSQL source and other sources' small tables runs whole on
    # it, those tables inlined (planner.inline_sides) as far as this goes.
    inlining: Inlining = Inlining(100)


def _name_outputs(tree: exp.Expression, sql: str) -> tuple[str, ...] | None:
    """Alias every computed output column with its PostgreSQL name; return all the names.

    The names are returned (None when a `*` leaves them to the source) because engines
    rename duplicates (`a`, `a_1`) where PostgreSQL keeps `a` twice.
    """
    select = tree
    while isinstance(select, (exp.SetOperation, exp.Subquery)):
        # PostgreSQL takes the names from the leftmost branch, parenthesised or not.
        select = select.this
    if not isinstance(select, exp.Select):
        return None
    names: list[str] | None = []
    for projection in list(select.expressions):
        if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column)
                                                and isinstance(projection.this, exp.Star)):
            names = None
            continue
        name = figure_colname(projection, sql)
        if names is not None:
            names.append(name)
        if not isinstance(projection, (exp.Alias, exp.Column)):
            projection.replace(exp.alias_(projection.copy(), name, quoted=True))
    return tuple(names) if names is not None else None


def _session_values(tree: exp.Expression, settings: PlanSettings) -> None:
    """Functions that describe the gateway session answer from the session, not a source."""
    values = {
        exp.CurrentVersion: settings.version,
        exp.CurrentDatabase: settings.database,
        exp.CurrentCatalog: settings.database,
        exp.CurrentUser: settings.user,
        exp.SessionUser: settings.user,
        exp.CurrentSchema: settings.search_path[0] if settings.search_path else None,
    }
    for node in list(tree.find_all(*values)):
        value = values[type(node)]
        node.replace(exp.Literal.string(value) if value is not None else exp.null())


def _refuse_unshipped(tree: exp.Expression, tables: list[tuple[exp.Table, TableInfo]],
                      catalog: CatalogSnapshot, rows: bool = False) -> tuple[tuple[int, TableInfo], ...]:
    """What only PostgreSQL itself answers, refused (0A000) where the statement does not
    ship whole to a PostgreSQL source: WITH RECURSIVE ... SEARCH/CYCLE (whose record
    columns stay refused there too, connectors.postgres.types), a VARIADIC argument
    (planner.pgcompat) other than an array constructor planner.variadic_arrays spreads,
    which no engine of ours spells, and a whole row (planner.whole_rows; with `rows`, an
    output of one is allowed, and returned). An empty select list gets the engine's
    placeholder (planner.empty_select)."""
    found = whole_rows(tree, tables, rows)
    empty_select(tree)  # the client's rows of no columns keep their names: ()
    variadic_arrays(tree, functools.partial(_typed_copy, catalog=catalog))
    if tree.find(exp.RecursiveWithSearch) is not None:
        raise PgError(FEATURE_NOT_SUPPORTED, "WITH RECURSIVE ... SEARCH or CYCLE is not supported by "
                      "fedgate outside statements shipped whole to one PostgreSQL source")
    if any(call.name.lower() == pgcompat.VARIADIC for call in tree.find_all(exp.Anonymous)):
        raise PgError(FEATURE_NOT_SUPPORTED, "VARIADIC arguments are not supported by fedgate "
                      "outside statements shipped whole to one PostgreSQL source")
    return found


def _home_postgres(catalog: CatalogSnapshot, settings: PlanSettings) -> SourceEntry | None:
    """The source a statement without tables is shipped to: the first source on the
    search path, when it is a PostgreSQL one the session may use. PostgreSQL's own
    answer then comes back where the engine would compute another or refuse
    (`SELECT sha512('abc'::bytea)`, `SELECT format('%I', 'Foo')`); the session's own values
    (version(), current_user ...) were written in before (`_session_values`)."""
    home = next((catalog.sources[name] for name in settings.search_path if name in catalog.sources), None)
    if home is None or home.dialect.sqlglot != "postgres" or home.name in settings.hidden_schemas:
        return None
    return home


def _catalog_tables(tree: exp.Expression) -> list[exp.Table]:
    ctes: set[str] = set()
    tables: list[exp.Table] = []
    for node in tree.find_all(exp.CTE, exp.Table):  # one walk for both
        if isinstance(node, exp.CTE):
            ctes.add(node.alias_or_name)
        elif isinstance(node.this, exp.Identifier):
            tables.append(node)
    return [t for t in tables if t.db or t.name not in ctes]


def _one_table_columns(tree: exp.Expression, tables: list[tuple[exp.Table, TableInfo]],
                       catalog: CatalogSnapshot) -> Callable[[exp.Column], exp.DataType | None] | None:
    """For a SELECT over one catalog table and nothing else (no join, WITH, subquery or
    VALUES), the type of each column read straight from the catalog: every column names
    that table's, so the statement need not be qualified for its aggregates' types.
    None for any other statement."""
    if not isinstance(tree, exp.Select) or len(tables) != 1 or tree.args.get("joins") \
            or tree.args.get("with_") is not None:
        return None
    table = tables[0][0]
    from_ = tree.args.get("from_")
    if from_ is None or from_.this is not table or any(
            child.find(exp.Query, exp.Values, exp.Lateral, exp.Unnest) is not None
            for child in tree.iter_expressions() if child is not from_):
        return None
    schema = catalog.sqlglot_schema

    def column_type(column: exp.Column) -> exp.DataType | None:
        # Any qualifier names the one table (another would be an error wherever it ran).
        name = column.name if column.this.quoted else column.name.lower()
        found = schema.get_column_type(table, exp.to_identifier(name, quoted=True))
        return found if found.this != exp.DataType.Type.UNKNOWN else None

    return column_type


def _annotate(tree: exp.Expression, catalog: CatalogSnapshot, typed: bool = True) -> exp.Expression:
    try:
        qualified = qualify(tree, schema=catalog.sqlglot_schema, dialect="postgres",
                            quote_identifiers=False, validate_qualify_columns=False,
                            identify=False)
    except OptimizeError as exc:  # e.g. a column no table in scope has
        raise PgError(UNDEFINED_COLUMN, str(exc).split("\n")[0]) from exc
    return annotate_postgres(qualified, schema=catalog.sqlglot_schema) if typed else qualified


def _typed_copy(tree: exp.Expression, catalog: CatalogSnapshot) -> exp.Expression:
    """A typed copy of `tree`; the copy untyped where a name does not resolve (the
    statement's own planning then says so)."""
    try:
        return _annotate(tree.copy(), catalog)
    except PgError:
        return tree.copy()


def _annotated(tree: exp.Expression, catalog: CatalogSnapshot, typed: bool,
               optional: bool) -> tuple[exp.Expression, bool]:
    """`tree` qualified (and typed), and whether it is. `optional`: the statement ships
    whole and its source resolves its own names, the types were only wanted by a
    renderer's rewrites; a statement sqlglot's qualifier cannot follow (a table function's
    column alias in a catalog query) then ships as written, untyped."""
    if not optional:
        return _annotate(tree, catalog, typed), True
    try:
        return _annotate(tree.copy(), catalog, typed), True
    except PgError:
        return tree, False


def _describe_tree(tree: exp.Expression) -> exp.Expression:
    if isinstance(tree, exp.Select) and tree.args.get("limit") is None:  # LIMIT $n stays bound
        return tree.copy().limit(0)
    described = exp.Subquery(this=tree.copy(), alias=exp.TableAlias(this=exp.to_identifier("described")))
    return exp.select("*").from_(described).limit(0)  # (a bare VALUES has no .subquery())


def _resolve_tables(tree: exp.Expression, catalog: CatalogSnapshot,
                    settings: PlanSettings) -> list[tuple[exp.Table, TableInfo]]:
    """Pin every catalog table of `tree` to its source (its schema) and return them."""
    found = []
    for table in _catalog_tables(tree):
        name = table.name if table.this.quoted else table.name.lower()
        info = catalog.resolve(name, table.db or None, settings.search_path)
        table.set("this", exp.to_identifier(info.ref.name, quoted=table.this.quoted))
        table.set("db", exp.to_identifier(info.ref.source))
        table.set("catalog", None)
        found.append((table, info))
    return found


def plan(sql: str, catalog: CatalogSnapshot, settings: PlanSettings) -> QueryPlan:
    catalog = session_zone.for_zone(catalog, settings.timezone)
    zoned = not is_utc(settings.timezone)  # then zone-dependent expressions stay local
    text = pgcompat.normalize(sql)
    parsed = parse_query(text)
    # Before rewrites add names of ours; the catalog types the arguments a refusal names.
    functions = settings.functions | {pgcompat.VARIADIC} if pgcompat.VARIADIC in text \
        else settings.functions  # the call normalize wrote for VARIADIC (refused below)
    try:
        check_functions(parsed, text, functions, catalog, settings.search_path)
        unknown_function = None
    except PgError as exc:  # a PostgreSQL source may define it (CREATE FUNCTION): see below
        if exc.sqlstate != UNDEFINED_FUNCTION:
            raise
        unknown_function = exc
        parsed = parse_query(text)  # the check typed the tree in place, for its message
    signature_check(parsed, text, catalog, settings.search_path, settings.declared_param_types)
    constant_keys(parsed)  # before a rewrite reads a position (GROUP BY 0)
    window_aggregates(parsed)
    tree = pgcompat.rewrite(parsed, catalog.catalog_functions)
    using_star(tree, catalog, settings.search_path)
    derived_names(tree, text)  # before qualify names them _col_0
    ambiguous_columns(tree)
    ungrouped_columns(tree)
    names = _name_outputs(tree, text)  # function names as `text` spells them
    _session_values(tree, settings)
    if settings.hidden_schemas:
        access.check_schemas(_catalog_tables(tree), settings.hidden_schemas)
    tables = _resolve_tables(tree, catalog, settings)
    if names is None:  # a `*`: the engine would rename repeated names (planner.star_names)
        names = star_names(tree, text, {id(table): info for table, info in tables})
    sources = {info.ref.source for _, info in tables}
    if sources and sources <= set(pgcompat.CATALOG_SCHEMAS):  # the catalog answers the calls
        regclass_arguments(tree)
    access.check_functions(tree, sources)

    declared = [datatype_from_pg(t) if t else None for t in settings.declared_param_types]
    single = catalog.sources[next(iter(sources))] if len(sources) == 1 else None
    if not tables and not zoned:  # no table: the session's PostgreSQL source answers it
        # (outside UTC the engine does: the sources' sessions run in UTC, planner.zone_dependent)
        single = _home_postgres(catalog, settings)
    inlined = False  # the other sources' small tables are sent to `single` with it
    if single is None and len(sources) > 1:
        single = home_for(tree, tables, catalog, settings.inlining, zoned)
        inlined = single is not None
    on_postgres = single is not None and single.dialect.sqlglot == "postgres"  # all of it
    row_outputs: tuple[tuple[int, TableInfo], ...] = ()  # a DuckDB source's whole rows
    if not on_postgres:
        row_outputs = _refuse_unshipped(tree, tables, catalog, single is not None and single.dialect.sqlglot == "duckdb")
    if unknown_function is not None and not on_postgres:
        raise unknown_function  # no PostgreSQL source answers the whole statement
    unknown_literals(tree, catalog.sqlglot_schema)
    # PostgreSQL's types of the outputs, for rows not computed by PostgreSQL itself.
    types = None if on_postgres else result_types(tree, catalog.sqlglot_schema)
    if types is not None:  # PostgreSQL resolves its own names, and names its own rows
        order_names(tree, catalog.sqlglot_schema)
        names = result_names(tree, catalog.sqlglot_schema) if names is None else names  # a `*`'s
    if not on_postgres and tree.find(exp.SetOperation) is not None:
        set_scales(tree, catalog.sqlglot_schema)
    if not on_postgres and tree.find(exp.Case, exp.Coalesce) is not None:
        case_scales(tree, catalog.sqlglot_schema)
    if not on_postgres and tree.find(exp.Nullif) is not None:
        nullif_casts(tree, catalog.sqlglot_schema)  # the engines' NULLIF keeps a's type
    # Outside UTC the capability check reads operand types (planner.zone_dependent).
    annotated = zoned and bool(sources) and \
        session_zone.needs_check(tree, (info for _, info in tables))
    if annotated:
        tree = _annotate(tree, catalog, True)
    shippable = single is not None and not other_sources_enums(tree, catalog, settings.search_path, single) \
        and single.dialect.classify(tree, None).pushdown is Pushdown.EXACT
    if inlined and not shippable:  # decided on the same tree before: cannot happen
        raise PgError(FEATURE_NOT_SUPPORTED, "the statement no longer runs whole on its PostgreSQL source")
    if not shippable:  # e.g. a volatile call keeps a PostgreSQL source's statement here
        _refuse_unshipped(tree, tables, catalog)
    # Shipped whole to DuckDB (a DuckDB file, Parquet/CSV), sums and averages are retyped
    # as PostgreSQL types them (planner.pg_aggregates), from qualified columns' types.
    to_duckdb = shippable and single is not None and single.dialect.sqlglot == "duckdb"
    if to_duckdb:
        pass_through(tree)  # averages and quotients top-level again: PostgreSQL's display scale
    pg_aggregates = to_duckdb and tree.find(exp.Sum, exp.Avg) is not None
    param_types: list[exp.DataType] = []
    # A float4 column: the engine computes float4 with an integer in float8, as PostgreSQL
    # (connectors.dialects.duckdb.float4), which reads operand types.
    typed = bool(annotated or parameters(tree) or declared
                 or catalog.residual_dialect.needs_types(tree)) \
        or any(catalog.sources[source].dialect.wants_types for source in sources) \
        or any(pa.types.is_float32(f.type) for _, info in tables for f in info.schema)
    # Over one table, the aggregates' column types come from the catalog directly.
    one_table = _one_table_columns(tree, tables, catalog) if pg_aggregates and not typed else None
    qualified = annotated
    if not shippable or typed or (pg_aggregates and one_table is None):
        # The federated path needs qualified columns (so does pg_aggregates beyond one
        # table); types cost as much again, so they are computed only when parameters,
        # rewrites or a capability table need them.
        if not annotated:
            tree, qualified = _annotated(tree, catalog, typed, shippable and not pg_aggregates
                                         and not (parameters(tree) or declared))
        param_types = typed_parameters(tree, declared, catalog, settings.search_path)
    pg_types = param_type_names(param_types)

    if shippable:
        # The whole statement runs where its tables are: no engine, the fast path.
        assert single is not None
        if one_table is not None:
            pg_typed_select(tree, one_table)
        elif pg_aggregates:
            pg_typed_query(tree, catalog.sqlglot_schema)
        sides: list[InlinedSide] = []
        for table, info in _resolve_tables(tree, catalog, settings) if qualified else tables:
            if info.ref.source != single.name:  # inlined: its rows come as parameters
                sides.append(inline_at(table, info, len(pg_types) + sum(len(s.columns) for s in sides) + 1, catalog))
                continue
            schema, name = info.ref.remote
            _point_at(table, name, schema)
        dialect = single.dialect
        tree.meta[CLIENT_OUTPUTS] = True  # its rows are the answer (connectors.base)
        tree.meta[NUMERIC_OUTPUTS] = numeric_outputs(types)
        fragment = RemoteFragment("frag_0", single.name, dialect.to_sql(tree),
                                  lambda: dialect.to_sql(_describe_tree(tree)), True)

        def details() -> tuple[tuple[str, ...], tuple[str, ...]]:
            where = tree.args.get("where") if isinstance(tree, exp.Select) else None
            return (), tuple(f"Conjunct {c.sql('postgres')}: pushed exact (the whole statement "
                             f"runs on {single.name})"
                             for c in split_conjuncts(where.this if where else None))
        return QueryPlan((fragment,), None, None, pg_types, names, details=details, result_types=types,
                         row_outputs=tuple((i, info.ref.source, info.ref.name) for i, info in row_outputs),
                         inlined=tuple(sides))
    return _federated(tree, catalog, pg_types, names, settings, types)


def _federated(tree: exp.Expression, catalog: CatalogSnapshot, pg_types: tuple[str, ...],
               names: tuple[str, ...] | None, settings: PlanSettings,
               types: tuple[str | None, ...] | None) -> QueryPlan:
    """Build, optimize, split into fragments and a residual (docs/design.md §3 steps 3-6)."""
    logical = build(tree, catalog)
    optimized = optimize(logical, RuleContext(catalog, settings.pre_aggregate), BATCHES)
    found, homes = fragments(optimized, catalog)
    joins = tuple(choice.describe() for choice in homes.choices)
    dialect = catalog.residual_dialect
    pieces, residual, residual_params, dynamic, frag_types, texts = physical.render(
        optimized, found, catalog, dialect)
    def details() -> tuple[tuple[str, ...], tuple[str, ...]]:
        return tuple(str(optimized).splitlines()), tuple(conjunct_lines(optimized, catalog))

    if residual is None:
        return QueryPlan((pieces[0],), None, None, pg_types, names,
                         details=details, joins=joins, result_types=types)
    kept, enums = kept_texts(residual, texts, frag_types)  # a source's text of their type
    if kept:
        types = tuple(kept.get(i, t) for i, t in enumerate(types)) if types is not None \
            else tuple(kept.get(i) for i in range(len(residual.selects)))
    residual.meta[CLIENT_OUTPUTS] = True  # its rows are the answer (connectors.base)
    residual.meta[NUMERIC_OUTPUTS] = numeric_outputs(types)
    residual_sql = dialect.to_sql(residual)

    @functools.cache
    def render_for(engine: str) -> str:
        if engine == dialect.name:
            return residual_sql
        return _render_residual(residual, frag_types, catalog.engine_dialect(engine))

    return QueryPlan(tuple(pieces), residual_sql,
                     lambda: dialect.to_sql(physical.describe_tree(residual)), pg_types, names,
                     residual_params, details=details, joins=joins,
                     estimated_rows=estimate_rows(found), dynamic_filters=dynamic,
                     residual_render=render_for, result_types=types, kept_texts=tuple(sorted(kept)),
                     enum_outputs=enums)


def _render_residual(residual: exp.Expression,
                     frag_types: Callable[[], dict[str, dict[str, str]]], dialect: Dialect) -> str:
    """The residual in another engine's dialect. Those renderers need operand types
    everywhere (connectors.dialects.spark), so the residual is annotated first over the
    fragments' column types (named as DuckDB names them, planner.fragment_types); only a
    query that runs there pays for it."""
    refuse_outside_duckdb(residual, dialect.name)
    schema = MappingSchema(frag_types(), dialect="duckdb", normalize=False)
    return dialect.to_sql(annotate_postgres(residual.copy(), schema=schema))


def _point_at(table: exp.Table, name: str, schema: str | None) -> None:
    """Make `table` name `schema.name`, keeping the name the query used as its alias."""
    if not table.alias:
        table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
    table.set("this", exp.to_identifier(name, quoted=True))
    table.set("db", exp.to_identifier(schema, quoted=True) if schema else None)


def numeric_outputs(types: tuple[str | None, ...] | None) -> frozenset[int]:
    """Positions of the outputs typed numeric (connectors.base)."""
    return frozenset(i for i, t in enumerate(types or ()) if t is not None and t.split("(")[0] == "numeric")
