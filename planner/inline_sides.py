"""A PostgreSQL source as the engine: the other sources' small tables sent along as parameters.

`home_for` — pick the one PostgreSQL source that can run a federated statement whole,
once the few rows of its other tables are sent along with it.

    before: SELECT a.abalance, f.name FROM pg.pgbench_accounts a JOIN files.small f
            ON f.id = a.bid WHERE a.aid = $1
            -> Remote frag_0 on pg, Remote frag_1 on files, Engine (DuckDB) joins them
    after:  Remote frag_0 on pg: SELECT a.abalance, f.name FROM "public"."pgbench_accounts"
            AS a JOIN UNNEST(CAST($2 AS INT[]), CAST($3 AS TEXT[])) AS "f"("id", "name")
            ON f.id = a.bid WHERE a.aid = $1
            Inlined f: Remote on files: SELECT "id", "name" FROM "small", as $2, $3

PostgreSQL's answer is then the answer by construction: its types, its functions, its
numeric, its indexes on the big side. The small table's rows are read at every run (a
changed file is seen) and go in as parameters, one array per column, after the
statement's own: no value is ever written into the SQL, the statement's text is the same
at every run (the source's described statements stay cached), and each value keeps its
type. It applies when every table outside the one PostgreSQL source is small by its
source's estimate (`[engine] inline_rows`, 100 unless set; INLINE_MAX_ROWS with
`SET fedgate.engine = source`) and of a type an array parameter carries exactly. Larger
sides would go in through a temporary table (not built yet): they keep the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from connectors.base import COLLATION_KEY, Pushdown, TableInfo
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from planner.catalog import CatalogSnapshot, SourceEntry
from planner.type_names import sqlglot_type_of

# The most rows a side may hold: the limit `SET fedgate.engine = source` plans with,
# and what a side may have grown to when it is read.
INLINE_MAX_ROWS = 10_000


@dataclass(frozen=True)
class Inlining:
    """How far a statement's small tables are inlined: each estimated at no more than `rows`
    rows (0: none, the engine runs the statement); `forced` (`SET fedgate.engine = source`):
    up to INLINE_MAX_ROWS, and a statement that reads a PostgreSQL source and cannot run
    whole on it is refused, saying why."""

    rows: int
    forced: bool = False


NO_INLINING = Inlining(0)
FORCED_INLINING = Inlining(INLINE_MAX_ROWS, forced=True)


@dataclass(frozen=True)
class InlinedSide:
    """One table of another source whose rows the home statement reads from parameters."""

    alias: str  # what the statement calls the table
    source: str
    sql: str  # its rows, in its source's dialect
    columns: tuple[str, ...]
    first_param: int  # the parameter number of its first column's array
    table: str = ""  # its name in its source, as the source's tables() names it


def _readable(f: pa.Field) -> bool:
    """Whether an array parameter carries this column's values exactly, typed as the
    catalog types the column (no source text of another type, no collation of its own)."""
    if f.metadata and (b"pg_type" in f.metadata or COLLATION_KEY.encode() in f.metadata):
        return False
    t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
    return (pa.types.is_boolean(t) or pa.types.is_signed_integer(t) or pa.types.is_floating(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_date32(t)
            or pa.types.is_decimal128(t) or pa.types.is_binary(t)
            or (pa.types.is_timestamp(t) and t.unit in ("s", "ms", "us")))  # ns: finer than PostgreSQL


def home_for(tree: exp.Expression, tables: Sequence[tuple[exp.Table, TableInfo]],
             catalog: CatalogSnapshot, inlining: Inlining, zoned: bool) -> SourceEntry | None:
    """The PostgreSQL source that runs a federated statement whole, the other sources'
    tables inlined as far as `inlining` goes, or None: the engine runs it."""
    forced = inlining.forced
    if inlining.rows == 0:
        return None
    home, why = _home(tables, catalog, inlining.rows)
    if home is not None:
        if zoned:
            home, why = None, "the session's TimeZone is not UTC, the sources' zone"
        elif any(_names_whole_rows(tree, table.alias_or_name) for table, info in tables
                 if info.ref.source != home.name):
            home, why = None, "it names another source's table as a row or by its schema"
        elif home.dialect.classify(tree, None).pushdown is not Pushdown.EXACT:
            home, why = None, f"{home.name} cannot evaluate all of it exactly"
    reads_postgres = any(catalog.sources[info.ref.source].dialect.sqlglot == "postgres"
                         for _, info in tables)
    if home is None and forced and reads_postgres:
        raise PgError(FEATURE_NOT_SUPPORTED, f"fedgate.engine = source cannot run this statement: {why}",
                      hint="SET fedgate.engine = duckdb runs it in the engine.")
    return home


def _home(tables: Sequence[tuple[exp.Table, TableInfo]], catalog: CatalogSnapshot,
          limit: int) -> tuple[SourceEntry | None, str]:
    """The PostgreSQL source that runs the statement whole with the other tables inlined,
    each estimated at no more than `limit` rows, or None and why not (for the refusal when
    the session forced it)."""
    sources = {info.ref.source for _, info in tables}
    homes = [s for s in sources if catalog.sources[s].dialect.sqlglot == "postgres"]
    if len(homes) != 1:
        return None, "it reads no PostgreSQL source" if not homes else \
            "it reads more than one PostgreSQL source"
    home = homes[0]
    for table, info in tables:
        if info.ref.source == home:
            continue
        if catalog.sources[info.ref.source].dialect.sqlglot == "postgres" or \
                info.ref.source in ("pg_catalog", "information_schema"):
            return None, f"{info.ref.source}.{info.ref.name} is not a table of rows it can copy"
        if info.row_estimate is None or info.row_estimate > limit:
            return None, f"{info.ref.source}.{info.ref.name} is not known to hold at most {limit} rows"
        if not all(_readable(f) for f in info.schema):
            return None, f"a column of {info.ref.source}.{info.ref.name} has a type it does not copy"
    return catalog.sources[home], ""


def _names_whole_rows(tree: exp.Expression, alias: str) -> bool:
    """Whether `tree` names the table `alias` as a value (`SELECT f FROM ... f`) or a
    column through its schema (`files.small.id`): neither reads an UNNEST alike."""
    for column in tree.find_all(exp.Column):
        if column.args.get("db") is not None:
            return True
        if not column.table and column.name == alias:
            return True
    return False


def inline_at(table: exp.Table, info: TableInfo, first_param: int,
              catalog: CatalogSnapshot) -> InlinedSide:
    """Make `table` read its rows from array parameters numbered from `first_param`, one
    per column, under its own alias, and say where the rows come from."""
    alias = table.alias_or_name
    # Spelled as the statement spells it: an unquoted `S` is PostgreSQL's s.
    name_of = (table.args["alias"].this if table.alias else table.this).copy()
    columns = tuple(info.schema.names)
    schema, name = info.ref.remote
    query = exp.select(*(exp.column(c, quoted=True) for c in columns)).from_(
        exp.table_(name, db=schema, quoted=True))
    arrays = [exp.Cast(this=exp.Parameter(this=exp.Literal.number(first_param + i)),
                       to=exp.DataType(this=exp.DataType.Type.ARRAY, nested=True, expressions=[
                           exp.DataType.build(sqlglot_type_of(f.type), dialect="duckdb")]))
              for i, f in enumerate(info.schema)]
    table.replace(exp.Unnest(expressions=arrays, alias=exp.TableAlias(
        this=name_of,
        columns=[exp.to_identifier(c, quoted=True) for c in columns])))
    return InlinedSide(alias, info.ref.source,
                       catalog.sources[info.ref.source].dialect.to_sql(query), columns, first_param,
                       info.ref.name)


def side_params(rows: pa.Table) -> list[list]:
    """A side's rows as the parameters its UNNEST reads: one list per column."""
    return [column.to_pylist() for column in rows.columns]
