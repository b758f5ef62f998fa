"""to_char, to_date and to_timestamp formats DuckDB's strftime/strptime read as PostgreSQL.

sqlglot translates a PostgreSQL template (`YYYY-MM-DD HH24:MI`) into strftime's
(`%Y-%m-%d %H:%M`) through a table that lacks many of PostgreSQL's patterns: `Mon`, `Dy`,
`Day`, `Month`, `AM`/`PM`, `Q`, `J` ... pass through as letters, which strftime prints as
written (`to_char(d, 'DD Mon')` was '05 Mon'). Some translations are wrong: `D` (Sunday
is 1) becomes `%u` (Monday is 1), `WW` `%U`, `OF` `%z`. So a format is accepted only when
every letter outside a `%` directive is inside double quotes (PostgreSQL's literal text,
whose quotes are removed here) and it uses none of those directives; any other format is
refused (0A000). to_char of an infinite date or timestamp is NULL in PostgreSQL,
'infinity' in DuckDB.

A float's text form (`x::text`) is PostgreSQL's too: 'NaN', 'Infinity' and '-Infinity'
where DuckDB writes nan, inf and -inf, and a whole number below 10^15 without DuckDB's
'.0' ('100', '-0'). Larger values and fractions are written alike by both.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import volatile_reason
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

T = exp.DataType.Type
_WRONG_DIRECTIVES = frozenset("uUz")  # D, WW and OF, translated to other meanings
_DATETIMES = {T.DATE, T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMPLTZ, T.TIMESTAMP_S, T.TIMESTAMP_MS,
              T.TIMESTAMP_NS}
_FORMATTED = (exp.TimeToStr, exp.StrToDate, exp.StrToTime)


_FLOATS = {T.DOUBLE, T.FLOAT}
_TEXTS = {T.TEXT, T.VARCHAR}


def _float_as_text(node: exp.Expression) -> bool:
    if not (isinstance(node, exp.Cast) and node.to.this in _TEXTS):
        return False
    operand = node.this
    kind = operand.to if isinstance(operand, exp.Cast) else operand.type
    return kind is not None and kind.this in _FLOATS and volatile_reason(operand) is None


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(*_FORMATTED) is not None or any(
        _float_as_text(cast) for cast in tree.find_all(exp.Cast))


def _float_text(node: exp.Cast) -> exp.Expression:
    value = node.this

    def text(literal: str) -> exp.Literal:
        return exp.Literal.string(literal)

    whole = exp.and_(exp.EQ(this=value.copy(), expression=exp.Anonymous(this="trunc", expressions=[value.copy()])),
                     exp.LT(this=exp.Abs(this=value.copy()), expression=exp.Literal.number("1e15")))
    plain = exp.Cast(this=value.copy(), to=node.to.copy())
    return exp.Case(ifs=[
        exp.If(this=exp.Anonymous(this="isnan", expressions=[value.copy()]), true=text("NaN")),
        exp.If(this=exp.EQ(this=value.copy(), expression=exp.Cast(this=text("inf"), to=exp.DataType.build("DOUBLE"))),
               true=text("Infinity")),
        exp.If(this=exp.EQ(this=value.copy(), expression=exp.Cast(this=text("-inf"), to=exp.DataType.build("DOUBLE"))),
               true=text("-Infinity")),
        exp.If(this=whole, true=exp.Anonymous(this="regexp_replace", expressions=[
            plain.copy(), text(r"\.0$"), text("")]))], default=plain)


_NAMES = {exp.TimeToStr: "to_char", exp.StrToDate: "to_date", exp.StrToTime: "to_timestamp"}


def _refuse(node: exp.Expression) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, f"{_NAMES[type(node)]}() with this format is not "
                   "supported by fedgate outside PostgreSQL sources")


def strftime_format(translated: str) -> str | None:
    """sqlglot's translation of a PostgreSQL template as a faithful strftime format, or
    None when a pattern in it was not translated or was translated wrong."""
    out, i, quoted = [], 0, False
    while i < len(translated):
        char = translated[i]
        if char == '"':
            quoted = not quoted
        elif quoted:
            out.append("%%" if char == "%" else char)
        elif char == "%":
            directive = translated[i + 1:i + 2]
            if directive == "-":  # strftime's no-padding flag, from PostgreSQL's FM
                directive = translated[i + 1:i + 3]
            if not directive or directive[-1] in _WRONG_DIRECTIVES:
                return None
            out.append("%" + directive)
            i += 1 + len(directive)
            continue
        elif char.isascii() and char.isalpha():
            return None
        else:
            out.append(char)
        i += 1
    return None if quoted else "".join(out)


def _is_datetime(value: exp.Expression) -> bool:
    kind = value.to if isinstance(value, exp.Cast) else value.type
    return kind is not None and kind.this in _DATETIMES


def postgres_formats(node: exp.Expression) -> exp.Expression:
    """`node` with a faithful format, or a refusal (children are rewritten first)."""
    if _float_as_text(node):
        return _float_text(node)
    if not isinstance(node, _FORMATTED):
        return node
    template = node.args.get("format")
    if not (isinstance(template, exp.Literal) and template.is_string):
        raise _refuse(node)  # sqlglot translates only a literal template
    translated = strftime_format(template.this)
    if translated is None:
        raise _refuse(node)
    node = node.copy()
    node.set("format", exp.Literal.string(translated))
    if isinstance(node, exp.TimeToStr) and _is_datetime(node.this):
        infinite = exp.Anonymous(this="isinf", expressions=[node.this.copy()])
        return exp.Case(ifs=[exp.If(this=infinite, true=exp.Null())], default=node)
    return node
