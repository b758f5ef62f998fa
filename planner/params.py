"""Infer the type of each bind parameter from its context, as PostgreSQL's parser does.

A client may declare parameter types in Parse (OID 0 means "infer it"). An undeclared
parameter takes the type of what it is compared with, cast to, or used as (LIMIT takes
int8); with no context at all it is text, which is what PostgreSQL reports for `SELECT $1`.
Every parameter is then wrapped in a cast to its type, so the source sees the same types
when the statement is described (with NULLs) and when it runs (with values).

>>> import sqlglot
>>> tree = sqlglot.parse_one("select * from t where a = $1 limit $2", read="postgres")
>>> [t.sql() for t in infer_param_types(tree, [])]
['TEXT', 'BIGINT']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from pgwire.errors import UNDEFINED_PARAMETER, PgError
from planner.type_names import is_known

TEXT = exp.DataType.build("TEXT")
BIGINT = exp.DataType.build("BIGINT")
BOOLEAN = exp.DataType.build("BOOLEAN")


# The enum a column of a PostgreSQL source holds, as its type (planner.enum_values)
EnumOf = Callable[[exp.Expression], exp.DataType | None]


def _no_enum(node: exp.Expression) -> None:
    return None


def parameters(tree: exp.Expression) -> list[exp.Parameter]:
    return [p for p in tree.find_all(exp.Parameter) if isinstance(p.this, exp.Literal)]


def parameter_count(tree: exp.Expression) -> int:
    return max((int(p.this.this) for p in parameters(tree)), default=0)


def _array_of_compared(param: exp.Parameter, enum_of: EnumOf) -> exp.DataType | None:
    """`x = ANY($1)`, `x <> ALL($1)`: an array of x's type, as PostgreSQL infers it."""
    node = param.parent
    if isinstance(node, exp.Paren):
        node = node.parent
    quantified = isinstance(node, exp.Any) or (
        isinstance(node, exp.Anonymous) and node.name.upper() == "ALL" and len(node.expressions) == 1)
    compared = node.parent if quantified else None
    enum = enum_of(compared.this) if isinstance(compared, exp.Binary) and compared.expression is node else None
    if enum is not None:  # the enum's array (planner.enum_values)
        return exp.DataType(this=exp.DataType.Type.ARRAY, nested=True, expressions=[enum])
    if isinstance(compared, exp.Binary) and not isinstance(compared, exp.Connector) \
            and compared.expression is node and is_known(compared.this.type):
        return exp.DataType(this=exp.DataType.Type.ARRAY, nested=True,
                            expressions=[compared.this.type.copy()])
    return None


def _known_type(other: exp.Expression, enum_of: EnumOf) -> exp.DataType | None:
    """`other`'s type where it is known: an enum column's is the enum (sqlglot's is text)."""
    found = enum_of(other)
    if found is not None:
        return found
    return other.type if is_known(other.type) else None


def _context_type(param: exp.Parameter, enum_of: EnumOf = _no_enum) -> exp.DataType | None:
    parent = param.parent
    array = _array_of_compared(param, enum_of)
    if array is not None:
        return array
    if isinstance(parent, exp.Cast):
        return parent.to
    if isinstance(parent, (exp.Limit, exp.Offset, exp.Fetch)):
        return BIGINT
    if isinstance(parent, (exp.Binary, exp.Between, exp.In)) and not isinstance(parent, exp.Connector):
        if isinstance(parent, (exp.And, exp.Or)):
            return BOOLEAN
        others = [parent.this] if isinstance(parent, (exp.Between, exp.In)) else []
        others += [v for v in parent.args.values() if isinstance(v, exp.Expression)]
        for other in others:
            known = _known_type(other, enum_of) if other is not param else None
            if known is not None:
                return known
    if isinstance(parent, (exp.And, exp.Or, exp.Not, exp.Where, exp.Having)):
        return BOOLEAN
    if isinstance(parent, exp.If) and parent.this is param and isinstance(parent.parent, exp.Case) \
            and parent.parent.this is not None:  # `CASE x WHEN $1`: compared with x
        return _known_type(parent.parent.this, enum_of)
    if isinstance(parent, (exp.Coalesce, exp.Nullif, exp.If, exp.Case, exp.Greatest, exp.Least)):
        # Every branch shares one type: take a sibling's, as PostgreSQL's resolution does.
        siblings = [v for v in parent.iter_expressions() if v is not param]
        if isinstance(parent, exp.If):
            case = parent.parent
            branches = [parent.args.get("true"), parent.args.get("false")]
            if isinstance(case, exp.Case):  # CASE WHEN ... THEN $1 ...: every THEN and ELSE
                branches = [i.args.get("true") for i in case.args.get("ifs") or ()]
                branches.append(case.args.get("default"))
            siblings = [v for v in branches if v is not None and v is not param]
        for sibling in siblings:
            known = _known_type(sibling, enum_of)
            if known is not None:
                return known
        if isinstance(parent, (exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least)) or \
                isinstance(parent.parent, (exp.Case, exp.Coalesce)):
            return _context_type_of(parent)
    return None


def _context_type_of(node: exp.Expression) -> exp.DataType | None:
    """The type the context of `node` (a function over the parameter) expects."""
    parent = node.parent
    if isinstance(parent, exp.Binary) and not isinstance(parent, exp.Connector):
        for other in (parent.this, parent.expression):
            if other is not node and is_known(other.type):
                return other.type
    return None


def infer_param_types(tree: exp.Expression, declared: Sequence[exp.DataType | None],
                      enum_of: EnumOf = _no_enum) -> list[exp.DataType]:
    """Types of $1..$n; `tree` should be type-annotated when it references columns.
    `enum_of`: the enum type of a column that holds one."""
    count = max(parameter_count(tree), len(declared))
    types: list[exp.DataType | None] = [declared[i] if i < len(declared) else None
                                        for i in range(count)]
    for param in parameters(tree):
        index = int(param.this.this) - 1
        if index < 0:
            raise PgError(UNDEFINED_PARAMETER, f"there is no parameter ${index + 1}")
        if types[index] is None:
            types[index] = _context_type(param, enum_of)
    return [t if t is not None else TEXT for t in types]


def cast_parameters(tree: exp.Expression, types: Sequence[exp.DataType]) -> exp.Expression:
    """Wrap every $n in a cast to its type (in place; `tree` is the planner's own copy)."""
    for param in parameters(tree):
        target = types[int(param.this.this) - 1]
        parent = param.parent
        if isinstance(parent, exp.Cast) and parent.to == target:
            continue
        param.replace(exp.Cast(this=param.copy(), to=target.copy()))
    return tree
