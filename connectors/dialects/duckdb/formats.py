"""to_char, to_date and to_timestamp formats DuckDB's strftime/strptime read as PostgreSQL.

sqlglot translates a PostgreSQL template (`YYYY-MM-DD HH24:MI`) into strftime's
(`%Y-%m-%d %H:%M`) through a table that lacks many of PostgreSQL's patterns: `Mon`, `Dy`,
`Day`, `Month`, `AM`/`PM`, `Q`, `J` ... pass through as letters, which strftime prints as
written (`to_char(d, 'DD Mon')` was '05 Mon'). Some translations are wrong: `D` (Sunday
is 1) becomes `%u` (Monday is 1), `WW` `%U`, `OF` `%z`. So a format is accepted only when
every letter outside a `%` directive is inside double quotes (PostgreSQL's literal text,
whose quotes are removed here) and it uses none of those directives; any other format is
refused (0A000). to_char of an infinite date or timestamp is NULL in PostgreSQL,
'infinity' in DuckDB. to_timestamp(text, template) is a timestamptz in PostgreSQL (the
text read in the session's zone), a timestamp in DuckDB.

A float's text form (`x::text`, a float operand of `||`, concat() and concat_ws()) is
PostgreSQL's too: 'NaN', 'Infinity' and '-Infinity' where DuckDB writes nan, inf and -inf,
and a whole number below 10^15 without DuckDB's '.0' ('100', '-0'). Larger values and
fractions are written alike by both.

A day beyond its month in literals (`to_date('2023-02-29', 'YYYY-MM-DD')`,
`make_date(2023, 2, 29)`) is PostgreSQL's 22008 in its words; DuckDB says 'Date out of
range' for both, which the gateway cannot tell apart after the fact.
"""

from __future__ import annotations

import datetime

from sqlglot import exp

from connectors.base import volatile_reason
from pgwire.errors import DATETIME_FIELD_OVERFLOW, FEATURE_NOT_SUPPORTED, PgError

T = exp.DataType.Type
_WRONG_DIRECTIVES = frozenset("uUz")  # D, WW and OF, translated to other meanings
_DATETIMES = {T.DATE, T.TIMESTAMP, T.TIMESTAMPNTZ, T.TIMESTAMPTZ, T.TIMESTAMPLTZ, T.TIMESTAMP_S,
              T.TIMESTAMP_MS, T.TIMESTAMP_NS}
_FORMATTED = (exp.TimeToStr, exp.StrToDate, exp.StrToTime)


_FLOATS = {T.DOUBLE, T.FLOAT}
_TEXTS = {T.TEXT, T.VARCHAR}


def _float_as_text(node: exp.Expression) -> bool:
    if not (isinstance(node, exp.Cast) and node.to.this in _TEXTS):
        return False
    operand = node.this
    kind = operand.to if isinstance(operand, exp.Cast) else operand.type
    return kind is not None and kind.this in _FLOATS and volatile_reason(operand) is None


def _float_operands(node: exp.Expression) -> bool:
    """A `||`, concat() or concat_ws() with a float operand, which PostgreSQL writes as
    float8out writes it."""
    return isinstance(node, (exp.DPipe, exp.Concat, exp.ConcatWs)) and any(
        side.type is not None and side.type.this in _FLOATS for side in node.iter_expressions())


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(*_FORMATTED) is not None or any(
        _float_as_text(cast) for cast in tree.find_all(exp.Cast)) or any(
        map(_float_operands, tree.find_all(exp.DPipe, exp.Concat, exp.ConcatWs))) or any(
        call.name.lower() == "make_date" for call in tree.find_all(exp.Anonymous))


def _integer(value: exp.Expression) -> int | None:
    negative = isinstance(value, exp.Neg)
    literal = value.this if negative else value
    if isinstance(literal, exp.Literal) and not literal.is_string and literal.this.isdigit():
        return -int(literal.this) if negative else int(literal.this)
    return None


def _make_date(node: exp.Anonymous) -> exp.Expression:
    """PostgreSQL's year -44 is 44 BC, DuckDB's 45 BC (it counts a year 0): a negative
    literal year moves up by one."""
    parts = [_integer(a) for a in node.expressions]
    if len(parts) != 3 or None in parts:
        return node
    year, month, day = parts
    if year == 0:
        raise PgError(DATETIME_FIELD_OVERFLOW, f"date field value out of range: 0-{month:02d}-{day:02d}")
    if not 1 <= abs(year) <= 9999:
        return node
    try:
        # a BC year as the year of the same leap rule in 2000..2399
        datetime.date(year if year > 0 else 2000 + (year + 1) % 400, month, day)
    except ValueError as exc:
        raise PgError(DATETIME_FIELD_OVERFLOW,
                      f"date field value out of range: {year}-{month:02d}-{day:02d}") from exc
    if year > 0:
        return node
    moved = exp.Literal.number(year + 1)
    return exp.Anonymous(this=node.this, expressions=[
        exp.Neg(this=exp.Literal.number(-(year + 1))) if year + 1 < 0 else moved,
        *[a.copy() for a in node.expressions[1:]]])


def _check_date_text(node: exp.Expression, strftime: str) -> None:
    text = node.this
    if not (isinstance(node, exp.StrToDate) and isinstance(text, exp.Literal) and text.is_string):
        return
    try:
        datetime.datetime.strptime(text.this, strftime)
    except ValueError as exc:
        if "day is out of range for month" in str(exc):
            raise PgError(DATETIME_FIELD_OVERFLOW,
                          f'date/time field value out of range: "{text.this}"') from exc


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
    if _float_operands(node):  # `s || 2.0::float8` is 's2', as `2.0::float8::text`
        node = node.copy()
        for side in list(node.iter_expressions()):
            if side.type is not None and side.type.this in _FLOATS:
                side.replace(_float_text(exp.Cast(this=side.copy(), to=exp.DataType.build("TEXT"))))
        return node
    if isinstance(node, exp.Anonymous) and node.name.lower() == "make_date":
        return _make_date(node)
    if not isinstance(node, _FORMATTED):
        return node
    template = node.args.get("format")
    if not (isinstance(template, exp.Literal) and template.is_string):
        raise _refuse(node)  # sqlglot translates only a literal template
    translated = strftime_format(template.this)
    if translated is None:
        raise _refuse(node)
    _check_date_text(node, translated)
    node = node.copy()
    node.set("format", exp.Literal.string(translated))
    if isinstance(node, exp.TimeToStr) and _is_datetime(node.this):
        infinite = exp.Anonymous(this="isinf", expressions=[node.this.copy()])
        return exp.Case(ifs=[exp.If(this=infinite, true=exp.Null())], default=node)
    if isinstance(node, exp.StrToTime):
        # PostgreSQL's to_timestamp(text, text) is a timestamptz, the text read in the
        # session's zone; DuckDB's strptime a timestamp, cast here in the engine's zone,
        # which is the session's (outside UTC the call stays in the engine:
        # planner.zone_dependent).
        return exp.Cast(this=node, to=exp.DataType.build("TIMESTAMPTZ"))
    return node
