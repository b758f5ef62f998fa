"""jsonb `@>` and `<@`: PostgreSQL's containment (JsonbDeepContains), on DuckDB.

DuckDB has no containment operator for JSON (`@>` is its list operator), so a statement
using PostgreSQL's on jsonb was refused. It becomes a call of a function the DuckDB
runner registers on its connections (`jsonb_contains` below), on both documents' text:

    doc @> '{"a": 1}'
    →  fedgate_jsonb_contains(CAST(CAST(doc AS JSON) AS VARCHAR),
                              CAST(CAST('{"a": 1}' AS JSON) AS VARCHAR))

(the cast to JSON checks the text: malformed JSON is PostgreSQL's 22P02). PostgreSQL's
rules, as jsonb_util.c's JsonbDeepContains has them:
- an object contains an object whose every key it has, with a contained value: a scalar
  equal to its own (same type; numbers by value, 1 = 1.0), an object or array contained
  in its own of the same kind;
- an array contains an array whose every scalar it has among its scalars, and whose
  every object or array is contained in one of its own (order and repeats do not count);
- a scalar contains an equal scalar; at the top level an array contains a scalar it has
  (the "raw scalar" exception), and a scalar contains no array.
A document holding the escape \\u0000, which PostgreSQL's jsonb rejects, is refused
(0A000) when met.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from sqlglot import exp

JSONB_CONTAINS_FUNCTION = "fedgate_jsonb_contains"
_JSONB = exp.DataType.Type.JSONB
REFUSED = ("jsonb @> of a document holding \\u0000 is not supported by fedgate outside "
           "PostgreSQL sources")


def _parsed(text: str) -> Any:
    if "\\u0000" in text:
        raise ValueError(REFUSED)
    return json.loads(text, parse_float=Decimal, parse_int=Decimal)


def _container(value: Any) -> bool:
    return isinstance(value, (dict, list))


def _equal_scalars(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b  # True is not 1, "1" is not 1


def _contains(a: Any, b: Any) -> bool:
    """Whether a contains b, below the top level (see the module docstring)."""
    if isinstance(b, dict):
        if not isinstance(a, dict):
            return False
        for key, wanted in b.items():
            if key not in a:
                return False
            have = a[key]
            if _container(wanted):
                if type(have) is not type(wanted) or not _contains(have, wanted):
                    return False
            elif not _equal_scalars(have, wanted):
                return False
        return True
    if isinstance(b, list):
        if not isinstance(a, list):
            return False
        for wanted in b:
            if _container(wanted):
                if not any(type(have) is type(wanted) and _contains(have, wanted) for have in a):
                    return False
            elif not any(not _container(have) and _equal_scalars(have, wanted) for have in a):
                return False
        return True
    return not _container(a) and _equal_scalars(a, b)


def jsonb_contains(left: str | None, right: str | None) -> bool | None:
    """PostgreSQL's `left @> right` of two jsonb texts; NULL for a NULL one."""
    if left is None or right is None:
        return None
    a, b = _parsed(left), _parsed(right)
    if not _container(b) and isinstance(a, list):  # the raw scalar exception
        return any(not _container(have) and _equal_scalars(have, b) for have in a)
    return _contains(a, b)


def needs_types(tree: exp.Expression) -> bool:
    """Whether `tree` has `@>` or `<@`, which are jsonb's when an operand's type is."""
    return tree.find(exp.ArrayContainsAll, exp.ArrayContainedBy) is not None


def needs_rewrite(tree: exp.Expression) -> bool:
    return any(_on_jsonb(node) for node in tree.find_all(exp.ArrayContainsAll, exp.ArrayContainedBy))


def _on_jsonb(node: exp.Expression) -> bool:
    return any(side.type is not None and side.type.this == _JSONB for side in (node.this, node.expression))


def postgres_jsonb_contains(node: exp.Expression) -> exp.Expression:
    if not isinstance(node, (exp.ArrayContainsAll, exp.ArrayContainedBy)) or not _on_jsonb(node):
        return node
    outer, inner = (node.this, node.expression) if isinstance(node, exp.ArrayContainsAll) \
        else (node.expression, node.this)

    def text(side: exp.Expression) -> exp.Expression:
        as_json = exp.Cast(this=side.copy(), to=exp.DataType.build("JSON"))
        return exp.Cast(this=as_json, to=exp.DataType.build("VARCHAR"))

    return exp.Anonymous(this=JSONB_CONTAINS_FUNCTION, expressions=[text(outer), text(inner)])
