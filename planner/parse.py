"""Parse one SQL statement with sqlglot's PostgreSQL dialect, reporting errors as 42601."""

from __future__ import annotations

import logging
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Tokenizer, TokenType

from pgwire.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, PgError

# sqlglot warns through logging when it falls back to an opaque Command; we raise instead.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

QUERY_TYPES = (exp.Query, exp.Values)


def _position(sql: str, line: int, col: int) -> int:
    """sqlglot's 1-based line/column to PostgreSQL's 1-based character position."""
    lines = sql.split("\n")
    before = sum(len(text) + 1 for text in lines[: max(line - 1, 0)])
    return max(before + col - 1, 1)


def _first_word(sql: str) -> str:
    words = sql.split()
    return words[0] if words else ""


def _check_unicode_escapes(tree: exp.Expression) -> None:
    """Refuse a U&'' string escaping a code point PostgreSQL's text cannot hold (NUL, or
    beyond U+10FFFF), as PostgreSQL's parser does: sqlglot keeps the escapes as written,
    and MySQL or SQLite would take them."""
    for node in tree.find_all(exp.UnicodeString):
        escape = node.args.get("escape")
        mark = re.escape(escape.this if isinstance(escape, exp.Literal) else "\\")
        for found in re.finditer(rf"{mark}(?:{mark}|\+([0-9A-Fa-f]{{6}})|([0-9A-Fa-f]{{4}}))",
                                 node.this):
            digits = found.group(1) or found.group(2)
            if digits is not None and not 0 < int(digits, 16) <= 0x10FFFF:
                raise PgError(SYNTAX_ERROR, "invalid Unicode escape value")


def _spell_date_parts(tree: exp.Expression, sql: str) -> None:
    """Record on each Extract whether the statement wrote `date_part(...)` or
    `extract(...)`: sqlglot parses both into one class without the name's position, and
    PostgreSQL names an output column after the spelling (planner.colnames)."""
    extracts = list(tree.find_all(exp.Extract, bfs=False))
    if not extracts:
        return
    tokens = Tokenizer().tokenize(sql)
    spelled = [token.text.lower() for token, after in zip(tokens, tokens[1:])
               if token.text.lower() in ("date_part", "extract")
               and after.token_type == TokenType.L_PAREN]
    if len(spelled) == len(extracts):  # source order is the tree's pre-order
        for node, word in zip(extracts, spelled):
            node.meta["spelled"] = word


def _spell_logs(tree: exp.Expression, sql: str) -> None:
    """Record on each Log whether the statement wrote `log10(x)` or `log(...)`: sqlglot
    parses log10(x) as log(10, x), which PostgreSQL has only for numerics (a float8
    argument is 42883 there), so a PostgreSQL source is sent log10(x) again."""
    logs = list(tree.find_all(exp.Log, bfs=False))
    if not logs:
        return
    tokens = Tokenizer().tokenize(sql)
    spelled = [token.text.lower() for token, after in zip(tokens, tokens[1:])
               if token.text.lower() in ("log", "log10") and after.token_type == TokenType.L_PAREN]
    if len(spelled) == len(logs):  # source order is the tree's pre-order
        for node, word in zip(logs, spelled):
            node.meta["spelled"] = word


def _width(query: exp.Expression) -> int | None:
    """How many columns `query` yields, when the text alone says (no `*`)."""
    while isinstance(query, (exp.SetOperation, exp.Subquery)):
        query = query.this
    if isinstance(query, exp.Values):
        return len(query.expressions[0].expressions) if query.expressions else None
    if isinstance(query, exp.Select) and not any(
            isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
            for e in query.expressions):
        return len(query.expressions)
    return None


def _check_widths(tree: exp.Expression) -> None:
    """PostgreSQL's parse-analysis errors for rows of unequal width (the engines word
    them otherwise, or take the wider)."""
    for node in tree.find_all(exp.Values, exp.SetOperation):
        if isinstance(node, exp.Values):
            if len({len(row.expressions) for row in node.expressions
                    if isinstance(row, exp.Tuple)}) > 1:
                raise PgError(SYNTAX_ERROR, "VALUES lists must all be the same length")
            continue
        left, right = _width(node.this), _width(node.expression)
        if left is not None and right is not None and left != right:
            operator = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}
            raise PgError(SYNTAX_ERROR, f"each {operator[type(node)]} query must have the same "
                          "number of columns")


def parse_query(sql: str) -> exp.Expression:
    """The statement's tree; anything but a query (SELECT, VALUES, TABLE, WITH ...) raises."""
    try:
        trees = [t for t in sqlglot.parse(sql, read="postgres") if t is not None]
    except ParseError as err:
        info = err.errors[0] if err.errors else {}
        token = (info.get("highlight") or "").strip()
        at_end = not token or sql.rstrip().endswith(token)
        message = "syntax error at end of input" if at_end and not token else \
            f'syntax error at or near "{token}"'
        position = _position(sql, info.get("line", 1), info.get("col", 1)) if info else None
        raise PgError(SYNTAX_ERROR, message, position=position) from err
    except TokenError as err:
        raise PgError(SYNTAX_ERROR, f"syntax error: {err}") from err
    if len(trees) != 1:
        raise PgError(SYNTAX_ERROR, "cannot insert multiple commands into a prepared statement")
    tree = trees[0]
    if isinstance(tree, QUERY_TYPES):
        _check_unicode_escapes(tree)
        _spell_date_parts(tree, sql)
        _spell_logs(tree, sql)
        _check_widths(tree)
        return tree
    if isinstance(tree, exp.Command):
        keyword = str(tree.this).upper()
        raise PgError(FEATURE_NOT_SUPPORTED, f"{keyword} is not supported by fedgate yet")
    if isinstance(tree, (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop,
                         exp.Alter, exp.TruncateTable)):
        raise PgError(FEATURE_NOT_SUPPORTED, f"{tree.key.upper()} statements are not supported by fedgate yet")
    raise PgError(SYNTAX_ERROR, f'syntax error at or near "{_first_word(sql)}"', position=1)
