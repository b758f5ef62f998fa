"""A value of a PostgreSQL source's enum that is no column: a bind parameter compared with
one (`st = $1`, `st IN ($1, $2)`, `CASE st WHEN $1`), or a cast to one (`x::status`).

PostgreSQL infers such a parameter's type as the enum (its ParameterDescription names the
enum), reads an untyped value into it, and refuses a value that is no label with 22P02.
The planner does the same: the parameter is typed as the enum (planner.params, from the
catalog's column: `enum_labels` in its metadata, connectors.postgres.types), cast to the
enum's PostgreSQL name where a PostgreSQL source runs the comparison, and its value is
checked against the labels when it is bound (QueryPlan.param_types holds the EnumText:
gateway.session.enum_params). A cast names the enum as PostgreSQL resolves a type name.
In the residual the engine holds an enum as its label's text, so there such a cast is to
text, marked as a value of the enum, which planner.source_enums orders by its label's
position as it does a column, and planner.kept_texts describes as the enum.

    WHERE e.st = $1     ->  frag_0 on PostgreSQL: WHERE e.st = CAST($1 AS status)
    WHERE e.st < $1 OR c.name = 'Dee'
                        ->  residual: <position of frag_0.st> < <position of CAST($1 AS TEXT)>
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_TEXT_REPRESENTATION, PgError
from planner.params import cast_parameters, infer_param_types, parameters
from planner.source_enums import ENUM_ARRAY, ENUM_VALUE, OPERATORS, EnumArray, EnumText, refuse_string_parameter
from planner.type_names import pg_type_name

LABELS_META = b"enum_labels"


def field_enum(metadata: Mapping[bytes, bytes] | None, source: str) -> EnumText | None:
    """The enum a source column's Arrow metadata says it holds the labels of, if any."""
    meta = metadata or {}
    if LABELS_META not in meta:
        return None
    kept = meta.get(b"pg_type", meta.get(b"source_type", b"")).decode()
    oid = meta.get(b"source_type_oid")
    return EnumText(kept, json.loads(meta[LABELS_META]), source, int(oid) if oid is not None else None,
                    meta.get(b"source_typname", b"").decode(), int(meta.get(b"source_array_oid", b"0")))


def enum_columns(tree: exp.Expression, tables: Callable[[str, str], object | None]
                 ) -> Callable[[exp.Expression], EnumText | None]:
    """For a qualified `tree` whose tables are pinned to their sources: the enum a column
    of a catalog table holds, if it is one. `tables(source, name)`: its TableInfo."""
    found: dict[int, EnumText] = {}
    for scope in traverse_scope(tree):
        for column in scope.columns:
            table = scope.sources.get(column.table)
            if not isinstance(table, exp.Table) or not table.db:
                continue
            info = tables(table.db, table.name)
            schema = getattr(info, "schema", None)
            index = schema.get_field_index(column.name) if schema is not None else -1
            kept = field_enum(schema.field(index).metadata, table.db) if index >= 0 else None
            if kept is not None:
                found[id(column)] = kept
    return lambda node: found.get(id(node))


def enum_type(kept: EnumText) -> exp.DataType:
    """The enum as a type of the tree: its PostgreSQL name, the enum in its meta."""
    made = exp.DataType.build(str(kept), dialect="postgres", udt=True)
    made.meta[ENUM_VALUE] = kept
    return made


def enum_of_type(datatype: exp.DataType | None) -> EnumText | None:
    found = datatype.meta.get(ENUM_VALUE) if datatype is not None else None
    return found if isinstance(found, EnumText) else None


def enum_of_array_type(datatype: exp.DataType | None) -> EnumText | None:
    """The enum whose array `datatype` is (planner.params: `st = ANY($1)`), if it is one."""
    if datatype is None or datatype.this != exp.DataType.Type.ARRAY or len(datatype.expressions) != 1:
        return None
    return enum_of_type(datatype.expressions[0])


def enum_casts_as_text(residual: exp.Expression) -> bool:
    """In the residual, a cast to an enum is its label's text, marked as a value of the
    enum; whether there is one. A parameter's value was checked when bound, a literal's
    when planned (resolve_enum_casts); another's is checked as the row is computed."""
    found = False
    for cast in list(residual.find_all(exp.Cast)):
        kept = enum_of_type(cast.to)
        if kept is None:
            found = _enum_array_as_text(cast) or found
            continue
        found = True
        text: exp.Expression = exp.Cast(this=cast.this.copy(), to=exp.DataType.build("TEXT"))
        if not isinstance(cast.this, (exp.Parameter, exp.Literal, exp.Null)):
            text = _checked_label(text, kept)
        text.meta[ENUM_VALUE] = kept
        cast.replace(text)
    return found


def _enum_array_as_text(cast: exp.Cast) -> bool:
    """A parameter's cast to an array of an enum, in the residual: to text[], marked as of
    the enum (planner.source_enums compares it with a column of the enum); its labels
    were checked when it was bound. Another value's is refused: nothing checks them."""
    kept = enum_of_array_type(cast.to)
    if kept is None:
        return False
    if not isinstance(cast.this, exp.Parameter):
        raise PgError(FEATURE_NOT_SUPPORTED, f"a cast to {kept}[] computed in the engine is not supported "
                      "by fedgate outside PostgreSQL sources (a bind parameter of it is)")
    text = exp.Cast(this=cast.this.copy(), to=exp.DataType.build("TEXT[]", dialect="postgres"))
    text.type = text.to.copy()  # the dialect's ANY rewrite reads it as a list
    text.meta[ENUM_ARRAY] = kept
    cast.replace(text)
    return True


def _checked_label(text: exp.Expression, kept: EnumText) -> exp.Expression:
    """`text`, or PostgreSQL's 22P02 where it is no label (pgwire.engine_words)."""
    labels = [exp.Literal.string(label) for label in kept.labels]
    no_label = exp.and_(exp.Not(this=exp.Is(this=text.copy(), expression=exp.Null())),
                        exp.Not(this=exp.In(this=text.copy(), expressions=labels)))
    message = exp.DPipe(this=exp.DPipe(this=exp.Literal.string(f'invalid input value for enum {kept}: "'),
                                       expression=text.copy()), expression=exp.Literal.string('"'))
    return exp.Case(ifs=[exp.If(this=no_label, true=exp.Anonymous(this="error", expressions=[message]))],
                    default=text)


def resolve_enum_casts(tree: exp.Expression, catalog: object, search_path: Sequence[str]) -> None:
    """A cast to a source's enum (`x::status`, `CAST(x AS pg.status)`) typed as the enum
    (enum_type), found as PostgreSQL finds a type: in the schema named, else on the path;
    a literal that is no label is PostgreSQL's 22P02, when planned as there."""
    casts = [c for c in tree.find_all(exp.Cast)
             if c.to.this == exp.DataType.Type.USERDEFINED and enum_of_type(c.to) is None]
    if not casts:
        return
    enums = _catalog_enums(catalog)
    for cast in casts:
        kind = cast.to.args.get("kind")
        parts = [p.name for p in kind.flatten()] if isinstance(kind, exp.Dot) else \
            [kind.name if isinstance(kind, exp.Expression) else str(kind)]
        if len(parts) > 2:
            continue
        sources = parts[:1] if len(parts) == 2 else list(search_path)
        name = parts[-1] if isinstance(kind, exp.Dot) and kind.expression.quoted or \
            isinstance(kind, exp.Identifier) and kind.quoted else parts[-1].lower()
        kept = next((enums[(s, name)] for s in sources if (s, name) in enums), None)
        if kept is None:
            continue
        value = cast.this
        if isinstance(value, exp.Literal) and value.is_string and value.name not in kept.labels:
            raise PgError(INVALID_TEXT_REPRESENTATION, f'invalid input value for enum {kept}: "{value.name}"')
        cast.set("to", enum_type(kept))


def other_sources_enums(tree: exp.Expression, catalog: object, search_path: Sequence[str], single: object) -> bool:
    """Whether `tree` casts to an enum of a source other than `single`, the source it would
    be shipped to whole (a Parquet table's: `SELECT c.name, 'paid'::status FROM customer c`):
    then the engine answers it (the cast is a value of the enum in the residual) rather
    than the source, which has no such type (42704). The casts are resolved here."""
    if not any(c.to.this == exp.DataType.Type.USERDEFINED for c in tree.find_all(exp.Cast)):
        return False
    resolve_enum_casts(tree, catalog, search_path)
    name = getattr(single, "name", None)
    return any(kept.source != name for kept in (enum_of_type(c.to) for c in tree.find_all(exp.Cast))
               if kept is not None)


def _catalog_enums(catalog: object) -> dict[tuple[str, str], EnumText]:
    """(source, typname) -> the enum, of every enum a catalog table's column holds."""
    found = {}
    for source, entry in catalog.sources.items():  # type: ignore[attr-defined]
        for info in entry.tables.values():
            for field in getattr(info, "schema", None) or ():
                kept = field_enum(field.metadata, source)
                if kept is not None and kept.typname:
                    found.setdefault((source, kept.typname), kept)
    return found


def column_enum_types(tree: exp.Expression, tables: Callable[[str, str], object | None]
                      ) -> Callable[[exp.Expression], exp.DataType | None]:
    """`enum_columns`' enums as types, for planner.params' inference."""
    columns: list[Callable[[exp.Expression], EnumText | None]] = []  # read when first asked

    def enum_of(node: exp.Expression) -> exp.DataType | None:
        if not columns:
            columns.append(enum_columns(tree, tables))
        kept = columns[0](node)
        return enum_type(kept) if kept is not None else None
    return enum_of


def catalog_tables(catalog: object) -> Callable[[str, str], object | None]:
    """A catalog snapshot's table of a source by its name (None: no such)."""
    def table(source: str, name: str) -> object | None:
        entry = catalog.sources.get(source)  # type: ignore[attr-defined]
        return entry.tables.get(name) if entry is not None else None
    return table


def typed_parameters(tree: exp.Expression, declared: Sequence[exp.DataType | None],
                     catalog: object, search_path: Sequence[str]) -> list[exp.DataType]:
    """The types of $1..$n (planner.params), an enum's where one is compared with a column
    of it or cast to it; each $n of `tree` is cast to its type (the casts to an enum
    resolved first, resolve_enum_casts)."""
    resolve_enum_casts(tree, catalog, search_path)
    enum_of = column_enum_types(tree, catalog_tables(catalog))
    types = infer_param_types(tree, declared, enum_of)
    cast_parameters(tree, types)
    if any(declared):
        _refuse_string_parameters(tree, enum_of)
    return types


def _refuse_string_parameters(tree: exp.Expression,
                              enum_of: Callable[[exp.Expression], exp.DataType | None]) -> None:
    """A parameter declared text or varchar compared with an enum column: PostgreSQL's
    42883 when the statement is prepared, wherever the comparison would run."""
    for param in parameters(tree):
        cast = param.parent
        parent = cast.parent if isinstance(cast, exp.Cast) else None
        while isinstance(parent, exp.Paren):
            parent = parent.parent
        if isinstance(parent, exp.Any) or isinstance(parent, exp.Anonymous) and parent.name.upper() == "ALL":
            _refuse_string_array(cast, parent, enum_of)
        elif isinstance(parent, exp.In) and any(value is cast for value in parent.expressions):
            kept = enum_of_type(enum_of(parent.this))
            if kept is not None:
                refuse_string_parameter("=", cast, kept, False)
        elif type(parent) in OPERATORS:
            on_the_left = parent.this is cast
            kept = enum_of_type(enum_of(parent.expression if on_the_left else parent.this))
            if kept is not None:
                refuse_string_parameter(OPERATORS[type(parent)], cast, kept, on_the_left)


def _refuse_string_array(cast: exp.Expression, quantified: exp.Expression,
                         enum_of: Callable[[exp.Expression], exp.DataType | None]) -> None:
    """`st = ANY($1)` with $1 declared text[] or varchar[]: PostgreSQL's 42883 (`status =
    text`), as the source says where it compares them."""
    compared = quantified.parent
    while isinstance(compared, exp.Paren):
        compared = compared.parent
    if type(compared) not in OPERATORS or not isinstance(cast, exp.Cast) or ENUM_VALUE in cast.meta:
        return
    kept = enum_of_type(enum_of(compared.this))
    if kept is None or cast.to.this != exp.DataType.Type.ARRAY or len(cast.to.expressions) != 1:
        return
    element = exp.Cast(this=cast.this.copy(), to=cast.to.expressions[0].copy())
    refuse_string_parameter(OPERATORS[type(compared)], element, kept, False)


def param_type_names(types: Sequence[exp.DataType]) -> tuple[str, ...]:
    """The PostgreSQL names of `types` (QueryPlan.param_types); an enum's is its EnumText,
    by which the session finds its OID and labels (gateway.session.enum_params)."""
    return tuple(enum_of_type(t) or _enum_array(t) or pg_type_name(t) or "text" for t in types)


def _enum_array(datatype: exp.DataType) -> EnumArray | None:
    kept = enum_of_array_type(datatype)
    return EnumArray(kept) if kept is not None else None
