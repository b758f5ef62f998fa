"""Every function a statement calls must be one PostgreSQL has (or the gateway answers).

The engines that run what the planner writes are DuckDB and Spark, and their own
functions reach files, the environment and the network (`read_text`, `read_csv`, `glob`,
`getenv`, `reflect` ...). A client speaks PostgreSQL, so a call is accepted only under a
name in `allowed` (handed in by the caller: PostgreSQL's functions plus those the emulated
catalog answers) or a word of PostgreSQL's grammar (`pgwire.function_names.SYNTAX_CALLS`);
anything else is PostgreSQL's own 42883, before any engine or source sees the statement.

The name checked is the one the client wrote. sqlglot parses several names into one class
(`instr`, which PostgreSQL lacks, and `strpos` both become StrPosition), so the class says
nothing about the spelling: the name is read from the statement's text where sqlglot
recorded its token (`meta` start/end, as planner.colnames does). Calls parsed without a
name token are keyword syntax (`CURRENT_DATE`, `EXTRACT(... FROM ...)`, `CAST`,
`TRIM(... FROM ...)`) or names sqlglot parses specially (`arg_max(...)`, `try_cast(...)`):
those are checked under the class's name, and operators (`a || b`, `x ~ 'p'`), which
PostgreSQL resolves as operators, not functions, are left alone.

>>> allowed = frozenset({"strpos", "lower"})
>>> check_functions(sqlglot.parse_one("select strpos(a, 'b') from t", read="postgres"),
...                 "select strpos(a, 'b') from t", allowed)
>>> sql = "select instr(a, 'b') from t"
>>> check_functions(sqlglot.parse_one(sql, read="postgres"), sql, allowed)
Traceback (most recent call last):
pgwire.errors.PgError: function instr(unknown, unknown) does not exist
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlglot  # noqa: F401  (the doctest's)
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from pgwire.errors import PgError
from pgwire.function_names import SYNTAX_CALLS, undefined_function
from planner.catalog import CatalogSnapshot
from planner.type_names import pg_type_name

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")

# sqlglot classes whose PostgreSQL name differs from their sql_name(), for calls parsed
# without a name token.
_CLASS_NAMES: dict[type[exp.Expression], str] = {
    exp.StrPosition: "position",
    exp.GroupConcat: "string_agg",
    exp.AtTimeZone: "timezone",
    exp.CurrentTimestamp: "current_timestamp",
    exp.Localtime: "localtime",
    exp.If: "case",
    exp.JSONObject: "json_object",
    exp.JSONArrayAgg: "json_agg",
    exp.JSONObjectAgg: "json_object_agg",
    exp.JSONBObjectAgg: "jsonb_object_agg",
}
# format_type's names for the types whose internal name differs (what messages print).
_DISPLAY_NAMES = {"int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real",
                  "float8": "double precision", "bool": "boolean", "varchar": "character varying",
                  "bpchar": "character", "timestamptz": "timestamp with time zone",
                  "timestamp": "timestamp without time zone", "timetz": "time with time zone",
                  "time": "time without time zone"}
# Expressions that are operators or grammar in PostgreSQL, whatever sqlglot's class.
_OPERATORS = (exp.Binary, exp.Unary, exp.Predicate, exp.Connector,
              exp.SubqueryPredicate, exp.Bracket, exp.Paren, exp.Tuple, exp.Distinct)


def written_name(node: exp.Expression, sql: str) -> str | None:
    """The function name as the statement spells it, when sqlglot recorded where it is and
    a call's `(` follows (else it is a keyword or an operator)."""
    start, end = node.meta.get("start"), node.meta.get("end")
    if start is None or end is None or not sql[end + 1:].lstrip().startswith("("):
        return None
    word = sql[start:end + 1]
    if _WORD.fullmatch(word):
        return word.lower()  # an unquoted name folds to lower case, as in PostgreSQL
    if len(word) > 2 and word[0] == word[-1] == '"':
        return word[1:-1].replace('""', '"')
    return None


def called_name(node: exp.Func, sql: str) -> str | None:
    """The name a call goes by in PostgreSQL; None for an operator or grammar form."""
    written = written_name(node, sql)
    if written is not None:
        return written
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    if isinstance(node, _OPERATORS) or type(node) is exp.Cast:  # TRY_CAST is no PostgreSQL
        return None
    for cls, name in _CLASS_NAMES.items():
        if type(node) is cls:
            return name
    return node.sql_name().lower()


def check_functions(tree: exp.Expression, sql: str, allowed: frozenset[str],
                    catalog: CatalogSnapshot | None = None,
                    search_path: Sequence[str] = ()) -> None:
    """Raise PostgreSQL's 42883 for the first call in `tree` (parsed from `sql`) of a
    function that is neither in `allowed` nor a word of PostgreSQL's grammar.

    With `catalog`, the message names the types of column arguments too, as PostgreSQL's
    does: the refused statement's tree is then typed in place (it is not planned)."""
    for node in tree.find_all(exp.Func):
        name = called_name(node, sql)
        if name is None or name in allowed or name in SYNTAX_CALLS:
            continue
        if catalog is not None:
            type_in_place(tree, catalog, search_path)
        raise _refusal(node, name)


def type_in_place(tree: exp.Expression, catalog: CatalogSnapshot,
                   search_path: Sequence[str]) -> None:
    """Give the expressions of `tree` their types from the catalog, for the message only.
    A statement that cannot be typed (a table that does not exist, a column no table has)
    leaves its arguments untyped: the message then says `unknown`, and the error that
    matters, the call's, is still the one raised."""
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    try:
        for table in tree.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier) or (not table.db and table.name in ctes):
                continue
            name = table.name if table.this.quoted else table.name.lower()
            info = catalog.resolve(name, table.db or None, search_path)
            table.set("this", exp.to_identifier(info.ref.name, quoted=table.this.quoted))
            table.set("db", exp.to_identifier(info.ref.source))
            table.set("catalog", None)
        qualify(tree, schema=catalog.sqlglot_schema, dialect="postgres",
                quote_identifiers=False, validate_qualify_columns=False, identify=False)
        annotate_types(tree, schema=catalog.sqlglot_schema)
    except (PgError, SqlglotError):  # not typed: the refusal below says what it knows
        return


def _refusal(node: exp.Func, name: str) -> PgError:
    start = node.meta.get("start")
    position = start + 1 if start is not None else None
    return undefined_function(name, [argument_type(a) for a in _arguments(node)], position)


def _arguments(node: exp.Func) -> list[exp.Expression]:
    """The call's arguments in the order written (sqlglot keeps some as named args)."""
    found: list[exp.Expression] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if isinstance(value, list):
            found.extend(v for v in value if isinstance(v, exp.Expression))
        elif isinstance(value, exp.Expression) and not (isinstance(node, exp.Anonymous) and key == "this"):
            found.append(value)
    return found


def display_type_name(name: str) -> str:
    """A type's name as PostgreSQL's messages print it (int4: integer)."""
    return _DISPLAY_NAMES.get(name, name)


def argument_type(arg: exp.Expression) -> str:
    """The type PostgreSQL gives an argument before it looks the function up, as far as
    the expression alone tells (a string literal is `unknown`, as in PostgreSQL)."""
    if isinstance(arg, exp.Literal):
        if arg.is_string:
            return "unknown"
        text = arg.this
        if re.fullmatch(r"\d+", text):
            return "integer" if int(text) < 2**31 else "bigint" if int(text) < 2**63 else "numeric"
        return "numeric"
    if isinstance(arg, exp.Boolean):
        return "boolean"
    if isinstance(arg, exp.Cast):
        name = pg_type_name(arg.to)
        return _DISPLAY_NAMES.get(name, name) if name else arg.to.sql("postgres").lower()
    if isinstance(arg, exp.Neg) and isinstance(arg.this, exp.Literal):
        return argument_type(arg.this)
    typed = pg_type_name(arg.type) if arg.type is not None and \
        arg.type.this not in (exp.DataType.Type.UNKNOWN, exp.DataType.Type.NULL) else None
    return _DISPLAY_NAMES.get(typed, typed) if typed else "unknown"
