"""PostgreSQL functions and literals that DuckDB answers differently under the same name.

sqlglot parses a PostgreSQL call into a node and renders that node in DuckDB's spelling;
the spelling is DuckDB's, the answer too. Each rewrite here makes DuckDB compute
PostgreSQL's answer, and a call DuckDB cannot answer as PostgreSQL does is refused
(0A000) rather than answered differently:
- `to_hex(n)`: DuckDB's hex() writes upper case, and a negative int4 as 64 bits;
- `concat(true)`, `concat_ws(',', true)`: DuckDB writes a boolean `true`, PostgreSQL `t`;
- `div(a, b)` on numerics: sqlglot writes `CAST(a // b AS DECIMAL)`, which DuckDB answers
  as a float division (`div(999999999999999999999, 1e21)` was 1, PostgreSQL says 0);
  the quotient is computed on the operands' digits as 128-bit integers;
- `'\\xDEADBEEF'::bytea`: PostgreSQL reads its hex and escape input formats, DuckDB only
  `\\xHH` escapes inside text, so the literal is decoded here and written as hex;
- `length`, `strpos`, `grouping()`, `generate_series(int, int)`: int4 in PostgreSQL,
  BIGINT in DuckDB; `generate_series(date, date, interval)`: timestamptz in PostgreSQL,
  TIMESTAMP in DuckDB; `extract()`, `date_part()`, `age()` and `to_timestamp(float8)`: see
  connectors.dialects.duckdb.datetimes; `date_trunc('month', d)` of a date truncates the date's
  midnight in the session's zone to a timestamptz in PostgreSQL, a timestamp in DuckDB, so
  DuckDB's timestamp is read in the session's zone (the engine's TimeZone), which is the
  same instant (outside UTC the call stays in the engine: planner.zone_dependent);
- `ln`, `log`, `log10` of zero or a negative number, `sqrt` of a negative one and
  `split_part(s, d, 0)`: errors in PostgreSQL (2201E, 2201F, 22023), -inf, NaN or a value
  in DuckDB, so the argument is checked first and DuckDB's `error()` raises PostgreSQL's
  words (pgwire.errors gives them their SQLSTATE). A volatile argument is not checked:
  it would be evaluated twice;
- `ln`, `log`, `sqrt`, `exp`, `power` of a numeric: numeric in PostgreSQL, computed to a
  scale of its own, a double in DuckDB: refused (unless an argument raises anyway); of
  constants, and as an output of a column, they were computed before these rules
  (connectors.dialects.duckdb.constant_numerics, duckdb.numeric_calls);
- stddev, variance, stddev_pop/samp, var_pop/samp of an integer or numeric: numeric in
  PostgreSQL (to a scale of its own), a double in DuckDB. An output of the statement that
  is such a call on a column, constant or cast is computed exactly
  (connectors.dialects.duckdb.deviations, before this module's rules); elsewhere refused
  unless the argument is known to be a float4 or float8 (PostgreSQL answers float8 then,
  as DuckDB does; under VALUES, whose `1.5` sqlglot types a double, always refused);
- sha224/sha384/sha512 (DuckDB has only sha256: sqlglot's rendering of sha512 *was*
  sha256): refused (regexp_matches, a boolean in DuckDB, a set of text[] in PostgreSQL,
  is written out or refused before these rules: connectors.dialects.duckdb.regexp_match);
- the types bit, bit varying, time with time zone and money, bit string literals and
  current_time (a timetz): refused (DuckDB has none of them as PostgreSQL has them).
Operand types decide some of these, so they run over the type-annotated tree.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlglot import exp

from connectors.base import DEVIATIONS, volatile_reason
from connectors.dialects.duckdb import datetimes as datetimes
from connectors.dialects.duckdb import series as series
from connectors.dialects.rules import raised
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.pg_type import BYTEA
from pgwire.types.table import decode_param

T = exp.DataType.Type

# Calls answered differently that no rewrite makes identical, by PostgreSQL name.
# (pg_typeof: DuckDB names its own types, `decimal(2,1)` and `varchar`, as text, where
# PostgreSQL answers a regtype.)
_REFUSED_CALLS = {"sha224", "pg_typeof"}
# The system catalog's functions are the emulated catalog's, which calls them qualified
# (`fg_fn.pg_get_viewdef(...)`, gateway.pg_catalog.dialect); unqualified, DuckDB's own
# look-alike answers, about DuckDB (its pg_get_viewdef reads a name as a bigint,
# format_type(23, -1) is 'int4', pg_size_pretty(1024) '1.0 KiB', current_schemas() empty,
# a privilege always granted), or none does.
_CATALOG_ONLY_CALLS = {
    "pg_get_viewdef", "pg_relation_size", "pg_table_size", "pg_indexes_size",
    "pg_total_relation_size", "format_type", "pg_size_pretty", "current_schemas",
    "pg_table_is_visible", "pg_type_is_visible", "pg_function_is_visible",
    "pg_collation_is_visible", "pg_conversion_is_visible", "pg_opclass_is_visible",
    "pg_operator_is_visible", "pg_my_temp_schema", "pg_is_other_temp_schema",
    "pg_postmaster_start_time", "obj_description", "col_description", "shobj_description",
    "has_any_column_privilege", "has_column_privilege", "has_database_privilege",
    "has_function_privilege", "has_schema_privilege", "has_sequence_privilege",
    "has_table_privilege", "pg_has_role", "pg_get_constraintdef", "pg_get_expr", "txid_current"}
# DuckDB's BIGINT results that PostgreSQL types int4.
_INT4_RESULTS = (exp.Length, exp.StrPosition, exp.Grouping)
_SMALL_INTEGERS = {T.TINYINT, T.SMALLINT, T.INT}


# PostgreSQL computes these on numeric arguments in numeric, to a scale of its choosing;
# DuckDB computes them in double precision, so the answer would be a float8.
_INEXACT_ON_NUMERIC = (exp.Ln, exp.Log, exp.Sqrt, exp.Exp, exp.Pow)
# Likewise PostgreSQL's deviations of integers and numerics; of floats both give float8.
_FLOATS = {T.FLOAT, T.DOUBLE}
# PostgreSQL's words for the arguments it raises on (pgwire.errors maps them to SQLSTATEs).
LOG_OF_ZERO = "cannot take logarithm of zero"
LOG_OF_NEGATIVE = "cannot take logarithm of a negative number"
FIELD_POSITION_ZERO = "field position must not be zero"
SQUARE_ROOT_OF_NEGATIVE = "cannot take square root of a negative number"


def _refuse(what: str) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED,
                   f"{what} is not supported by fedgate outside PostgreSQL sources")


def needs_rewrite(tree: exp.Expression) -> bool:
    """Whether `tree` holds a node rewritten here (the rewrites read operand types)."""
    return tree.find(exp.Hex, exp.Concat, exp.ConcatWs, exp.IntDiv, exp.ExplodingGenerateSeries,
                     exp.Extract, exp.TimestampTrunc, exp.DateTrunc, exp.Ln, exp.Log, exp.Sqrt, exp.Exp, exp.Pow, exp.SplitPart,
                     exp.MakeInterval, exp.UnixToTime, *_INT4_RESULTS, *DEVIATIONS) is not None \
        or any(_is_bytea(cast.to) for cast in tree.find_all(exp.Cast)) \
        or any(datetimes.is_age(call) for call in tree.find_all(exp.Anonymous))


# PostgreSQL syntax DuckDB has no form of (rendered as written, DuckDB raised a syntax
# error where PostgreSQL answers), by the words a refusal names it with.
_NO_DUCKDB_FORM: dict[type[exp.Expression], str] = {
    exp.Overlaps: "OVERLAPS",
    exp.JSONBContainsAnyTopKeys: "the jsonb ?| operator",
    exp.JSONBContainsAllTopKeys: "the jsonb ?& operator",
    # DuckDB has no to_number: sqlglot writes a cast to a double, where PostgreSQL reads
    # the template into a numeric.
    exp.ToNumber: "to_number()",
    # PostgreSQL's current_time is a time with time zone, which DuckDB has not as
    # PostgreSQL has it (and DuckDB reads CURRENT_TIME "current_time" as its own alias).
    exp.CurrentTime: "current_time (a time with time zone)",
}


def _refuse_syntax(tree: exp.Expression) -> None:
    for join in tree.find_all(exp.Join):
        on = join.args.get("on")
        # IS NOT DISTINCT FROM is neither merge- nor hash-joinable in PostgreSQL.
        if join.side == "FULL" and on is not None and on.find(exp.NullSafeEQ) is not None:
            # PostgreSQL's own refusal, word for word; DuckDB would answer.
            raise PgError(FEATURE_NOT_SUPPORTED, "FULL JOIN is only supported with "
                          "merge-joinable or hash-joinable join conditions")
    for node in tree.find_all(exp.With, exp.Select, *_NO_DUCKDB_FORM):
        if isinstance(node, exp.With) and (node.args.get("search") or node.args.get("cycle")):
            raise _refuse("SEARCH or CYCLE in WITH RECURSIVE")
        if isinstance(node, exp.Select) and not node.expressions:
            raise _refuse("a SELECT without a select list")
        if type(node) in _NO_DUCKDB_FORM:
            raise _refuse(_NO_DUCKDB_FORM[type(node)])


# PostgreSQL types DuckDB has no faithful counterpart of: sqlglot writes B'101' as the
# integer 5; DuckDB's BIT casts an integer to its 32 bits and has no bit(n) length; its
# TIMETZ reads '12:00+02' as out of range and orders by instant, where PostgreSQL orders
# by time then zone; money and bit varying are unknown to it. Refused by name.
_NO_DUCKDB_TYPE = {T.BIT: "bit", T.TIMETZ: "time with time zone", T.MONEY: "money"}
_NO_DUCKDB_USER_TYPE = {"varbit": "bit varying", "bit varying": "bit varying",
                        '"char"': '"char"'}  # one byte, not text (char(1) is unquoted)


def _refuse_types(tree: exp.Expression) -> None:
    for node in tree.find_all(exp.BitString, exp.HexString, exp.DataType):
        if isinstance(node, exp.BitString):
            raise _refuse("a bit string literal (B'...')")
        if isinstance(node, exp.HexString):
            raise _refuse("a bit string literal (X'...')")
        name = _NO_DUCKDB_TYPE.get(node.this)
        if name is None and node.this == T.USERDEFINED:
            name = _NO_DUCKDB_USER_TYPE.get(str(node.args.get("kind") or "").lower())
        if name is not None:
            raise _refuse(f"type {name}")


def refuse_unfaithful(tree: exp.Expression) -> None:
    """Raise 0A000 for the first call in `tree` DuckDB would answer differently, or
    syntax it has no form of."""
    _refuse_syntax(tree)
    if tree.find(exp.BitString, exp.HexString, exp.DataType) is not None:
        _refuse_types(tree)
    for call in tree.find_all(exp.Anonymous, exp.CurrentSchemas):
        name = str(call.this).lower() if isinstance(call, exp.Anonymous) else "current_schemas"
        if name in _REFUSED_CALLS or (name in _CATALOG_ONLY_CALLS and not isinstance(call.parent, exp.Dot)):
            raise _refuse(f"{name}()")
    for digest in tree.find_all(exp.SHA2Digest, exp.SHA2):
        length = digest.args.get("length")
        if length is not None and length.name not in ("", "256"):
            raise _refuse(f"sha{length.name}()")


def postgres_function(node: exp.Expression) -> exp.Expression:
    """`node` rewritten to PostgreSQL's answer in DuckDB (children are rewritten first)."""
    if isinstance(node, exp.Hex):
        return _to_hex(node)
    if isinstance(node, (exp.Concat, exp.ConcatWs)):
        return _concat_text(node)
    if isinstance(node, exp.IntDiv):
        return _numeric_div(node)
    if isinstance(node, exp.Cast) and _is_bytea(node.to) and \
            isinstance(node.this, (exp.Literal, exp.ByteString)):
        return _bytea_literal(node)
    if isinstance(node, exp.ExplodingGenerateSeries) and series.is_numeric_series(node):
        return _series_in_place(node, series.numeric_series(node))
    if isinstance(node, exp.ExplodingGenerateSeries) and _int4_series(node):
        return _series_values(node, "INT")
    if isinstance(node, exp.ExplodingGenerateSeries) and _date_series(node):
        return _series_values(node, "TIMESTAMPTZ")
    if isinstance(node, exp.Extract):
        return datetimes.postgres_extract(node)
    if datetimes.is_age(node):
        return datetimes.postgres_age(node)
    if isinstance(node, exp.UnixToTime):
        return datetimes.postgres_epoch_time(node)
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)) and node.this.type is not None \
            and node.this.type.this == T.DATE:
        return exp.Cast(this=node.copy(), to=exp.DataType.build("TIMESTAMPTZ"))
    if isinstance(node, _INEXACT_ON_NUMERIC) and any(map(_is_numeric, node.iter_expressions())) \
            and not _raises_anyway(node):
        raise _refuse(f"{node.sql('postgres').split('(')[0].lower()}() of a numeric")
    if isinstance(node, exp.Log) and node.expression is not None and not _raises_anyway(node) \
            and node.meta.get("spelled") != "log10":  # sqlglot reads log10(x) as log(10, x)
        # PostgreSQL's only log(b, x) is log(numeric, numeric), at a scale of its own
        raise _refuse("log(b, x), a numeric,")
    if isinstance(node, DEVIATIONS) and not _float_argument(node):
        name = node.sql("postgres").split("(")[0].lower()
        raise _refuse(f"{name}() of an integer or numeric")
    if isinstance(node, (exp.Ln, exp.Log)):
        return _logarithm_checked(node)
    if isinstance(node, exp.SplitPart):
        return _field_position_checked(node)
    if isinstance(node, exp.MakeInterval) and not any(node.args.values()):
        # make_interval() with no argument is a zero interval; sqlglot writes INTERVAL ''.
        return exp.Cast(this=exp.Literal.string("0 seconds"), to=exp.DataType.build("INTERVAL"))
    if isinstance(node, exp.Sqrt):
        negative = exp.LT(this=node.this.copy(), expression=exp.Literal.number(0))
        return _checked(node.this, [(negative, SQUARE_ROOT_OF_NEGATIVE)], node, [])
    if isinstance(node, _INT4_RESULTS) and not isinstance(node.parent, exp.Cast):
        return exp.Cast(this=node.copy(), to=exp.DataType.build("INT"))
    return node


def _float_argument(node: exp.Expression) -> bool:
    """An argument known to be a float4 or float8 in PostgreSQL. sqlglot types a VALUES
    column of `1.5` a double, PostgreSQL a numeric, so under VALUES no type is trusted."""
    kind = node.this.type
    return kind is not None and kind.this in _FLOATS and node.root().find(exp.Values) is None


def _is_int4(value: exp.Expression) -> bool:
    number = value.this if isinstance(value, exp.Neg) else value
    if isinstance(number, exp.Literal) and not number.is_string:  # sqlglot types any as INT
        return number.this.isdigit() and int(number.this) < 2**31
    return value.type is not None and value.type.this in _SMALL_INTEGERS


def _int4_series(node: exp.ExplodingGenerateSeries) -> bool:
    """generate_series over int4 arguments, whose values PostgreSQL types int4."""
    bounds = [node.args.get(name) for name in ("start", "end", "step")]
    return all(_is_int4(bound) for bound in bounds if bound is not None)


def _date_series(node: exp.ExplodingGenerateSeries) -> bool:
    """generate_series between two dates: PostgreSQL has no date variant and resolves the
    call to its timestamptz one (midnights in the session's zone), DuckDB to timestamps.
    The engine's TimeZone is the session's, so DuckDB's timestamps read as timestamptz are
    the same instants."""
    bounds = [node.args.get(name) for name in ("start", "end")]
    return all(bound is not None and bound.type is not None and bound.type.this == T.DATE
               for bound in bounds)


def _series_values(node: exp.ExplodingGenerateSeries, kind: str) -> exp.Expression:
    """generate_series's values cast to PostgreSQL's type of them (DuckDB's is BIGINT, or
    TIMESTAMP between dates): in a select list the call is cast; as a FROM item it becomes
    a derived table of the cast values, under the same alias."""
    table = node.parent
    if not isinstance(table, exp.Table):
        return exp.Cast(this=node.copy(), to=exp.DataType.build(kind))
    series = exp.Table(this=node.copy())
    values = exp.select(exp.alias_(exp.Cast(this=exp.column("generate_series"),
                                            to=exp.DataType.build(kind)), "generate_series"))
    derived = exp.Subquery(this=values.from_(series), alias=table.args.get("alias"))
    table.replace(derived)
    return node  # detached with its table: the walk's replace of it changes nothing


def _series_in_place(node: exp.ExplodingGenerateSeries, values: exp.Expression) -> exp.Expression:
    """`values` where the call stood: in a select list as they are; as a FROM item a
    derived table of them, under the same alias (as `_series_values`)."""
    table = node.parent
    if not isinstance(table, exp.Table):
        return values
    derived = exp.Subquery(this=exp.select(exp.alias_(values, "generate_series")),
                           alias=table.args.get("alias"))
    table.replace(derived)
    return node  # detached with its table: the walk's replace of it changes nothing


def _is_bytea(datatype: exp.DataType) -> bool:
    return datatype.this in (T.VARBINARY, T.BINARY, T.BLOB)


def _to_hex(node: exp.Hex) -> exp.Expression:
    operand = node.this
    kind = operand.type.this if operand.type is not None else None
    number = operand.this if isinstance(operand, exp.Neg) else operand
    if isinstance(number, exp.Literal) and not number.is_string:  # sqlglot types any as INT
        kind = T.INT if _is_int4(operand) else T.BIGINT
    if kind in _SMALL_INTEGERS:  # two's complement in 32 bits, as PostgreSQL's int4
        operand = exp.BitwiseAnd(this=exp.Cast(this=operand, to=exp.DataType.build("BIGINT")),
                                 expression=exp.Literal.number(0xFFFFFFFF))
    elif kind not in (T.BIGINT, T.VARBINARY, T.BINARY, T.BLOB):
        raise _refuse("to_hex() of an operand whose type is not known to be an integer")
    return exp.Lower(this=exp.Hex(this=operand))


def _concat_text(node: exp.Expression) -> exp.Expression:
    for argument in node.expressions:
        if argument.type is not None and argument.type.this == T.BOOLEAN:
            argument.replace(exp.Case(ifs=[exp.If(this=argument.copy(), true=exp.Literal.string("t")),
                                           exp.If(this=exp.Not(this=argument.copy()),
                                                  true=exp.Literal.string("f"))]))
    return node


def exact_digits(operand: exp.Expression) -> tuple[exp.Expression, int] | None:
    """`operand` as (a HUGEINT of its digits, its scale): a number literal or an integer
    or fixed-scale decimal operand; None for anything else (a float: PostgreSQL's numeric
    division and div() are numeric only, and a double has no exact digits). Used here for
    div() and by connectors.dialects.duckdb.quotient for `/` and avg()."""
    literal = operand.this if isinstance(operand, exp.Neg) else operand
    if isinstance(literal, exp.Literal) and not literal.is_string:
        try:
            value = Decimal(literal.this)
        except InvalidOperation:
            return None
        value = -value if isinstance(operand, exp.Neg) else value
        scale = max(-value.as_tuple().exponent, 0)
        unscaled = int(value.scaleb(scale))
        return exp.Cast(this=exp.Literal.number(unscaled), to=exp.DataType.build("HUGEINT")), scale
    kind = operand.to if isinstance(operand, exp.Cast) else operand.type
    if kind is not None and kind.this in exp.DataType.INTEGER_TYPES:
        return exp.Cast(this=operand, to=exp.DataType.build("HUGEINT")), 0
    if kind is not None and kind.this == T.DECIMAL and len(kind.expressions) == 2:
        scale = int(kind.expressions[1].name)
        shifted = exp.Mul(this=operand, expression=exp.Cast(
            this=exp.Literal.number(10 ** scale), to=exp.DataType.build("HUGEINT")))
        return exp.Cast(this=shifted, to=exp.DataType.build("HUGEINT")), scale
    return None


def _numeric_div(node: exp.IntDiv) -> exp.Expression:
    """PostgreSQL's div(a, b): a / b truncated toward zero, as integers on both operands'
    digits brought to one scale. (sqlglot writes div() as `//`; the planner's own integer
    divisions are made after this rewrite runs, and are not seen here.)"""
    if all(side.type is not None and side.type.this in exp.DataType.INTEGER_TYPES
           for side in (node.this, node.expression)):
        return node  # DuckDB's // truncates integers toward zero, as div() does
    left, right = exact_digits(node.this), exact_digits(node.expression)
    if left is None or right is None:
        raise _refuse("div() of operands that are not integers or numerics of known scale")
    (a, a_scale), (b, b_scale) = left, right
    scale = max(a_scale, b_scale)

    def rescaled(digits: exp.Expression, own: int) -> exp.Expression:
        if own == scale:
            return digits
        return exp.Paren(this=exp.Mul(this=digits, expression=exp.Cast(
            this=exp.Literal.number(10 ** (scale - own)), to=exp.DataType.build("HUGEINT"))))

    divisor = rescaled(b, b_scale)
    guarded = exp.Case(ifs=[exp.If(this=exp.EQ(this=divisor.copy(), expression=exp.Literal.number(0)),
                                   true=exp.Anonymous(this="error", expressions=[
                                       exp.Literal.string("division by zero")]))],
                       default=divisor)
    quotient = exp.Paren(this=exp.IntDiv(this=rescaled(a, a_scale), expression=guarded))
    quotient.type = exp.DataType.build("HUGEINT")  # so div()'s numeric cast keeps scale 0
    return quotient


def _bytea_literal(node: exp.Cast) -> exp.Expression:
    text = node.this.this  # sqlglot has already read an E'' string's escapes
    value = decode_param(BYTEA.oid, 0, text.encode("utf-8"))
    return exp.Anonymous(this="unhex", expressions=[exp.Literal.string(bytes(value).hex())])


def _positive_literal(value: exp.Expression) -> bool:
    return isinstance(value, exp.Literal) and not value.is_string and Decimal(value.this) > 0


def _checked(value: exp.Expression | None, failures: list[tuple[exp.Expression, str]],
             answer: exp.Expression, others: list[exp.Expression]) -> exp.Expression:
    """`answer`, unless `value` meets a failure's condition first: then its error. The
    functions are strict in PostgreSQL, so a NULL among the `others` arguments is NULL."""
    if value is None or _positive_literal(value) or volatile_reason(value) is not None:
        return answer
    present = [exp.Not(this=exp.Is(this=other.copy(), expression=exp.Null())) for other in others
               if not isinstance(other, exp.Literal)]

    def raised_when(condition: exp.Expression) -> exp.Expression:
        return exp.and_(condition, *present) if present else condition

    checked = exp.Case(ifs=[exp.If(this=raised_when(condition), true=raised(message))
                            for condition, message in failures], default=answer.copy())
    checked.type = answer.type  # a division or cast around the call reads it
    return checked


def _logarithm_checked(node: exp.Ln | exp.Log) -> exp.Expression:
    """ln(x), log(x), log(b, x): PostgreSQL raises for a zero or negative b, then x."""
    def failures(value: exp.Expression) -> list[tuple[exp.Expression, str]]:
        zero = exp.Literal.number(0)
        return [(exp.LT(this=value.copy(), expression=zero), LOG_OF_NEGATIVE),
                (exp.EQ(this=value.copy(), expression=zero.copy()), LOG_OF_ZERO)]

    if isinstance(node, exp.Log) and node.expression is not None:
        base, argument = node.this, node.expression
        inner = _checked(argument, failures(argument), node, [base])
        return _checked(base, failures(base), inner, [argument])
    return _checked(node.this, failures(node.this), node, [])


def _field_position_checked(node: exp.SplitPart) -> exp.Expression:
    position = node.args.get("part_index")
    if position is None:
        return node
    zero = exp.EQ(this=position.copy(), expression=exp.Literal.number(0))
    others = [node.this, node.args.get("delimiter")]
    return _checked(position, [(zero, FIELD_POSITION_ZERO)], node,
                    [other for other in others if other is not None])


def _is_numeric(value: exp.Expression) -> bool:
    """A numeric operand: typed so, or a literal PostgreSQL reads as numeric (a fraction or
    an exponent), which sqlglot types as a double. (An integer literal beyond bigint is
    numeric to PostgreSQL too, but left alone: power() of one matched PostgreSQL's answer
    in the differential suite before, and a refusal would lose that.)"""
    number = value.this if isinstance(value, exp.Neg) else value
    if isinstance(number, exp.Literal) and not number.is_string:
        return not number.this.isdigit()
    return value.type is not None and value.type.this == T.DECIMAL


def _raises_anyway(node: exp.Expression) -> bool:
    """A literal argument PostgreSQL raises on (the checks above raise it here too)."""
    for value in node.iter_expressions():
        number = value.this if isinstance(value, exp.Neg) else value
        checked = not isinstance(node, (exp.Exp, exp.Pow))  # exp and power are not checked
        if checked and isinstance(number, exp.Literal) and not number.is_string:
            figure = -Decimal(number.this) if isinstance(value, exp.Neg) else Decimal(number.this)
            if figure < 0 or (figure == 0 and not isinstance(node, exp.Sqrt)):
                return True
    return False
