"""PREPARE's parameter types and EXECUTE's arguments, read as PostgreSQL reads them.

`declared_types` turns PREPARE's type list into OIDs (42704 for a type PostgreSQL would
not know either). `argument_texts` turns EXECUTE's arguments into the text parameters the
prepared statement is bound with, as an extended-protocol client would send them. Only
constants are taken: a literal (string, number, TRUE/FALSE, NULL) or a cast of one.
PostgreSQL coerces each argument to its parameter's type; here a string literal is the
parameter's input text as it is, and a typed constant (a number, a boolean, a cast) is
accepted where PostgreSQL's assignment coercion would take it without changing its text
(the same type, number to number, anything to a string type), a number going into an
integer rounded as PostgreSQL rounds it; elsewhere PostgreSQL's 42804. A cast from one
typed constant to another type would need the cast computed: 0A000.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from pgwire.errors import (DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, NUMERIC_VALUE_OUT_OF_RANGE,
                           SYNTAX_ERROR, UNDEFINED_OBJECT, UNDEFINED_PARAMETER, PgError)
from pgwire.types.table import format_type as type_name
from pgwire.types.table import pg_type_by_name

_INTEGERS = frozenset({20, 21, 23})  # int8, int2, int4
_NUMBERS = _INTEGERS | {700, 701, 1700}  # float4, float8, numeric
_STRINGS = frozenset({25, 1043, 1042, 19, 705})  # text, varchar, bpchar, name, unknown
_BOOL, _INT4, _INT8, _NUMERIC = 16, 23, 20, 1700


def split_top_level(text: str) -> list[tuple[str, int]]:
    """`text` cut at its top-level commas (not inside parentheses or quotes): each piece
    stripped, with where it starts in `text`."""
    pieces, depth, start, quote = [], 0, 0, ""
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            pieces.append((text[start:i], start))
            start = i + 1
    pieces.append((text[start:], start))
    return [(p.strip(), at + len(p) - len(p.lstrip())) for p, at in pieces]


def declared_types(args: str | None, args_at: int) -> tuple[int, ...]:
    """PREPARE's parameter types as OIDs; `args_at` (0-based) places errors."""
    if args is None or not args.strip():
        return ()
    oids = []
    for text, at in split_top_level(args):
        name = text[len("pg_catalog."):] if text.lower().startswith("pg_catalog.") else text
        found = pg_type_by_name(name) if name else None
        if found is None:
            shown = name.replace('"', "") if '"' in name else name.lower()
            raise PgError(UNDEFINED_OBJECT, f'type "{shown}" does not exist', position=args_at + at + 1)
        oids.append(found.oid)
    return tuple(oids)


def parse_arguments(args: str | None) -> list[exp.Expression | tuple[str | None, int | None]]:
    """EXECUTE's arguments ([] for none): plain numbers, strings, NULL, TRUE and FALSE
    read at once as constants (`_constant`'s text and type); other arguments as
    expressions, read by sqlglot, for `argument_texts` to judge. (A parse costs a hundred
    times the plain reading, and pgbench-like EXECUTEs pass numbers.)"""
    if args is None:
        return []
    if not args.strip():
        raise PgError(SYNTAX_ERROR, 'syntax error at or near ")"')
    plain = [_plain(piece) for piece, _ in split_top_level(args)]
    if all(p is not False for p in plain):
        return plain  # type: ignore[return-value]
    try:
        tree = sqlglot.parse_one(f"SELECT {args}", read="postgres")
    except (ParseError, TokenError) as err:
        raise PgError(SYNTAX_ERROR, f"syntax error in EXECUTE's arguments: {args}") from err
    assert isinstance(tree, exp.Select)
    return list(tree.expressions)


_PLAIN_NUMBER = re.compile(r"([+-]?)(\d+(?:\.\d*)?)")
_PLAIN_STRING = re.compile(r"'((?:[^']|'')*)'")
_PLAIN_WORDS = {"null": (None, None), "true": ("true", _BOOL), "false": ("false", _BOOL)}


def _plain(piece: str) -> tuple[str | None, int | None] | bool:
    """A plain constant's text and type, or False when it takes the parser."""
    word = _PLAIN_WORDS.get(piece.lower())
    if word is not None:
        return word
    found = _PLAIN_NUMBER.fullmatch(piece)
    if found is not None:
        text, typed = _number(found.group(2))
        return ("-" + text if found.group(1) == "-" else text), typed
    found = _PLAIN_STRING.fullmatch(piece)
    if found is not None:
        return found.group(1).replace("''", "'"), None
    return False


def argument_texts(arguments: list[exp.Expression | tuple[str | None, int | None]],
                   param_oids: tuple[int, ...]) -> list[bytes | None]:
    """Each argument as its parameter's text (None: NULL)."""
    out: list[bytes | None] = []
    for number, (argument, oid) in enumerate(zip(arguments, param_oids), start=1):
        text, typed = argument if isinstance(argument, tuple) else _constant(argument)
        if text is not None:
            text = _coerced(text, typed, oid, number)
        out.append(None if text is None else text.encode())
    return out


def _constant(node: exp.Expression) -> tuple[str | None, int | None]:
    """A constant's text and type (None: a string literal, of unknown type until coerced)."""
    if isinstance(node, exp.Paren):
        return _constant(node.this)
    if isinstance(node, exp.Null):
        return None, None
    if isinstance(node, exp.Boolean):
        return ("true" if node.this else "false"), _BOOL
    if isinstance(node, (exp.RawString, exp.ByteString)) or (
            isinstance(node, exp.Literal) and node.is_string):
        return str(node.this), None
    if isinstance(node, exp.Literal):
        return _number(str(node.this))
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        text, typed = _number(str(node.this.this))
        return f"-{text}", typed
    if isinstance(node, exp.Cast) and not node.find(exp.Subquery, exp.Select):
        text, typed = _constant(node.this)
        target = _cast_type(node.to)
        if text is None or typed is None or typed == target:
            return text, target
        if typed in _NUMBERS and target in _NUMBERS:
            return _into(text, typed, target), target
        raise PgError(FEATURE_NOT_SUPPORTED, f"EXECUTE arguments that cast a {type_name(typed)} to "
                      f"{type_name(target)} are not supported by fedgate (write the value as a "
                      "string literal)")
    if node.find(exp.Subquery, exp.Select):
        raise PgError(FEATURE_NOT_SUPPORTED, "cannot use subquery in EXECUTE parameter")
    parameter = node.find(exp.Parameter, exp.Placeholder)
    if parameter is not None:
        # EXECUTE's arguments are not parameters of the statement holding them: PostgreSQL
        # says so too (a driver's `EXECUTE p(%s)`).
        raise PgError(UNDEFINED_PARAMETER, f"there is no parameter ${parameter.name or parameter.this}")
    raise PgError(FEATURE_NOT_SUPPORTED, "EXECUTE arguments other than constants (a literal, or a "
                  f"cast of one) are not supported by fedgate: {node.sql(dialect='postgres')}")


def _number(text: str) -> tuple[str, int]:
    """A numeric literal's type as PostgreSQL's parser gives it: int4, int8, else numeric."""
    if text.isdigit():
        value = int(text)
        return text, _INT4 if value < 2**31 else _INT8 if value < 2**63 else _NUMERIC
    return text, _NUMERIC


def _cast_type(to: exp.DataType) -> int:
    name = to.sql(dialect="postgres")
    name = name[len("pg_catalog."):] if name.lower().startswith("pg_catalog.") else name
    found = pg_type_by_name(name)
    if found is None:
        raise PgError(UNDEFINED_OBJECT, f'type "{name.lower()}" does not exist')
    return found.oid


_RANGES = {21: (-2**15, 2**15 - 1, "smallint"), 23: (-2**31, 2**31 - 1, "integer"),
           20: (-2**63, 2**63 - 1, "bigint")}


def _into(text: str, typed: int, target: int) -> str:
    """A number converted to another number type: into an integer, rounded half away from
    zero as numeric-to-integer casts do, and refused out of its range as the cast refuses
    it (22003 "integer out of range", not the input function's message); otherwise its
    text serves."""
    if target not in _INTEGERS or typed == target:
        return text
    try:
        value = int(Decimal(text).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    except InvalidOperation:
        return text  # not a finite number: the parameter's input function says so
    low, high, name = _RANGES[target]
    if not low <= value <= high:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{name} out of range")
    return str(value)


# Assignment casts between date/time types whose input reads the typed constant's text
# as the cast would (timestamptz to timestamp would drop the offset instead: not here).
_SAME_TEXT = frozenset({(1082, 1114), (1082, 1184), (1114, 1184)})  # date, timestamp, timestamptz


def _coerced(text: str, typed: int | None, oid: int, number: int) -> str:
    if typed is None or typed == oid or oid in _STRINGS or oid == 0 or (typed, oid) in _SAME_TEXT:
        return text
    if typed in _NUMBERS and oid in _NUMBERS:
        return _into(text, typed, oid)
    raise PgError(DATATYPE_MISMATCH, f"parameter ${number} of type {type_name(typed)} cannot be "
                  f"coerced to the expected type {type_name(oid)}",
                  hint="You will need to rewrite or cast the expression.")
