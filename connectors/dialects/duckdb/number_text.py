"""to_char(number, template) of integers and numerics as PostgreSQL writes it, on DuckDB.

sqlglot reads to_char() as a date format (strftime), which a number is not. PostgreSQL's
numeric templates of digit positions (`9`, `0`), group separators (`,`) and one decimal
point followed by digit positions are written out here, on the value rounded half away
from zero to the template's decimal places (formatting.c, NUM_processor):

    to_char(x, '9,990.99')  ->  ' ' or '-', then the integer digits right-aligned in the
        9/0 positions (a position from the first 0 on prints 0 where the number has no
        digit, a 9 before it a space; a zero integer part prints no digit unless a 0 asks
        for one, or the template has no decimal places), a separator where a digit stands
        to its left (else a space), the point and the decimals; the sign goes right before
        the first printed character, and the text is as wide as the template plus one.
        More integer digits than positions: every position is '#', the sign first.

NULL is NULL. Other templates (FM, S, MI, PR, L, D, G, EEEE, RN, V, text) and floats are
refused (0A000); so is an argument with a volatile call (it is written several times).
"""

from __future__ import annotations

import re

from sqlglot import exp, parse_one

from connectors.base import volatile_reason
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

T = exp.DataType.Type
_TEMPLATE = re.compile(r"([90,]*[90])(?:\.([90]+))?")
REFUSED = ("to_char() of a number with a template other than 9, 0, ',' and '.' is not supported "
           "by fedgate outside PostgreSQL sources")


def _numeric(value: exp.Expression) -> bool:
    kind = value.type
    return kind is not None and (kind.this in exp.DataType.INTEGER_TYPES or kind.this == T.DECIMAL)


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(exp.TimeToStr) is not None


def _scale(value: exp.Expression) -> int:
    kind = value.type
    if kind is not None and kind.this == T.DECIMAL and len(kind.expressions) == 2:
        return int(kind.expressions[1].name)
    return 0


def _template_sql(integer: str, decimals: str, scale: int) -> str:
    """The DuckDB expression of the module docstring, of `__value`, for the template's
    integer part (9, 0 and ,) and decimal places."""
    places = len(decimals)
    positions = sum(c in "90" for c in integer)
    first_zero = next((i for i, c in enumerate(c for c in integer if c in "90") if c == "0"), positions)
    if not places:
        first_zero = min(first_zero, positions - 1)  # no decimals: zero prints its 0
    rounded = f"round(CAST(__value AS DECIMAL(38, {scale})), {places})"
    whole = f"trunc(abs({rounded}))"
    whole_text = f"(CASE WHEN {whole} = 0 THEN '' ELSE CAST(CAST({whole} AS HUGEINT) AS VARCHAR) END)"
    padded = f"lpad({whole_text}, {positions}, ' ')"
    digits = f"(left({padded}, {first_zero}) || replace(right({padded}, {positions - first_zero}), ' ', '0'))"
    pieces, taken = [], 0
    for char in integer:
        if char == ",":
            left_digit = f"substr({digits}, {taken}, 1)" if taken else "' '"
            pieces.append(f"(CASE WHEN {left_digit} = ' ' THEN ' ' ELSE ',' END)")
        else:
            taken += 1
            pieces.append(f"substr({digits}, {taken}, 1)")
    body = " || ".join(pieces)
    if places:
        fraction = f"(abs({rounded}) - {whole}) * {10 ** places}"
        body += f" || '.' || lpad(CAST(CAST({fraction} AS HUGEINT) AS VARCHAR), {places}, '0')"
    sign = f"(CASE WHEN {rounded} < 0 THEN '-' ELSE ' ' END)"
    width = len(integer) + (places + 1 if places else 0) + 1
    hashes = re.sub("[90]", "#", integer) + ("." + "#" * places if places else "")
    return (f"CASE WHEN __value IS NULL THEN NULL WHEN length({whole_text}) > {positions} "
            f"THEN {sign} || '{hashes}' ELSE lpad({sign} || ltrim({body}), {width}, ' ') END")


def postgres_number_text(node: exp.Expression) -> exp.Expression:
    """to_char of a number written out (see the module docstring); other nodes as they are."""
    if not isinstance(node, exp.TimeToStr) or not _numeric(node.this):
        return node
    template = node.args.get("format")
    shape = _TEMPLATE.fullmatch(template.this) if isinstance(template, exp.Literal) and template.is_string else None
    if shape is None or volatile_reason(node.this) is not None:
        raise PgError(FEATURE_NOT_SUPPORTED, REFUSED)
    value = node.this

    def place(n: exp.Expression) -> exp.Expression:
        return value.copy() if isinstance(n, exp.Column) and n.name == "__value" else n

    written = parse_one(_template_sql(shape.group(1), shape.group(2) or "", _scale(value)), read="duckdb")
    return exp.Paren(this=written.transform(place))
