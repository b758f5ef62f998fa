r"""DuckDB as a target of PostgreSQL SQL: what ships, and the rewrites that keep PG semantics.

sqlglot renders DuckDB syntax; it does not make DuckDB compute PostgreSQL's answers. The
rewrites here close the gaps we know of (docs/design.md §4):
- integer / integer truncates in PostgreSQL; DuckDB's `/` divides as floats, so it
  becomes DuckDB's `//` (which truncates and raises on a zero divisor);
- any other division by zero raises in PostgreSQL, while DuckDB returns inf or NULL, so
  the divisor is guarded with DuckDB's `error()`;
- an unconstrained `numeric` is exact in PostgreSQL, while DuckDB's bare DECIMAL is
  DECIMAL(18,3) and silently rounds, so the cast gets the precision its operand needs
  (a literal's own digits, integers at scale 0, DECIMAL(38,10) when nothing is known:
  DuckDB's decimals stop at 38 digits).
These need operand types, so they expect a type-annotated tree, and run children before
parents: a cast inside a division is made exact too (sqlglot's `transform` does not descend
into a node it replaced); so do the function rewrites of `duckdb.functions`. Two more need
none:
- a literal in exponent notation (`1e3`, `2.5e-2`) is a numeric in PostgreSQL and a DOUBLE
  in DuckDB: it becomes the DECIMAL of its digits, and one of more than DuckDB's 38
  digits stays a DOUBLE only where PostgreSQL makes a float8 of it too, else it is
  refused with 0A000 (`duckdb.literals`; that one does read types);
- `LIKE` has no default escape in DuckDB while PostgreSQL's is `\`, so every LIKE/ILIKE
  without an ESCAPE clause gets `ESCAPE '\'` spelled out.
"""

from __future__ import annotations

from decimal import Decimal

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from connectors.dialects.duckdb import buckets as buckets
from connectors.dialects.duckdb import bytes as bytes_
from connectors.dialects.duckdb import arrays as arrays
from connectors.dialects.duckdb import dates as dates
from connectors.dialects.duckdb import degrees as degrees
from connectors.dialects.duckdb import folding as folding
from connectors.dialects.duckdb import integers as integers
from connectors.dialects.duckdb import functions as functions
from connectors.dialects import grouping_sets
from connectors.dialects.duckdb import float4 as float4
from connectors.dialects.duckdb import json as json_pieces
from connectors.dialects.duckdb import json_agg as json_agg
from connectors.dialects.duckdb import json_paths as json_paths
from connectors.dialects.duckdb import literals as literals
from connectors.dialects.duckdb import number_text as number_text
from connectors.dialects.duckdb import floats as floats
from connectors.dialects.duckdb import formats as formats
from connectors.dialects.duckdb import strings as strings
from connectors.dialects.duckdb import quotient as quotient
from connectors.dialects.duckdb import constant_numerics as constant_numerics
from connectors.dialects.duckdb import constant_checks as constant_checks
from connectors.dialects.duckdb import numeric_calls as numeric_calls
from connectors.dialects.duckdb import percentiles as percentiles
from connectors.dialects.duckdb import regexp_match as regexp_match
from connectors.dialects.duckdb import jsonb_contains as jsonb_contains
from connectors.dialects.duckdb import json_build as json_build
from connectors.dialects.duckdb import deviations as deviations
from connectors.dialects.duckdb import quoting as quoting
from connectors.dialects.duckdb import regression as regression
from connectors.dialects.duckdb import values as value_types
from connectors.dialects.duckdb import zones as zones
from connectors.dialects.duckdb.scales import needs_scale, postgres_extremes, postgres_scale, refuse_mixed_scales
from connectors.dialects.duckdb.collations import check_collations
from connectors.dialects.rules import rewrite_bottom_up
from connectors.base import (CLIENT_OUTPUTS, EXACT, EXACT_AVERAGE, Classification, Dialect, Pushdown, TableInfo,
                             volatile_reason)

DIVISION_BY_ZERO = "division by zero"

def classify(expression: exp.Expression, table: TableInfo | None = None) -> Classification:
    reason = volatile_reason(expression)
    if reason is not None:
        return Classification(Pushdown.UNSUPPORTED, reason)
    return EXACT


def is_integer(datatype: exp.DataType | None) -> bool:
    """Whether an annotated operand's type is an integer type (None: not annotated)."""
    return datatype is not None and datatype.this in exp.DataType.INTEGER_TYPES


def _guard_divisor(divisor: exp.Expression) -> exp.Expression:
    zero = exp.EQ(this=divisor.copy(), expression=exp.Literal.number(0))
    fail = exp.Anonymous(this="error", expressions=[exp.Literal.string(DIVISION_BY_ZERO)])
    return exp.Case(ifs=[exp.If(this=zero, true=fail)], default=divisor.copy())


def _beyond_bigint(value: exp.Expression) -> bool:
    negative = isinstance(value, exp.Neg)
    number = value.this if negative else value
    # `-9223372036854775808` is one bigint constant in PostgreSQL's grammar
    return isinstance(number, exp.Literal) and not number.is_string and number.this.isdigit() \
        and int(number.this) >= 2**63 + negative


def _postgres_division(node: exp.Expression) -> exp.Expression:
    if not isinstance(node, exp.Div):
        return node
    left, right = node.this, node.expression
    if any(_beyond_bigint(side) for side in (left, right)):
        # PostgreSQL reads such a literal as numeric and divides at a scale chosen per
        # value; sqlglot calls it an integer, and DuckDB would truncate the quotient.
        raise PgError(FEATURE_NOT_SUPPORTED, "division of an integer literal beyond bigint is "
                      "not supported by fedgate outside PostgreSQL sources")
    if is_integer(left.type) and is_integer(right.type):
        truncating = exp.IntDiv(this=left, expression=right)
        truncating.type = node.type  # a division around this one reads it: 7 / 2 / 2 is 1
        return truncating
    if isinstance(right, exp.Literal) and not right.is_string and right.to_py() != 0:
        return exp.Div(this=left, expression=right, typed=False)
    return exp.Div(this=left, expression=_guard_divisor(right), typed=False)


def is_bare_decimal(datatype: exp.DataType) -> bool:
    return datatype.this == exp.DataType.Type.DECIMAL and not datatype.expressions


def needs_types(tree: exp.Expression) -> bool:
    """Whether rendering `tree` depends on operand types (see the module docstring)."""
    return tree.find(exp.Div) is not None or any(
        is_bare_decimal(cast.to) for cast in tree.find_all(exp.Cast)) or functions.needs_rewrite(tree) \
        or dates.needs_types(tree) or floats.needs_types(tree) or integers.needs_types(tree) \
        or json_pieces.needs_types(tree) or literals.needs_rewrite(tree) or float4.needs_rewrite(tree) \
        or tree.find(exp.Least, exp.Greatest) is not None or arrays.needs_types(tree) \
        or buckets.needs_rewrite(tree) or needs_scale(tree) or json_agg.needs_rewrite(tree) \
        or quoting.needs_rewrite(tree) or number_text.needs_rewrite(tree) or bytes_.needs_rewrite(tree) \
        or json_build.needs_rewrite(tree) or jsonb_contains.needs_types(tree) \
        or percentiles.needs_rewrite(tree)


def _decimal(precision: int, scale: int) -> exp.DataType:
    return exp.DataType.build(f"DECIMAL({precision}, {scale})")


def exact_numeric(node: exp.Expression) -> exp.Expression:
    """A cast to an unconstrained `numeric` with the precision its operand needs (see the
    module docstring); any other node as it is."""
    if not (isinstance(node, exp.Cast) and is_bare_decimal(node.to)):
        return node
    operand = node.this
    if isinstance(operand, exp.Neg):
        operand = operand.this
    if isinstance(operand, exp.Literal) and not operand.is_string:
        digits, _, fraction = operand.this.lstrip("+-").partition(".")
        if "e" not in operand.this.lower() and len(digits) + len(fraction) <= 38:
            precision = max(len(digits.lstrip("0")) + len(fraction), len(fraction) + 1, 1)
            return exp.Cast(this=node.this, to=_decimal(precision, len(fraction)))
    operand_type = node.this.type
    if operand_type is not None and operand_type.this in exp.DataType.INTEGER_TYPES:
        return exp.Cast(this=node.this, to=_decimal(38, 0))
    if operand_type is not None and operand_type.this == exp.DataType.Type.DECIMAL \
            and operand_type.expressions:
        return node.this  # already an exact decimal: the cast changes nothing
    return exp.Cast(this=node.this, to=_decimal(38, 10))


def _postgres_semantics(node: exp.Expression) -> exp.Expression:
    # float4 first: the division and the numeric cast then see its operands as float8's
    return exact_numeric(_postgres_division(functions.postgres_function(
        postgres_extremes(float4.postgres_float4(node)))))


def _like_escape(node: exp.Expression) -> exp.Expression:
    if isinstance(node, (exp.Like, exp.ILike)) and not isinstance(node.parent, exp.Escape):
        return exp.Escape(this=node.copy(), expression=exp.Literal.string("\\"))
    return node


def _hugeint(e: exp.Expression) -> exp.Cast:
    return exp.Cast(this=e, to=exp.DataType.build("HUGEINT"))


def _power_of_ten(k: int) -> exp.Cast:
    return _hugeint(exp.Literal.number(10 ** k))


def unscaled_sum(total: exp.Expression, sum_scale: int) -> exp.Expression:
    """The digits of `total` (a HUGEINT, or a DECIMAL(38, sum_scale)) as a HUGEINT."""
    if sum_scale == 0:
        return _hugeint(total)
    # the integer and the fractional digits apart: the digits may not fit DECIMAL(38)
    whole = exp.Anonymous(this="trunc", expressions=[total.copy()])
    fraction = exp.Paren(this=exp.Sub(this=total.copy(), expression=whole.copy()))
    return exp.Paren(this=exp.Add(
        this=exp.Mul(this=_hugeint(whole), expression=_power_of_ten(sum_scale)),
        expression=_hugeint(exp.Mul(this=fraction, expression=exp.Literal.number(10 ** sum_scale)))))


def exact_average(total: exp.Expression, count: exp.Expression, scale: int,
                  sum_scale: int) -> exp.Expression:
    """total / count at `scale` digits, rounded half away from zero, as DuckDB arithmetic
    on 128-bit integers: `total` (a HUGEINT, or a DECIMAL(38, sum_scale)) is read as the
    integer u of its digits, whose quotient q and remainder r by the count are scaled up
    apart, so no step holds more digits than the result:
    q * 10^(scale - sum_scale) + round((r * 10^(scale - sum_scale)) / n)
    (`//` and `%` truncate toward zero, so r has u's sign; the rounding adds half the
    divisor away from zero before truncating). NULL for no rows (n = 0, or a NULL total).
    A macro computing this costs DuckDB tens of milliseconds to bind per call, and a
    text-based one microseconds per group: written out, it is integer arithmetic."""
    unscaled = unscaled_sum(total, sum_scale)
    n = exp.Nullif(this=count, expression=exp.Literal.number(0))
    quotient = exp.Paren(this=exp.IntDiv(this=unscaled, expression=n))
    remainder = exp.Paren(this=exp.Mod(this=unscaled.copy(), expression=n.copy()))
    shift = _power_of_ten(scale - sum_scale)
    rounded = exp.Paren(this=exp.IntDiv(
        this=exp.Paren(this=exp.Add(
            this=exp.Mul(this=exp.Mul(this=exp.Literal.number(2), expression=remainder),
                         expression=shift),
            expression=exp.Mul(this=exp.Sign(this=remainder.copy()), expression=n.copy()))),
        expression=exp.Paren(this=exp.Mul(this=exp.Literal.number(2), expression=n.copy()))))
    digits = exp.Add(this=exp.Mul(this=quotient, expression=shift.copy()), expression=rounded)
    unit = exp.Cast(this=exp.Literal.string(f"{Decimal(1).scaleb(-scale):f}"),
                    to=exp.DataType.build(f"DECIMAL({scale + 1}, {scale})"))
    # DECIMAL(38, 0) times 10^-scale: DuckDB multiplies decimals exactly, at scale `scale`.
    return exp.Mul(this=exp.Cast(this=digits, to=exp.DataType.build("DECIMAL(38, 0)")),
                   expression=unit)


def _average(node: exp.Expression) -> exp.Expression:
    """The planner's exact-average call (connectors.base.EXACT_AVERAGE) written out."""
    if isinstance(node, exp.Anonymous) and node.name.upper() == EXACT_AVERAGE:
        total, count, scale, sum_scale = node.expressions
        return exact_average(total, count, int(scale.name), int(sum_scale.name))
    return node


# PostgreSQL functions sqlglot keeps as plain calls, which DuckDB knows by another name.
_SYNONYMS: dict[str, type[exp.Func]] = {"every": exp.LogicalAnd}


def _synonym(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Anonymous) and len(node.expressions) == 1:
        synonym = _SYNONYMS.get(str(node.this).lower())
        if synonym is not None:
            return synonym(this=node.expressions[0])
    return node


# Operands that raise for some inputs (a zero divisor, text that is not a number).
_RAISING = (exp.Div, exp.IntDiv, exp.Mod, exp.Cast)


def _widens(cast: exp.Cast) -> bool:
    """A cast to a 38-digit decimal or a double of an operand not known to be text, which
    is how the planner widens a sum's argument; it raises for no number."""
    operand = cast.this.type
    wide = cast.to.this == exp.DataType.Type.DOUBLE or (
        cast.to.this == exp.DataType.Type.DECIMAL and cast.to.expressions
        and cast.to.expressions[0].name == "38")
    return bool(wide) and (operand is None or operand.this not in exp.DataType.TEXT_TYPES)


def _filter_first(node: exp.Expression) -> exp.Expression:
    """`agg(x / y) FILTER (WHERE c)`: PostgreSQL evaluates the argument only for the rows c
    keeps, DuckDB for every row, so a zero divisor c excludes raised. Each divisor and
    each cast operand inside the aggregate becomes `CASE WHEN c THEN operand END`: NULL,
    so harmless, on the rows the FILTER drops anyway."""
    if not isinstance(node, exp.Filter) or not isinstance(node.expression, exp.Where):
        return node
    condition = node.expression.this
    for risky in list(node.this.find_all(*_RAISING)):
        if isinstance(risky, exp.Cast) and _widens(risky):
            continue
        operand = "this" if isinstance(risky, exp.Cast) else "expression"
        value = risky.args.get(operand)
        if value is not None:
            risky.set(operand, exp.Case(ifs=[exp.If(this=condition.copy(), true=value)]))
    return node


def _client_select(tree: exp.Expression) -> exp.Select | None:
    """The SELECT whose outputs go to the client (connectors.base.CLIENT_OUTPUTS): the
    statement, or the one a describing `SELECT * FROM (...) LIMIT 0` reads."""
    return next((s for s in tree.find_all(exp.Select) if s.meta.get(CLIENT_OUTPUTS)), None)


def to_duckdb(tree: exp.Expression) -> str:
    """Render a (type-annotated) PostgreSQL tree as DuckDB SQL with PostgreSQL semantics."""
    if folding.needs_rewrite(tree):  # first: what it answers is no longer refused
        tree = tree.transform(folding.fold_constants)
    # Before the literals' and the functions' rules, which refuse what these two answer;
    # both rewrite in place, on one copy.
    client = _client_select(tree)
    folds = constant_numerics.needs_rewrite(tree)
    deviates = client is not None and deviations.needs_rewrite(client)
    calls = client is not None and numeric_calls.needs_rewrite(client)
    if folds or deviates or calls:
        tree = tree.copy()
        client = _client_select(tree)
        if folds:
            tree = constant_numerics.fold_numeric_constants(tree, client)
        if deviates:
            deviations.exact_deviations(client)
        if calls and client is not None:  # after the folding: of constants, a constant
            numeric_calls.numeric_calls(client)
    if grouping_sets.has_set_positions(tree):  # first: DISTINCT compares the sets they name
        tree = tree.transform(grouping_sets.named_set_positions)
    if grouping_sets.needs_rewrite(tree):  # before the refusals: DuckDB has no GROUP BY DISTINCT
        tree = tree.transform(grouping_sets.distinct_grouping_sets)
    if regexp_match.has_set_calls(tree):  # before the refusals: DuckDB's regexp_matches is a boolean
        tree = tree.copy()
        regexp_match.postgres_regexp_matches(tree)
    if json_build.needs_rewrite(tree):  # while its arguments' types are sqlglot's annotations
        tree = tree.transform(json_build.postgres_json_build)
    functions.refuse_unfaithful(tree)
    if tree.find(exp.Collate) is not None:
        check_collations(tree)
    if literals.needs_rewrite(tree):  # first: the rewrites below move constants under new parents
        tree = rewrite_bottom_up(tree, literals.postgres_literals)
    if tree.find(exp.Values) is not None:
        if value_types.needs_rewrite(tree):
            tree = tree.transform(value_types.typed_values)
        refuse_mixed_scales(tree)
    if zones.needs_rewrite(tree):
        tree = tree.transform(zones.postgres_zone)
    if bytes_.needs_rewrite(tree):  # after the literals': its own are DuckDB's, as written
        tree = tree.transform(bytes_.postgres_bytes)
    if _client_select(tree) is not None and tree.find(exp.Div) is not None:
        tree = tree.copy()
        quotient.mark_divisions(_client_select(tree))
    calls = {str(call.this).lower() for call in tree.find_all(exp.Anonymous)}
    if calls & _SYNONYMS.keys():
        tree = tree.transform(_synonym)
    if quoting.needs_rewrite(tree):
        tree = tree.transform(quoting.postgres_quoting)
    if strings.needs_rewrite(tree):  # first: split_part's own check applies to its rewrite
        tree = rewrite_bottom_up(tree, strings.postgres_strings)
    if regexp_match.needs_rewrite(tree):
        tree = tree.transform(regexp_match.postgres_regexp_match)
    if number_text.needs_rewrite(tree):  # before the date formats, which read to_char too
        tree = tree.transform(number_text.postgres_number_text)
    if formats.needs_rewrite(tree):
        tree = rewrite_bottom_up(tree, formats.postgres_formats)
    if arrays.needs_rewrite(tree):
        tree = rewrite_bottom_up(tree, arrays.postgres_arrays)
    if json_paths.needs_rewrite(tree):  # first: its steps are `->`s the next rewrite guards
        tree = tree.transform(json_paths.json_path)
    if json_pieces.needs_rewrite(tree):
        json_pieces.refuse_jsonb_layouts(tree)
        tree = rewrite_bottom_up(tree, json_pieces.postgres_json)
    if jsonb_contains.needs_rewrite(tree):
        tree = tree.transform(jsonb_contains.postgres_jsonb_contains)
    if json_agg.needs_rewrite(tree):
        tree = tree.transform(json_agg.postgres_json_agg)
    if regression.needs_rewrite(tree):
        tree = tree.transform(regression.postgres_regression)
    if floats.needs_rewrite(tree):
        tree = rewrite_bottom_up(tree, floats.postgres_floats)
    if integers.needs_rewrite(tree):
        tree = rewrite_bottom_up(tree, integers.postgres_integers)
    if dates.needs_rewrite(tree):
        tree = rewrite_bottom_up(tree, dates.postgres_dates)
    if buckets.needs_rewrite(tree):
        tree = tree.transform(buckets.width_bucket)
    if percentiles.needs_rewrite(tree):
        tree = tree.transform(percentiles.float8_percentiles)
    if needs_scale(tree):
        tree = tree.transform(postgres_scale)
    if needs_types(tree):
        tree = rewrite_bottom_up(tree, _postgres_semantics)
    if degrees.needs_rewrite(tree):  # after the divisions: its own need no zero check
        tree = tree.transform(degrees.postgres_degrees)
    if tree.find(exp.Filter) is not None:
        tree = tree.transform(_filter_first)
    if tree.find(exp.Like, exp.ILike) is not None:
        tree = tree.transform(_like_escape)
    if any("e" in n.this.lower() for n in tree.find_all(exp.Literal) if not n.is_string):
        tree = tree.transform(literals.exponent_literal)
    client = _client_select(tree)
    if client is not None:
        wrapped = quotient.wrap_quotients(client, unscaled_sum)
        if client is tree:
            tree = wrapped
        elif wrapped is not client:
            client.replace(wrapped)
    if EXACT_AVERAGE.lower() in calls:  # last: the written-out averages make a large tree to walk
        tree = tree.transform(_average)
    if constant_checks.needs_rewrite(tree):  # after every rewrite that adds a guard
        tree = tree.transform(constant_checks.constant_checks)
    return tree.sql("duckdb")


DIALECT = Dialect(name="duckdb", sqlglot="duckdb", paramstyle="$n", classify=classify,
                  render=to_duckdb, render_needs_types=needs_types,
                  ships=frozenset({"join", "aggregate", "sort", "limit", "distinct", "union", "window",
                                   "subquery"}))
