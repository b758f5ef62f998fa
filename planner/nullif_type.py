"""PostgreSQL's type of NULLIF(a, b): the left operand's of the `=` it resolves for a = b.

PostgreSQL parses NULLIF(a, b) as the operator a = b (transformAExprNullIf in
parse_expr.c, through make_op) and types the call as that operator's first argument
after coercion. So the result is a's type unless the `=` chosen casts a:

    NULLIF(int4, int8)      int4      int48eq exists: no cast
    NULLIF(int4, numeric)   numeric   numeric_eq: a cast to numeric (scale 0)
    NULLIF(int4, float4)    float8    float84eq wins on float8, the preferred type
    NULLIF(float4, numeric) float4    float48eq, a's type exact
    NULLIF(varchar, varchar) text     texteq: varchar has no `=` of its own
    NULLIF(bpchar, bpchar)  bpchar    bpchareq; with text, texteq: text
    NULLIF(date, timestamp) date      date_eq_timestamp; alike for the other datetimes
    NULLIF('1', int4)       int4      an unknown literal takes the other side's type

(checked against PostgreSQL 16). The type names are planner.result_types'; None where
the rule is not known here.
"""

from __future__ import annotations

from planner.numeric_results import NUMERIC_ORDER, base_of, numeric

_INTEGERS = ("int2", "int4", "int8")
_FLOATS = ("float4", "float8")
_STRINGS = ("text", "varchar", "bpchar", "name")
_DATETIMES = ("date", "timestamp", "timestamptz")
# An unknown literal compared with a value of these is read as that type (its base: the
# literal's own value decides a numeric's scale); with varchar, as text's `=` reads it.
_UNKNOWN_AS = {**{name: name for name in (*_INTEGERS, *_FLOATS, *_DATETIMES, "text", "name", "bool")},
               "numeric": "numeric", "varchar": "text", "bpchar": "bpchar"}


def nullif_result(first: str | None, second: str | None) -> str | None:
    """The type of NULLIF(a, b) for a of type `first` and b of type `second`."""
    a, b = base_of(first), base_of(second)
    if a is None or b is None:
        return None
    if a == "unknown":
        return "text" if b == "unknown" else _UNKNOWN_AS.get(b)
    if b == "unknown":
        b = a
    if a in NUMERIC_ORDER and b in NUMERIC_ORDER:
        return _numeric(first, a, b)
    if a in _STRINGS and b in _STRINGS:
        if a == "name" or a == b == "bpchar":
            return first  # nameeq and nameeqtext; bpchareq
        return "text"  # texteq, texteqname: varchar and bpchar cast to text
    if a in _DATETIMES and b in _DATETIMES:
        return first
    return first if a == b and a != "json" else None  # json has no `=`: PostgreSQL's error


def _numeric(first: str, a: str, b: str) -> str:
    if a in _FLOATS or a in _INTEGERS and b in _INTEGERS:
        return first  # a cross-type operator with a exact (int48eq, float48eq; float4eq
        # for float4 = numeric, whose numeric casts implicitly to float4)
    if b in _FLOATS:
        return "float8"  # float8eq or float84eq: float8 is the category's preferred type
    if a in _INTEGERS:  # b numeric: numeric_eq, a cast to numeric at scale 0
        return numeric(0)
    return first  # numeric = numeric, b cast to numeric
