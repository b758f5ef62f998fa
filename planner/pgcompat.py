"""PostgreSQL syntax that sqlglot does not parse, or that no source understands, made plain.

Clients' catalog queries use PostgreSQL-only forms (`OPERATOR(pg_catalog.~)`,
`::regclass`, `COLLATE pg_catalog.default` ...). `normalize` rewrites the SQL text
before parsing (token by token, never by splicing user values), `rewrite` the parsed tree
afterwards. Both return their input unchanged when there is nothing to do.

`rewrite` makes these plain:
- `a OPERATOR(pg_catalog.~) b` -> `a ~ b` (any built-in operator);
- `x COLLATE pg_catalog.default` / `"C"` / `"POSIX"` / `ucs_basic` -> `x` (fedgate compares
  in C order);
- `pg_catalog.f(...)` / `information_schema._pg_expandarray(...)` -> `f(...)`;
- casts to the reg* types: a literal is looked up (`'t'::regclass` ->
  `regclass_in('t')`, an OID); any other value stays the OID it is, except where it is
  shown (a select-list item, or cast on to text), where it becomes its name
  (`regclass_out(oid)`), which is what PostgreSQL prints;
- `::oid` -> an unsigned 32-bit integer;
- a string cast to boolean -> 'true' or 'false', as boolin reads it ('off', 'y', '1');
- a statement with no table that calls a catalog function (`SELECT pg_backend_pid()`,
  `SELECT 'int4'::regtype::oid`) reads FROM the catalog's one-row relation, so it is routed
  to the catalog source, where those functions live (a CTE's name is no table). Which
  functions those are the gateway says (`CatalogSnapshot.catalog_functions`), besides the
  reg* look-ups this module writes;
- the items of a WITH RECURSIVE are ordered so that each follows those it reads (0A000
  for mutual recursion, as PostgreSQL).
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.parser import Parser
from sqlglot.tokens import Tokenizer, TokenType

from connectors.base import VARIADIC_CALL
from pgwire.errors import (FEATURE_NOT_SUPPORTED, INVALID_TEXT_REPRESENTATION, SYNTAX_ERROR,
                           UNDEFINED_FUNCTION, PgError)
from planner.colnames import ARRAY_LITERAL, CAST_NAME, figure_colname, strong_name
from planner.recursive_order import recursive_order
from planner.substr_arguments import substr_arguments

ONE_ROW = "_fedgate_one_row"
# The call `normalize` wraps a VARIADIC argument in (sqlglot cannot parse the keyword).
VARIADIC = VARIADIC_CALL
CATALOG_SCHEMAS = ("pg_catalog", "information_schema")
_REG_TYPES = {"regclass", "regtype", "regproc", "regprocedure", "regnamespace", "regrole"}
# The emulated catalog's collations (gateway.pg_catalog's pg_collation), all C order in
# PostgreSQL 15 (ucs_basic too); any other stays for the source or the engine to judge
# (connectors.dialects.duckdb.collations).
_COLLATIONS = {f"{schema}{quote}{name}{quote}" for schema in ("", "pg_catalog.") for quote in ("", '"')
               for name in ("default", "c", "posix", "ucs_basic")}

_OPERATORS = {
    "~": lambda a, b: exp.RegexpLike(this=a, expression=b),
    "!~": lambda a, b: exp.Not(this=exp.RegexpLike(this=a, expression=b)),
    "~*": lambda a, b: exp.RegexpILike(this=a, expression=b),
    "!~*": lambda a, b: exp.Not(this=exp.RegexpILike(this=a, expression=b)),
    "~~": lambda a, b: exp.Like(this=a, expression=b),
    "!~~": lambda a, b: exp.Not(this=exp.Like(this=a, expression=b)),
    "~~*": lambda a, b: exp.ILike(this=a, expression=b),
    "!~~*": lambda a, b: exp.Not(this=exp.ILike(this=a, expression=b)),
    "=": lambda a, b: exp.EQ(this=a, expression=b),
    "<>": lambda a, b: exp.NEQ(this=a, expression=b),
    "!=": lambda a, b: exp.NEQ(this=a, expression=b),
    "<": lambda a, b: exp.LT(this=a, expression=b),
    "<=": lambda a, b: exp.LTE(this=a, expression=b),
    ">": lambda a, b: exp.GT(this=a, expression=b),
    ">=": lambda a, b: exp.GTE(this=a, expression=b),
    "||": lambda a, b: exp.DPipe(this=a, expression=b),
    "+": lambda a, b: exp.Add(this=a, expression=b),
    "-": lambda a, b: exp.Sub(this=a, expression=b),
}

# The catalog's look-ups that reg* casts become (`_cast`): only the catalog answers them.
REG_FUNCTIONS = frozenset({f"{t}_in" for t in _REG_TYPES} | {f"{t}_out" for t in _REG_TYPES})

# Type keywords that open a typed literal (`DATE '...'`); INTERVAL sqlglot parses right.
_LITERAL_TYPES = frozenset(Parser.TYPE_TOKENS) - {TokenType.INTERVAL}
_OID_TYPES = {"oid", "regtype", "regclass", "regproc", "regprocedure", "regnamespace", "regrole"}


_UNICODE_ESCAPE = re.compile(r"\\(?:(\\)|\+([0-9A-Fa-f]{6})|([0-9A-Fa-f]{4}))")


def _unicode_identifier(text: str) -> str:
    """The name a U&"..." identifier spells (backslash escapes: \\XXXX, \\+XXXXXX, \\\\)."""
    def char(found: re.Match[str]) -> str:
        if found.group(1):
            return "\\"
        code = int(found.group(2) or found.group(3), 16)
        if not 0 < code <= 0x10FFFF:
            raise PgError(SYNTAX_ERROR, "invalid Unicode escape value")
        return chr(code)
    return _UNICODE_ESCAPE.sub(char, text)


_SIGN_APART = re.compile(r"([+-])\s+(?=[0-9.])")


# Units after an interval's string (`INTERVAL '1' DAY`, `... HOUR TO SECOND`): sqlglot reads those.
_UNITS = {"year", "years", "month", "months", "day", "days", "hour", "hours", "minute", "minutes",
          "second", "seconds"}


def _mangled_interval(text: str) -> bool:
    """An interval string sqlglot's INTERVAL parser cuts short: a time after another part
    (`'1 day 02:00:00'` became 1 day) or `ago` (`'1 day ago'` became +1 day)."""
    lowered = text.lower()
    return (":" in lowered and len(lowered.split()) > 1) or "ago" in lowered.split()


def normalize(sql: str) -> str:
    """Token-level fixes for what sqlglot cannot parse:
    - `::oid[]` (and `::pg_catalog.regtype[]` ...): sqlglot reads `oid` as a special type
      and then fails on `[]`; it becomes `::uint[]`, which the planner reports as `_oid`
      (asyncpg's type introspection binds `$1::oid[]`, and asyncpg can encode only the
      parameter types it knows without introspecting: _oid, not _int8);
    - `OPERATOR(pg_catalog.op)` with an operator sqlglot splits: the bare operator;
    - a typed literal cast on (`DATE '2024-01-01'::text`): parenthesised, because sqlglot
      applies the cast to the string before the type (`DATE ('...'::text)`), where
      PostgreSQL casts the typed literal.
    - `INTERVAL '- 1 day'`: sqlglot drops a sign that stands apart from its number (it
      reads 1 day); the blanks after the sign are taken out ('-1 day'), as PostgreSQL
      reads it. `INTERVAL '1 day 02:00:00'` and `INTERVAL '1 day ago'`, which sqlglot
      reads as 1 day: `CAST('...' AS INTERVAL)`, which keeps the whole string;
    - `ORDER BY x USING >` (`<`): `DESC` (`ASC`), which sqlglot parses;
    - a `U&"d\0061ta"` identifier: the quoted identifier it spells ("data");
    - `f(a, VARIADIC arr)`, which sqlglot cannot parse: `f(a, fedgate_variadic(arr))`
      (VARIADIC is the last argument: the marker's call closes with `f`'s). Only a
      PostgreSQL source can be handed it (connectors.dialects.postgres writes it back as
      `VARIADIC (arr)`); anywhere else the planner refuses it (0A000). A statement that
      spells the marker itself is PostgreSQL's 42883: no such function;
    - `bit varying` (sqlglot reads `x::bit varying` as `x::bit AS varying`): `varbit`.
    Only type names, operators and identifiers' spellings are replaced, blanks taken out
    of an interval, and parentheses added, never a value.
    """
    lowered = sql.lower()
    if "[]" not in sql and "operator" not in lowered and "::" not in sql and "interval" not in lowered \
            and "using" not in lowered and "u&" not in lowered and "variadic" not in lowered \
            and "varying" not in lowered:
        return sql
    try:
        tokens = Tokenizer().tokenize(sql)
    except TokenError:  # the parser reports the same text's error, with its position
        return sql
    edits: list[tuple[int, int, str]] = []  # (start, end inclusive, replacement)
    for i, token in enumerate(tokens):
        if token.token_type in _LITERAL_TYPES and i + 2 < len(tokens) and \
                tokens[i + 1].token_type == TokenType.STRING and \
                tokens[i + 2].token_type == TokenType.DCOLON and \
                (i == 0 or tokens[i - 1].token_type != TokenType.DCOLON):
            typed = sql[token.start:tokens[i + 1].end + 1]
            edits.append((token.start, tokens[i + 1].end, f"({typed})"))
        if token.token_type == TokenType.USING and i + 1 < len(tokens) and \
                tokens[i + 1].token_type in (TokenType.GT, TokenType.LT):
            edits.append((token.start, tokens[i + 1].end,
                          "DESC" if tokens[i + 1].token_type == TokenType.GT else "ASC"))
        if token.text.lower() == "u" and i + 2 < len(tokens) and tokens[i + 1].token_type == TokenType.AMP \
                and tokens[i + 2].token_type == TokenType.IDENTIFIER \
                and token.end + 1 == tokens[i + 1].start and tokens[i + 1].end + 1 == tokens[i + 2].start \
                and not (i + 3 < len(tokens) and tokens[i + 3].text.upper() == "UESCAPE"):
            name = _unicode_identifier(tokens[i + 2].text)
            edits.append((token.start, tokens[i + 2].end, '"' + name.replace('"', '""') + '"'))
        if token.text.lower() == VARIADIC and token.token_type == TokenType.VAR:
            raise PgError(UNDEFINED_FUNCTION, f"function {VARIADIC} does not exist")
        if token.text.upper() == "VARIADIC" and token.token_type == TokenType.VAR and i > 0 and \
                tokens[i - 1].token_type in (TokenType.L_PAREN, TokenType.COMMA):
            close = _call_end(tokens, i)
            if close is not None:  # else the parser reports the unbalanced call
                edits.append((token.start, token.end, f"{VARIADIC}("))
                edits.append((tokens[close].start, tokens[close].start - 1, ")"))
        if token.token_type == TokenType.INTERVAL and i + 1 < len(tokens) and \
                tokens[i + 1].token_type == TokenType.STRING:
            literal = sql[tokens[i + 1].start:tokens[i + 1].end + 1]
            joined = _SIGN_APART.sub(r"\1", literal)
            if _mangled_interval(tokens[i + 1].text) and (i + 2 >= len(tokens) or
                                                        tokens[i + 2].text.lower() not in _UNITS):
                edits.append((token.start, tokens[i + 1].end, f"CAST({joined} AS INTERVAL)"))
            elif joined != literal:
                edits.append((tokens[i + 1].start, tokens[i + 1].end, joined))
        if token.token_type == TokenType.BIT and 0 < i < len(tokens) - 1 and \
                tokens[i - 1].token_type in (TokenType.DCOLON, TokenType.ALIAS) and \
                tokens[i + 1].text.lower() == "varying":
            edits.append((token.start, tokens[i + 1].end, "varbit"))
        if token.token_type == TokenType.DCOLON:
            j = i + 1
            if j + 1 < len(tokens) and tokens[j].text.lower() == "pg_catalog" and \
                    tokens[j + 1].token_type == TokenType.DOT:
                j += 2
            if j + 2 < len(tokens) and tokens[j].text.lower() in _OID_TYPES and \
                    tokens[j + 1].token_type == TokenType.L_BRACKET and \
                    tokens[j + 2].token_type == TokenType.R_BRACKET:
                edits.append((tokens[i + 1].start, tokens[j].end, "uint"))
        elif token.text.upper() == "OPERATOR" and i + 1 < len(tokens) and \
                tokens[i + 1].token_type == TokenType.L_PAREN:
            close = next((k for k in range(i + 2, len(tokens))
                          if tokens[k].token_type == TokenType.R_PAREN), None)
            if close is None:
                continue
            operator = sql[tokens[i + 1].end + 1:tokens[close].start].strip()
            if operator.lower().startswith("pg_catalog."):
                operator = operator[len("pg_catalog."):]
            if operator in _OPERATORS:
                edits.append((token.start, tokens[close].end, f" {operator} "))
    for start, end, text in sorted(edits, reverse=True):
        sql = sql[:start] + text + sql[end + 1:]
    return sql


def _call_end(tokens: list, at: int) -> int | None:
    """The index of the token that ends the argument `tokens[at]` opens: the call's closing
    parenthesis, or its ORDER BY (an aggregate's)."""
    depth = 0
    for k in range(at + 1, len(tokens)):
        kind = tokens[k].token_type
        if kind == TokenType.ORDER_BY and depth == 0:
            return k
        if kind in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
        elif kind in (TokenType.R_PAREN, TokenType.R_BRACKET):
            if depth == 0:
                return k if kind == TokenType.R_PAREN else None
            depth -= 1
    return None


def rewrite(tree: exp.Expression, catalog_functions: frozenset[str]) -> exp.Expression:
    """`tree` made plain (see the module docstring); `catalog_functions` are the functions
    only the emulated catalog answers, besides REG_FUNCTIONS."""
    # Children before parents, so a rewrite sees its operands already plain
    # ('int4'::regtype::oid: the inner cast becomes regtype_in() first).
    # The same walk collects what the statement-level rewrites read (one walk, not four).
    recursive: list[exp.With] = []
    ctes: set[str] = set()
    tables: list[exp.Table] = []
    for node in reversed(list(tree.dfs())):
        new = _plain(node)
        if new is not node:
            if node is tree:
                tree = new
            else:
                node.replace(new)
        if isinstance(new, exp.Table):
            tables.append(new)
        elif isinstance(new, exp.CTE):
            ctes.add(new.alias_or_name)
        elif isinstance(new, exp.With) and new.args.get("recursive"):
            recursive.append(new)
    for with_ in recursive:
        recursive_order(with_)
    return _route_table_less(tree, tables, ctes, catalog_functions)


def _plain(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Operator):
        op = str(node.args.get("operator") or "").strip().removeprefix("pg_catalog.")
        build = _OPERATORS.get(op)
        if build is not None:
            return build(node.this, node.expression)
        return node
    if isinstance(node, exp.Collate):
        if node.expression.sql("postgres").lower() in _COLLATIONS:
            return node.this
        return node
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func) and \
            isinstance(node.this, exp.Identifier) and node.this.name.lower() in CATALOG_SCHEMAS:
        return _unqualified(node.expression)
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Func) and \
            (node.db or "").lower() in CATALOG_SCHEMAS:
        node.set("db", None)
        return node
    if isinstance(node, exp.DataType):
        return _unqualified_type(node)
    if isinstance(node, exp.Cast):
        return _cast(node)
    if isinstance(node, exp.Substring):
        return substr_arguments(node)
    return node


def _unqualified_type(datatype: exp.DataType) -> exp.DataType:
    """`pg_catalog.text` -> `text` (sqlglot reads a qualified type as user-defined)."""
    if datatype.this != exp.DataType.Type.USERDEFINED:
        return datatype
    kind = datatype.args.get("kind")
    text = kind.sql("postgres") if isinstance(kind, exp.Expression) else str(kind or "")
    if not text.lower().startswith("pg_catalog."):
        return datatype
    name = text[len("pg_catalog."):]
    if name.lower().strip('"') in _REG_TYPES or name.lower() == "oid":
        return exp.DataType(this=exp.DataType.Type.USERDEFINED, kind=name.lower())
    try:
        return exp.DataType.build(name, dialect="postgres")
    except (ValueError, ParseError):  # a type sqlglot does not know: keep it user-defined
        return exp.DataType(this=exp.DataType.Type.USERDEFINED, kind=name)


def _unqualified(func: exp.Func) -> exp.Expression:
    """`pg_catalog.f(args)` as the plain call sqlglot would have parsed for `f(args)`."""
    if not isinstance(func, exp.Anonymous):
        return func
    name = func.name
    try:
        return exp.func(name, *func.expressions, dialect="postgres")
    except (ValueError, TypeError):  # a function sqlglot builds only from other arguments
        return func


def _reg_type(datatype: exp.DataType) -> str | None:
    if isinstance(datatype, exp.ObjectIdentifier):
        name = datatype.name.lower()
    elif datatype.this == exp.DataType.Type.USERDEFINED:
        kind = datatype.args.get("kind")
        name = (kind.sql("postgres") if isinstance(kind, exp.Expression) else str(kind or ""))
        name = name.lower().removeprefix("pg_catalog.")
    else:
        return None
    return name if name in _REG_TYPES or name == "oid" else None


def _array_literal(node: exp.Cast) -> exp.Expression:
    """'{a,"b c",NULL}'::text[] -> ARRAY['a', 'b c', NULL]::text[] (one dimension):
    PostgreSQL's array input syntax, which no engine of ours parses."""
    value = node.this
    if not (node.to.this == exp.DataType.Type.ARRAY and isinstance(value, exp.Literal)
            and value.is_string):
        return node
    text = value.this.strip()
    if not (text.startswith("{") and text.endswith("}")) or "{" in text[1:-1]:
        return node
    items: list[exp.Expression] = []
    for match in re.finditer(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^,]*?))\s*(?:,|$)', text[1:-1]):
        quoted, bare = match.group(1), match.group(2)
        if quoted is None and not bare and match.end() >= len(text) - 2 and not items \
                and not text[1:-1].strip():
            break
        if quoted is not None:
            items.append(exp.Literal.string(re.sub(r"\\(.)", r"\1", quoted)))
        elif bare.upper() == "NULL":
            items.append(exp.null())
        else:
            items.append(exp.Literal.string(bare))
        if match.end() >= len(text) - 2:
            break
    array = exp.Array(expressions=items)
    array.meta[ARRAY_LITERAL] = True
    return exp.Cast(this=array, to=node.to)


def _boolean_literal(node: exp.Cast) -> exp.Cast:
    """A string cast to boolean, read as PostgreSQL's boolin reads it ('on', 'of', 'y',
    ' TRUE ', '1'), written 'true'/'false' for any engine; anything else is 22P02."""
    text = node.this.name.strip(" \t\n\r\f\v").lower()
    if text and (("true".startswith(text) or "yes".startswith(text)) or
                 (len(text) >= 2 and "on".startswith(text)) or text == "1"):
        value = "true"
    elif text and (("false".startswith(text) or "no".startswith(text)) or
                   (len(text) >= 2 and "off".startswith(text)) or text == "0"):
        value = "false"
    else:
        raise PgError(INVALID_TEXT_REPRESENTATION,
                      f'invalid input syntax for type boolean: "{node.this.name}"')
    return exp.Cast(this=exp.Literal.string(value), to=node.to)


def _cast(node: exp.Cast) -> exp.Expression:
    if node.to.this == exp.DataType.Type.BOOLEAN and isinstance(node.this, exp.Literal) \
            and node.this.is_string:
        return _boolean_literal(node)
    target = _reg_type(node.to)
    if target is None:
        return _array_literal(node)
    value = node.this
    # Each node written for the cast is named as the cast is ('int4'::regtype is
    # "regtype", atttypid::regtype "atttypid", 'int4'::regtype::oid "oid").
    named = (strong_name(value), figure_colname(node))
    if target == "oid":
        return _named(exp.Cast(this=value, to=exp.DataType.build("UINT")), named)
    if _is_text(value):
        # A name to look up; a bind parameter is a name too ($1::regclass, as psycopg sends).
        value = _named(exp.Anonymous(this=f"{target}_in", expressions=[value]), named)
    elif isinstance(value, exp.Literal):
        value = _named(exp.Cast(this=value, to=exp.DataType.build("UINT")), named)
    if not _shown(node):
        return value
    return _named(exp.Anonymous(this=f"{target}_out", expressions=[value]), named)


def _named(node: exp.Expression, named: tuple[str | None, str]) -> exp.Expression:
    node.meta[CAST_NAME] = named
    return node


_TEXT_FUNCTIONS = {"format", "concat", "quote_ident", "lower", "upper", "trim", "btrim",
                   "replace", "substring", "substr", "current_setting"}


def _is_text(value: exp.Expression) -> bool:
    """Whether a reg* cast's operand is a name (text) rather than an OID."""
    if isinstance(value, exp.Literal):
        return value.is_string
    if isinstance(value, (exp.Placeholder, exp.Parameter, exp.DPipe, exp.Concat)):
        return True
    if isinstance(value, exp.Cast):
        return value.to.is_type(*exp.DataType.TEXT_TYPES, exp.DataType.Type.NAME)
    if isinstance(value, exp.Func):
        name = value.name if isinstance(value, exp.Anonymous) else value.sql_name()
        return name.lower() in _TEXT_FUNCTIONS
    return False


def _shown(node: exp.Expression) -> bool:
    """Whether the value is printed (a select-list item, or cast on to a text type)."""
    parent = node.parent
    if isinstance(parent, exp.Cast):
        return parent.to.is_type(*exp.DataType.TEXT_TYPES, exp.DataType.Type.NAME)
    if isinstance(parent, exp.Alias):
        parent = parent.parent
    return isinstance(parent, exp.Select) and node.arg_key in ("expressions", "this") and \
        any(e is node or (isinstance(e, exp.Alias) and e.this is node)
            for e in parent.expressions)


def _calls_catalog(tree: exp.Expression, catalog_functions: frozenset[str]) -> bool:
    for func in tree.find_all(exp.Func):
        name = (func.name if isinstance(func, exp.Anonymous) else func.sql_name()).lower()
        if name in catalog_functions or name in REG_FUNCTIONS:
            return True
    return False


def _route_table_less(tree: exp.Expression, tables: list[exp.Table], ctes: set[str],
                      catalog_functions: frozenset[str]) -> exp.Expression:
    """`tree` reading the catalog's one-row relation if it has no table but calls one of
    `catalog_functions` or REG_FUNCTIONS; `tables` and `ctes` are its tables and CTE names."""
    if not isinstance(tree, exp.Select):
        return tree
    # A CTE's name is no table: `WITH RECURSIVE r ... SELECT current_setting(..) FROM r`
    # has none, and the catalog's functions must answer it, not an engine's namesakes.
    named = any(isinstance(t.this, exp.Identifier) and (t.db or t.name not in ctes) for t in tables)
    if named or not _calls_catalog(tree, catalog_functions):
        return tree
    one_row = exp.table_(ONE_ROW, db="pg_catalog")
    if tree.args.get("from_") is None and tree.args.get("from") is None:
        return tree.from_(one_row)
    return tree.join(one_row, join_type="cross")
