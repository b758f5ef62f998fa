"""format(), quote_ident(), quote_literal() and quote_nullable() as PostgreSQL writes them, on DuckDB.

DuckDB's format() reads `{}` (it would return '%s' as written) and it has no quote_*
functions, so each call becomes a concatenation:
- format()'s `%s` is the argument's text (NULL as nothing), `%I` its quote_ident()
  (NULL raises PostgreSQL's 22004), `%L` its quote_nullable(), `%%` a `%`, each padded
  to a width if it has one (`%10s`, `%-10s`), of the argument a position names (`%2$s`);
  a format that is not a literal, or a width read from an argument (`%*s`), is refused
  (0A000);
- quote_ident(x) is x itself when it is lower-case ASCII letters, digits and underscores,
  not starting with a digit, and not a keyword PostgreSQL reserves in any way
  (pgwire.keywords); otherwise x in double quotes, its own doubled (ruleutils.c,
  quote_identifier);
- quote_literal(x) is x in single quotes, its own quotes and backslashes doubled, with an
  `E` before it when it holds a backslash; quote_nullable(x) the same, and NULL for NULL.
An argument's text: a boolean's t/f, an integer's or a string's own; any other argument
type of %I, %L or the quote functions is refused (its text in the engine is not always
PostgreSQL's).
"""

from __future__ import annotations

import re

from sqlglot import exp

from connectors.base import volatile_reason
from connectors.dialects.rules import call, raised
from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError
from pgwire.function_names import undefined_function
from pgwire.keywords import NOT_UNRESERVED

T = exp.DataType.Type
NULL_IDENTIFIER = "null values cannot be formatted as an SQL identifier"
# A specifier: `%%`, or an optional argument position (`2$`), the `-` flag (left-justify),
# an optional width, and s, I or L. PostgreSQL's `*` widths are not read (refused).
_FORMAT_PIECE = re.compile(r"%%|%(?:(?P<position>\d+)\$)?(?P<left>-)?(?P<width>\d+)?(?P<kind>[sIL])|%|[^%]+")
_QUOTE_CALLS = {"quote_ident", "quote_literal", "quote_nullable"}
_NOT_TEXT = {T.SMALLINT: "smallint", T.INT: "integer", T.BIGINT: "bigint", T.BOOLEAN: "boolean"}


def _text(value: str) -> exp.Literal:
    return exp.Literal.string(value)


def _call_name(node: exp.Expression) -> str | None:
    """An unqualified call's name (`fg_fn.quote_ident(...)` is the emulated catalog's)."""
    return str(node.this).lower() if isinstance(node, exp.Anonymous) and not isinstance(node.parent, exp.Dot) \
        else None


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(exp.Format) is not None or any(
        _call_name(call) in _QUOTE_CALLS for call in tree.find_all(exp.Anonymous))


def _as_text(value: exp.Expression, strict: bool, output: bool = True) -> exp.Expression:
    """`value`'s text as PostgreSQL's output function writes it (NULL stays NULL); with
    `output` false as its cast to text does (a boolean's true/false, not t/f: the quote
    functions take text). `strict`: refuse a type whose text the engine may write otherwise."""
    kind = value.to if isinstance(value, exp.Cast) else value.type
    if kind is not None and kind.this == T.BOOLEAN and output:
        return exp.Case(ifs=[exp.If(this=value.copy(), true=_text("t")),
                             exp.If(this=exp.Not(this=value.copy()), true=_text("f"))])
    if strict and not (isinstance(value, exp.Null) or kind is not None and kind.this in (
            T.TEXT, T.VARCHAR, T.BOOLEAN, *exp.DataType.INTEGER_TYPES) and not kind.expressions):
        raise PgError(FEATURE_NOT_SUPPORTED, "quoting a value that is not text, an integer or a "
                      "boolean is not supported by fedgate outside PostgreSQL sources")
    return exp.Cast(this=value.copy(), to=exp.DataType.build("VARCHAR"))


def _concat(*parts: exp.Expression) -> exp.Expression:
    result = parts[0]
    for part in parts[1:]:
        result = exp.DPipe(this=result, expression=part, safe=True)
    return result


def _replace(text: exp.Expression, old: str, new: str) -> exp.Expression:
    return exp.Anonymous(this="replace", expressions=[text, _text(old), _text(new)])


def quote_ident(text: exp.Expression) -> exp.Expression:
    plain = exp.and_(
        exp.Anonymous(this="regexp_full_match", expressions=[text.copy(), _text("[a-z_][a-z0-9_]*")]),
        exp.Not(this=exp.In(this=text.copy(), expressions=[_text(w) for w in sorted(NOT_UNRESERVED)])))
    quoted = _concat(_text('"'), _replace(text.copy(), '"', '""'), _text('"'))
    return exp.Case(ifs=[exp.If(this=plain, true=text.copy())], default=quoted)


def quote_literal(text: exp.Expression) -> exp.Expression:
    doubled = _replace(_replace(text.copy(), "\\", "\\\\"), "'", "''")
    escaped = exp.Anonymous(this="contains", expressions=[text.copy(), _text("\\")])
    return exp.Case(ifs=[exp.If(this=escaped, true=_concat(_text("E'"), doubled, _text("'")))],
                    default=_concat(_text("'"), doubled.copy(), _text("'")))


def quote_nullable(text: exp.Expression) -> exp.Expression:
    return exp.Coalesce(this=quote_literal(text), expressions=[_text("NULL")])


def _format(node: exp.Format) -> exp.Expression:
    """As text_format (varlena.c): each specifier takes the argument it names, else the
    one after the last taken; its text is padded with spaces to its width, on the left
    unless `-` asks for the right."""
    spec, args = node.this, list(node.expressions)
    pieces = list(_FORMAT_PIECE.finditer(spec.name)) if isinstance(spec, exp.Literal) and spec.is_string else None
    if pieces is None or any(piece.group(0) == "%" for piece in pieces):
        raise PgError(FEATURE_NOT_SUPPORTED, "format() with a format other than a literal using "
                      "%s, %I, %L and %% (with a position, `-` and a width) is not supported by "
                      "fedgate outside PostgreSQL sources")
    parts: list[exp.Expression] = []
    taken = 0
    for piece in pieces:
        kind = piece.group("kind")
        if kind is None:
            parts.append(_text("%" if piece.group(0) == "%%" else piece.group(0)))
            continue
        position = piece.group("position")
        if position is not None and int(position) == 0:
            raise PgError(INVALID_PARAMETER_VALUE,
                          "format specifies argument 0, but arguments are numbered from 1")
        taken = int(position) if position is not None else taken + 1
        if taken > len(args):
            raise PgError(INVALID_PARAMETER_VALUE, "too few arguments for format()")
        value = args[taken - 1]
        if kind == "s":
            text = exp.Coalesce(this=_as_text(value, False), expressions=[_text("")])
        elif kind == "I":
            failure = raised(NULL_IDENTIFIER)
            text = exp.Case(ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.null()), true=failure)],
                            default=quote_ident(_as_text(value, True)))
        else:
            text = quote_nullable(_as_text(value, True))
        width = int(piece.group("width") or 0)
        parts.append(_padded(text, width, piece.group("left") is not None) if width else text)
    return _concat(*parts) if parts else _text("")


def _padded(text: exp.Expression, width: int, left: bool) -> exp.Expression:
    """`text` with spaces up to `width` characters, after it (`left`) or before it; never
    cut (DuckDB's lpad() and rpad() would cut a longer one)."""
    missing = exp.Greatest(this=exp.Sub(this=exp.Literal.number(width), expression=call("length", text.copy())),
                           expressions=[exp.Literal.number(0)])
    spaces = call("repeat", _text(" "), missing)
    return _concat(text, spaces) if left else _concat(spaces, text.copy())


def postgres_quoting(node: exp.Expression) -> exp.Expression:
    """`node` as PostgreSQL's answer in DuckDB (see the module docstring); others as they are."""
    name = _call_name(node)
    if not isinstance(node, exp.Format) and (name not in _QUOTE_CALLS or len(node.expressions) != 1):
        return node
    if any(volatile_reason(arg) for arg in node.expressions):  # written several times
        raise PgError(FEATURE_NOT_SUPPORTED, f"{name or 'format'}() of a volatile argument is not "
                      "supported by fedgate outside PostgreSQL sources")
    if isinstance(node, exp.Format):
        return _format(node)
    argument = node.expressions[0]
    kind = argument.type
    if name == "quote_ident" and kind is not None and kind.this in _NOT_TEXT:
        # quote_ident takes text alone, which a number or a boolean is not implicitly
        raise undefined_function(name, [_NOT_TEXT[kind.this]])
    text = _as_text(argument, True, output=False)
    return quote_ident(text) if name == "quote_ident" else \
        quote_literal(text) if name == "quote_literal" else quote_nullable(text)
