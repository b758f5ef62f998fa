"""VALUES columns whose numeric constants have different display scales, refused; so is
least()/greatest() of numbers of different scales, unless of constants alone (computed).

PostgreSQL's numeric keeps each value's own display scale: `VALUES (1), (2.5)` is 1 and
2.5, and max(), lag(), array_agg() or a text cast of that column show each value so.
A DuckDB DECIMAL column has one scale for all its rows (1.0 and 2.5; `(1.10), (1.1)`
shows 1.10 twice), and whatever reads the column then answers with the wrong digits. So
a VALUES list in which one column holds numeric constants of more than one scale is
refused (0A000) naming it; constants of one scale, integers alone, or columns holding
anything but plain number constants (casts, expressions, exponent literals) run as
before. So does a column of a VALUES list in FROM whose values never reach an answer:
every reference to it is compared, counted, grouped on, sorted or partitioned by, or
cast to an integer, double precision or numeric(p, s) (`count(x)`, `x > 0`,
`rank() OVER (ORDER BY x)`), all of which see the number and not its scale
(`_scale_unseen`).
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
    """Raise 0A000 for a VALUES column holding number constants of different scales,
    unless none of the column's values reaches the answer (`_scale_unseen`)."""
    for values in tree.find_all(exp.Values):
        rows = [row.expressions for row in values.expressions if isinstance(row, exp.Tuple)]
        for index, column in enumerate(zip(*rows)):
            shown = {}
            for item in column:
                scale = _scale(item)
                if scale is not None:
                    shown.setdefault(scale, item.sql("postgres"))
            if len(shown) > 1 and not _scale_unseen(tree, values, index):
                first, second = list(shown.values())[:2]
                raise PgError(FEATURE_NOT_SUPPORTED, f"a VALUES column mixing numeric constants of "
                              f"different scales ({first} and {second}) is not supported by the "
                              "query engine (PostgreSQL shows each value at its own scale)")


# Where a reference shows nothing of its value's scale: a comparison's operand (the
# answer is a boolean, numerics compare by value), IS [NOT] NULL, IN, BETWEEN.
_BY_VALUE = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ,
             exp.Is, exp.In, exp.Between)
# Casts whose result shows nothing of the value's own scale.
_ONE_SCALE = (exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT, exp.DataType.Type.SMALLINT,
              exp.DataType.Type.INT, exp.DataType.Type.BIGINT)


def _scale_unseen(tree: exp.Expression, values: exp.Values, index: int) -> bool:
    """Whether column `index` of `values`, a VALUES list in FROM with its column names
    (`AS v(x)`), is only read where its values' scale cannot show: every reference
    to it, in the whole statement, is compared (`_BY_VALUE`), counted, a GROUP BY key,
    a sort key of the statement or of a window, a window's partition key, or cast to
    a type of one scale (an integer, double precision, numeric(p, s)). Nothing may read
    it unseen by name: no `*` but count(*), no whole-row reference, no USING or NATURAL
    join."""
    alias = values.args.get("alias")
    if not isinstance(values.parent, (exp.From, exp.Join)) or alias is None:
        return False
    names = [column.name for column in alias.columns]
    if index >= len(names) or not alias.name:
        return False
    name, table = names[index], alias.name
    for star in tree.find_all(exp.Star):
        if not isinstance(star.parent, exp.Count):
            return False
    for join in tree.find_all(exp.Join):
        if join.args.get("using") or join.args.get("method") or join.args.get("kind") == "NATURAL":
            return False
    for column in tree.find_all(exp.Column):
        if column.name == table and not column.table:
            return False  # the whole row
        if column.name == name and column.table in ("", table) and not _value_only(column):
            return False
    return True


def _value_only(column: exp.Column) -> bool:
    """Whether this reference's place shows nothing of the value's scale."""
    node, parent = column, column.parent
    while isinstance(parent, exp.Paren):
        node, parent = parent, parent.parent
    if isinstance(parent, _BY_VALUE + (exp.Count, exp.Group)):
        return True
    if isinstance(parent, exp.Distinct):  # count(DISTINCT x)
        return isinstance(parent.parent, exp.Count)
    if isinstance(parent, exp.Window):
        return node.arg_key == "partition_by"
    if isinstance(parent, exp.Ordered):  # ORDER BY x: of the statement or of a window
        order = parent.parent
        return isinstance(order, exp.Order) and isinstance(order.parent, (exp.Select, exp.Window))
    if isinstance(parent, exp.Cast):  # to a type whose values have one scale, or none
        to = parent.to
        return (to.this in _ONE_SCALE
                or to.this == exp.DataType.Type.DECIMAL and len(to.expressions) == 2)
    return False


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
