"""PostgreSQL's numeric division and avg() with its per-value display scale, on DuckDB.

PostgreSQL divides numerics at a scale chosen per value (numeric.c's select_div_scale):
with the weights w1, w2 of the operands in base-10000 digits and their first such digits
d1, d2, qweight = w1 - w2 - (1 if d1 <= d2), and the quotient is rounded half away from
zero to rscale = min(max(16 - 4 * qweight, dscale1, dscale2, 0), 1000) digits, shown with
exactly that many (`1.49 / 2` is 0.74500000000000000000, `10 / 4.0` is 2.5000000000000000).
avg(numeric) is sum / count by the same division. DuckDB divides decimals in DOUBLE, and a
DECIMAL column has one scale for all its rows, so an output column of the statement that
is such a division (or the planner's exact average, connectors.base.EXACT_AVERAGE) is
computed here on 128-bit integers and returned as PostgreSQL's text of the numeric; the
gateway presents a text column the planner types numeric as numeric
(gateway.executor.presented), whose text and binary encodings read that text.

The statement is wrapped three times: the inner query is the statement with each such
output replaced by the digits of its operands (so its ORDER BY, GROUP BY, LIMIT compare
numbers; DuckDB keeps a subquery's order through a projection), the next one computes each
rscale from those digits, the next the rounded quotient's digits, the outer one its text.
Only outputs of the top-level SELECT are rewritten (not DISTINCT ones: text would compare
0.5 and 0.50 apart); so is round(a / b, s) of a constant s (0 to 30), as numeric.c rounds
the quotient it computed at rscale: half away from zero to s places, or padded to them
(`round(sum(n) / count(*), 2)`). A division inside another expression keeps DuckDB's DOUBLE. A quotient
whose digits would not fit 38 decimal digits is refused (0A000) at run time.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import EXACT_AVERAGE, NUMERIC_OUTPUTS
from connectors.dialects.duckdb.functions import exact_digits
from connectors.numeric_shapes import exact_number

QUOTIENT = "FEDGATE_QUOTIENT"  # marker: (dividend digits, divisor digits, scale1, scale2)
INEXACT = "a numeric division of operands the engine computes inexactly is not supported " \
    "by fedgate outside PostgreSQL sources"
TOO_WIDE = "a numeric quotient of more than 38 digits is not supported by fedgate " \
    "outside PostgreSQL sources"


def _hugeint(e: exp.Expression) -> exp.Expression:
    return exp.Cast(this=e, to=exp.DataType.build("HUGEINT"))


def _digits(operand: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
    """(a HUGEINT of `operand`'s digits, its display scale as an expression) for a number
    literal, a column or cast of an integer or fixed-scale decimal type (`exact_digits`),
    NULLIF of one, or an expression of such operands `exact_number` accepts (read at run
    time); None for anything else, for a literal with an exponent (PostgreSQL's scale of
    `1e3` is not its text's) and for one of more than 38 digits (beyond HUGEINT).

    A CASE or COALESCE whose results have different scales is DuckDB's at the largest,
    PostgreSQL's per value; the scale enters a quotient only past its 16 significant digits
    (select_div_scale), so the quotients agree unless they exceed 10^12 with operands of
    more than 4 decimal places: not a shape of the statements this serves (shares, ratios,
    averages)."""
    if isinstance(operand, exp.Nullif):  # NULLIF(x, y) is x, or NULL where x = y
        inner = _digits(operand.this)
        if inner is None:
            return None
        same = exp.EQ(this=operand.this.copy(), expression=operand.expression.copy())
        return exp.Case(ifs=[exp.If(this=same, true=exp.Null())], default=inner[0]), inner[1]
    literal = operand.this if isinstance(operand, exp.Neg) else operand
    if isinstance(literal, exp.Literal):
        if literal.is_string or "e" in literal.this.lower():
            return None
        if len(literal.this.replace(".", "").lstrip("0")) > 38:
            return None
    found = exact_digits(operand.copy()) if isinstance(operand, (exp.Literal, exp.Neg, exp.Column, exp.Cast)) \
        else None
    if found is not None:
        return found[0], exp.Literal.number(found[1])
    return _checked_digits(operand) if exact_number(operand) else None


_INTEGER_NAMES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                  "USMALLINT", "UINTEGER", "UBIGINT")


def _checked_digits(operand: exp.Expression) -> tuple[exp.Expression, exp.Expression]:
    """(`operand`'s digits, its scale), both read at run time from DuckDB's value: its
    text without the point, and the scale of its DECIMAL type (0 for an integer). A value
    DuckDB computed otherwise (a DOUBLE, whose digits PostgreSQL's numeric would not have)
    is refused."""
    kind = exp.Anonymous(this="typeof", expressions=[operand.copy()])
    decimal = exp.Like(this=kind.copy(), expression=exp.Literal.string("DECIMAL(%"))
    integer = exp.In(this=kind.copy(), expressions=[exp.Literal.string(n) for n in _INTEGER_NAMES])
    # concat, not a cast to text: the float rewrites (connectors.dialects.duckdb.floats)
    # would write a cast of what sqlglot types a DOUBLE as PostgreSQL's float8 text
    # (of NULL it is '', NULL again by NULLIF)
    text = exp.Nullif(this=exp.Anonymous(this="concat", expressions=[
        exp.Literal.string(""), operand.copy()]), expression=exp.Literal.string(""))
    digits = _hugeint(exp.Anonymous(this="replace", expressions=[
        text, exp.Literal.string("."), exp.Literal.string("")]))
    refused = exp.Anonymous(this="error", expressions=[exp.Literal.string(INEXACT)])
    checked = exp.Case(ifs=[exp.If(this=exp.Not(this=exp.paren(exp.or_(decimal, integer))),
                                   true=refused)], default=digits)
    declared = exp.Anonymous(this="regexp_extract", expressions=[
        kind.copy(), exp.Literal.string(r",\s*(\d+)\)"), exp.Literal.number(1)])
    scale = exp.Case(ifs=[exp.If(this=decimal.copy(), true=exp.Cast(
        this=declared, to=exp.DataType.build("INTEGER")))], default=exp.Literal.number(0))
    return checked, scale


def _inner_names(tree: exp.Select, quotients: list[bool]) -> list[str | None]:
    """The name each output that is not a quotient keeps in the inner query: its own where
    unique, else a new one; None for a quotient."""
    names = [item.alias_or_name for item in tree.expressions]
    return [None if q else n if n and names.count(n) == 1 else f"_c{i}"
            for i, (n, q) in enumerate(zip(names, quotients))]


def _wrappable(tree: exp.Expression, quotients: list[bool]) -> bool:
    """A top-level SELECT without DISTINCT whose ORDER BY and GROUP BY name no output by a
    name or position the inner query does not keep (a quotient's, a renamed one's)."""
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") or not any(quotients):
        return False
    kept = _inner_names(tree, quotients)
    hidden = {item.alias_or_name for item, name in zip(tree.expressions, kept)
              if name != item.alias_or_name}
    for clause in (tree.args.get("order"), tree.args.get("group")):
        if clause is None:
            continue
        for key in clause.expressions:
            key = key.this if isinstance(key, exp.Ordered) else key
            if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit() \
                    and 0 < int(key.this) <= len(quotients) and quotients[int(key.this) - 1]:
                return False
        if any(not c.table and c.name in hidden for c in clause.find_all(exp.Column)):
            return False
    return True


Operands = tuple[exp.Expression, exp.Expression, exp.Expression, exp.Expression]


def _division(node: exp.Expression) -> Operands | None:
    """(dividend digits, guarded divisor digits, their scales) of a numeric division."""
    if not isinstance(node, exp.Div):
        return None
    types = [side.type for side in (node.this, node.expression)]
    if all(t is not None and t.this in exp.DataType.INTEGER_TYPES for t in types):
        return None  # integer division: truncated elsewhere
    left, right = _digits(node.this), _digits(node.expression)
    if left is None or right is None:
        return None
    zero = exp.EQ(this=right[0].copy(), expression=exp.Literal.number(0))
    guarded = exp.Case(ifs=[exp.If(this=zero, true=exp.Anonymous(
        this="error", expressions=[exp.Literal.string("division by zero")]))], default=right[0])
    return left[0], guarded, left[1], right[1]


_MOST_PLACES = 30  # round(a / b, s) up to this s: beyond it a quotient's digits rarely fit 38


def _places(node: exp.Expression) -> tuple[exp.Expression, int | None]:
    """(the division, s) of `round(a / b, s)` with a constant s from 0 to _MOST_PLACES;
    (node, None) for anything else."""
    decimals = node.args.get("decimals") if isinstance(node, exp.Round) else None
    if isinstance(decimals, exp.Literal) and not decimals.is_string and decimals.this.isdigit() \
            and int(decimals.this) <= _MOST_PLACES and node.args.get("truncate") is None:
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        return inner, int(decimals.this)
    return node, None


def mark_divisions(tree: exp.Expression) -> exp.Expression:
    """`tree` (annotated) with each top-level output that is a numeric division, or
    round() of one to constant places, replaced by the QUOTIENT marker (its fifth argument
    the places), where the statement can be wrapped (see `_wrappable`)."""
    if not isinstance(tree, exp.Select):
        return tree
    allowed = tree.meta.get(NUMERIC_OUTPUTS, frozenset())
    divisions = [(_division(_places(item.unalias())[0]), _places(item.unalias())[1])
                 if i in allowed else (None, None) for i, item in enumerate(tree.expressions)]
    if not _wrappable(tree, [d is not None for d, _ in divisions]):
        return tree
    for item, (division, places) in zip(tree.expressions, divisions):
        if division is not None:
            a, b, sa, sb = division
            marked = [a, b, sa, sb] + ([] if places is None else [exp.Literal.number(places)])
            item.unalias().replace(exp.Anonymous(this=QUOTIENT, expressions=marked))
    return tree


def _operands(node: exp.Expression, unscaled) -> tuple[Operands, int | None] | None:
    """((dividend digits, divisor digits, their scales), the places of a round() or None)
    of a marked output."""
    if isinstance(node, exp.Anonymous) and node.name.upper() == QUOTIENT:
        a, b, sa, sb = node.expressions[:4]
        places = node.expressions[4:]
        return (a, b, sa, sb), int(places[0].this) if places else None
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Anonymous) and \
            node.this.name.upper() == EXACT_AVERAGE:
        total, count, _, sum_scale = node.this.expressions
        return (unscaled(total, int(sum_scale.name)),
                exp.Nullif(this=_hugeint(count), expression=exp.Literal.number(0)), sum_scale,
                exp.Literal.number(0)), None
    return None


def _col(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def _sql(template: str, **parts: exp.Expression) -> exp.Expression:
    tree = exp.maybe_parse(template, dialect="duckdb")
    for column in list(tree.find_all(exp.Column)):
        if column.name in parts:
            column.replace(parts[column.name].copy())
    return tree


_WEIGHT = "CASE WHEN x = 0 THEN 0 ELSE CAST(floor((length(CAST(abs(x) AS VARCHAR)) - 1 - s) / 4) AS BIGINT) END"
# the first base-10000 digit: the leading digits down to the group's last, zeros below
_FIRST = ("CASE WHEN x = 0 THEN 0 ELSE CAST(rpad(CAST(abs(x) AS VARCHAR), "
          "CAST(length(CAST(abs(x) AS VARCHAR)) - s - 4 * w AS INTEGER), '0') AS INTEGER) END")


def _rscale(x: exp.Expression, y: exp.Expression, sa: exp.Expression,
            sb: exp.Expression) -> exp.Expression:
    def weight(v: exp.Expression, s: exp.Expression) -> exp.Expression:
        return _sql(_WEIGHT, x=v, s=s)

    def first(v: exp.Expression, s: exp.Expression) -> exp.Expression:
        return _sql(_FIRST, x=v, s=s, w=weight(v, s))

    return _sql("least(greatest(16 - 4 * (wa - wb - CASE WHEN fa <= fb THEN 1 ELSE 0 END), "
                "sa, sb, 0), 1000)", wa=weight(x, sa), wb=weight(y, sb), fa=first(x, sa),
                fb=first(y, sb), sa=sa, sb=sb)


def _rounded(x: exp.Expression, y: exp.Expression, r: exp.Expression, sa: exp.Expression,
             sb: exp.Expression) -> exp.Expression:
    """|x / y| at r digits (x, y at scales sa, sb), rounded half away from zero."""
    shift = _sql("r + sb - sa", r=r, sa=sa, sb=sb)
    scaled = _sql("CASE WHEN length(CAST(abs(x) AS VARCHAR)) + m > 38 THEN error(msg) "
                  "ELSE abs(x) * CAST('1' || repeat('0', CAST(m AS BIGINT)) AS HUGEINT) END",
                  x=x, m=shift, msg=exp.Literal.string(TOO_WIDE))
    return _sql("p // abs(y) + CASE WHEN 2 * (p % abs(y)) >= abs(y) THEN 1 ELSE 0 END", p=scaled, y=y)


def _text(x: exp.Expression, y: exp.Expression, q: exp.Expression,
          r: exp.Expression) -> exp.Expression:
    """The numeric text of the quotient q (digits at r places) with the sign of x / y."""
    digits = _sql("CAST(q AS VARCHAR)", q=q)
    padded = _sql("lpad(d, CAST(greatest(length(d), r + 1) AS INTEGER), '0')", d=digits, r=r)
    return _sql("CASE WHEN q <> 0 AND (x < 0) <> (y < 0) THEN '-' ELSE '' END || CASE WHEN r = 0 "
                "THEN t ELSE left(t, CAST(length(t) - r AS BIGINT)) || '.' || right(t, CAST(r AS BIGINT)) END",
                q=q, x=x, y=y, r=r, t=padded)


_POWER = "CAST('1' || repeat('0', CAST(m AS BIGINT)) AS HUGEINT)"


def _to_places(q: exp.Expression, r: exp.Expression, places: int) -> exp.Expression:
    """The digits |q| (at r places) rounded half away from zero to `places`, as numeric.c's
    round() rounds the quotient it computed at r (or padded with zeros to them)."""
    s = exp.Literal.number(places)
    down = _sql("CASE WHEN r - s > 38 THEN 0 ELSE q // p + CASE WHEN q % p >= p // 2 THEN 1 ELSE 0 END END",
                q=q, r=r, s=s, p=_sql(_POWER, m=_sql("r - s", r=r, s=s)))
    up = _sql("CASE WHEN length(CAST(q AS VARCHAR)) + s - r > 38 THEN error(msg) ELSE q * p END",
              q=q, r=r, s=s, p=_sql(_POWER, m=_sql("s - r", r=r, s=s)), msg=exp.Literal.string(TOO_WIDE))
    return _sql("CASE WHEN r > s THEN d ELSE u END", r=r, s=s, d=down, u=up)


def wrap_quotients(tree: exp.Expression, unscaled) -> exp.Expression:
    """`tree` with its marked top-level outputs computed as PostgreSQL's numeric text (see
    the module docstring); `unscaled(total, scale)` gives a sum's digits as a HUGEINT."""
    if not isinstance(tree, exp.Select):
        return tree
    allowed = tree.meta.get(NUMERIC_OUTPUTS, frozenset())
    found = [_operands(item.unalias(), unscaled) if i in allowed else None
             for i, item in enumerate(tree.expressions)]
    if not any(found) or not _wrappable(tree, [f is not None for f in found]):
        return tree
    inner = tree.copy()
    inner_items, divisors, mid_items, rounded_items, outer_items = [], [], [], [], []
    kept = _inner_names(tree, [f is not None for f in found])
    for i, (item, operands, name) in enumerate(zip(tree.expressions, found, kept)):
        if operands is None:  # its name and position kept, for ORDER BY and GROUP BY
            inner_items.append(item.copy() if name == item.alias_or_name else
                               exp.alias_(item.unalias().copy(), name, quoted=True))
            mid_items.append(_col(name))
            rounded_items.append(_col(name))
            outer_items.append(_col(name) if name == item.alias_or_name else
                               exp.alias_(_col(name), item.alias_or_name or name, quoted=True))
            continue
        (a, b, scale_a, scale_b), places = operands
        inner_items.append(exp.alias_(a, f"_x{i}", quoted=True))
        divisors += [exp.alias_(b, f"_y{i}", quoted=True), exp.alias_(scale_a, f"_sx{i}", quoted=True),
                     exp.alias_(scale_b, f"_sy{i}", quoted=True)]
        x, y, r, q = _col(f"_x{i}"), _col(f"_y{i}"), _col(f"_r{i}"), _col(f"_q{i}")
        sa, sb = _col(f"_sx{i}"), _col(f"_sy{i}")
        mid_items += [x, y, sa, sb, exp.alias_(_rscale(x, y, sa, sb), f"_r{i}", quoted=True)]
        rounded_items += [x, y, r, exp.alias_(_rounded(x, y, r, sa, sb), f"_q{i}", quoted=True)]
        if places is not None:  # round(a / b, places)
            q, r = _to_places(q, r, places), exp.Literal.number(places)
        outer_items.append(exp.alias_(_text(x, y, q, r), item.alias_or_name or f"_c{i}", quoted=True))
    inner.set("expressions", inner_items + divisors)
    mid = exp.select(*mid_items).from_(inner.subquery("_q1"))
    rounded = exp.select(*rounded_items).from_(mid.subquery("_q2"))
    return exp.select(*outer_items).from_(rounded.subquery("_q3"))
