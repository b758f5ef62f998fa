"""VALUES columns whose numeric constants have different display scales, refused; so is
least()/greatest() of numbers of different scales, unless of constants alone (computed).

PostgreSQL's numeric keeps each value's own display scale: `VALUES (1), (2.5)` is 1 and
2.5, and max(), lag(), array_agg() or a text cast of that column show each value so.
A DuckDB DECIMAL column has one scale for all its rows (1.0 and 2.5; `(1.10), (1.1)`
shows 1.10 twice), and whatever reads the column then answers with the wrong digits. So
a VALUES list in which one column holds numeric constants of more than one scale is
refused (0A000) naming it; constants of one scale, integers alone, or columns holding
anything but plain number constants (casts, expressions, exponent literals) run as
before.
"""

from __future__ import annotations

from decimal import Decimal

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError


def _scale(item: exp.Expression) -> int | None:
    """The display scale of a plain number constant (`2.5`, `-2.25`, `4`), else None."""
    literal = item.this if isinstance(item, exp.Neg) else item
    if not isinstance(literal, exp.Literal) or literal.is_string or "e" in literal.this.lower():
        return None
    return len(literal.this.partition(".")[2])


def refuse_mixed_scales(tree: exp.Expression) -> None:
    """Raise 0A000 for a VALUES column holding number constants of different scales."""
    for values in tree.find_all(exp.Values):
        rows = [row.expressions for row in values.expressions if isinstance(row, exp.Tuple)]
        for column in zip(*rows):
            shown = {}
            for item in column:
                scale = _scale(item)
                if scale is not None:
                    shown.setdefault(scale, item.sql("postgres"))
            if len(shown) > 1:
                first, second = list(shown.values())[:2]
                raise PgError(FEATURE_NOT_SUPPORTED, f"a VALUES column mixing numeric constants of "
                              f"different scales ({first} and {second}) is not supported by the "
                              "query engine (PostgreSQL shows each value at its own scale)")


def _arg_scale(arg: exp.Expression) -> int | None:
    """A least()/greatest() argument's display scale: a plain number constant's own, an
    integer's 0, a numeric(p, s)'s s; None where not known or not a fixed-scale number."""
    scale = _scale(arg)
    if scale is not None or arg.type is None:
        return scale
    if arg.type.this in exp.DataType.INTEGER_TYPES:
        return 0
    if arg.type.this == exp.DataType.Type.DECIMAL and len(arg.type.expressions) == 2:
        return int(arg.type.expressions[1].name)
    return None


def postgres_extremes(node: exp.Expression) -> exp.Expression:
    """least()/greatest() of numbers of different scales: PostgreSQL answers the chosen
    argument at its own scale (`least(1, 2.5)` is 1), DuckDB at the widest (1.0). Of
    constants alone the answer is computed here (the first of equal ones, as PostgreSQL's
    MINMAX keeps); otherwise refused (0A000). Any other node as it is."""
    if not isinstance(node, (exp.Least, exp.Greatest)):
        return node
    args = [node.this, *node.expressions]
    scales = {_arg_scale(arg) for arg in args} - {None}
    if len(scales) < 2:
        return node
    constants = [arg for arg in args if not isinstance(arg, exp.Null)]  # NULLs are skipped
    if all(_scale(arg) is not None for arg in constants):
        values = [Decimal(arg.sql("postgres").replace(" ", "")) for arg in constants]
        chosen = (min if isinstance(node, exp.Least) else max)(values)
        digits = max(len(str(abs(chosen)).replace(".", "").lstrip("0")), -chosen.as_tuple().exponent, 1)
        scale = max(-chosen.as_tuple().exponent, 0)
        return exp.Cast(this=exp.Literal.string(str(chosen)), to=exp.DataType.build(f"DECIMAL({digits}, {scale})"))
    name = "least" if isinstance(node, exp.Least) else "greatest"
    raise PgError(FEATURE_NOT_SUPPORTED, f"{name}() of numbers of different scales is not supported by "
                  "the query engine (PostgreSQL shows the value chosen at its own scale)")


def _is_scale_call(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "scale" and len(node.expressions) == 1


def needs_scale(tree: exp.Expression) -> bool:
    """Whether `tree` calls scale() (rewritten by its argument's type)."""
    return any(map(_is_scale_call, tree.find_all(exp.Anonymous)))


def display_scale(node: exp.Expression) -> int | None:
    """The display scale PostgreSQL gives every value of `node`, where it is one scale for
    all of them and DuckDB's DECIMAL has it too: a number constant's, an integer's 0, a
    numeric(p, s) column's or cast's s, and +, - (the larger) and * (the sum) of those.
    None otherwise (a quotient, a function's, an unconstrained numeric)."""
    if isinstance(node, (exp.Neg, exp.Paren)):
        return display_scale(node.this)
    scale = _scale(node)
    if scale is not None or isinstance(node, exp.Literal):
        return scale
    if isinstance(node, exp.Cast):
        to = node.to
        if to.this == exp.DataType.Type.DECIMAL and to.expressions:
            return int(to.expressions[1].name) if len(to.expressions) == 2 else 0
        return None
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        sides = [display_scale(node.this), display_scale(node.expression)]
        if None in sides:
            return None
        return sum(sides) if isinstance(node, exp.Mul) else max(sides)  # type: ignore[arg-type]
    if isinstance(node, exp.Column):
        return _arg_scale(node)
    return None


def postgres_scale(node: exp.Expression) -> exp.Expression:
    """scale(x) as a constant (NULL for NULL) where `display_scale` knows x's; refused
    otherwise: DuckDB has no scale(), and its DECIMAL's scale is not always the value's."""
    if not _is_scale_call(node):
        return node
    argument = node.expressions[0]
    if isinstance(argument, exp.Null):
        return exp.Cast(this=exp.null(), to=exp.DataType.build("INT"))
    scale = display_scale(argument)
    if scale is None or argument.type is None or argument.type.this not in (
            exp.DataType.Type.DECIMAL, *exp.DataType.INTEGER_TYPES) and not isinstance(argument, exp.Literal):
        raise PgError(FEATURE_NOT_SUPPORTED, "scale() of a numeric computed by the engine is not "
                      "supported by fedgate outside PostgreSQL sources")
    return exp.Case(ifs=[exp.If(this=exp.Is(this=argument.copy(), expression=exp.null()),
                                true=exp.Cast(this=exp.null(), to=exp.DataType.build("INT")))],
                    default=exp.Cast(this=exp.Literal.number(scale), to=exp.DataType.build("INT")))
