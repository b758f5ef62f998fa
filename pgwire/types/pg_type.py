"""PostgreSQL's built-in types: the one table the gateway describes types from.

`TYPES` holds pg_type rows as PostgreSQL 15 has them (OID, typname, typlen, typelem,
typarray, the I/O function stem…): the catalog serves them to drivers, which read pg_type
to learn how to decode a column: pgJDBC decides "is this an array" with
`typinput = 'array_in'::regproc`, npgsql joins `pg_proc.oid = typreceive` and looks for
`array_recv`, asyncpg follows `typelem`/`typarray`.

The types the gateway can send and receive values of are `PgType`s taken from those rows
(BOOL, INT4, TEXT_ARRAY…), with what RowDescription carries: OID, typlen and typmod.
Their value codecs live one module per type family and are found through
`pgwire.types.adapters`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError

@dataclass(frozen=True)
class TypeDef:
    oid: int
    name: str
    length: int
    byval: bool
    category: str
    align: str
    storage: str = "p"
    array_oid: int = 0
    io: str = ""  # I/O function stem: int4 -> int4in/int4out/int4recv/int4send
    preferred: bool = False
    typtype: str = "b"
    elem: int = 0
    sql_name: str = ""  # format_type() spelling; default typname
    tail: str = ""  # format_type() words after the typmod: " with time zone"
    modkind: str = ""  # how format_type shows a typmod: numeric, length, precision


def _t(oid, name, length, byval, category, align, storage="p", array_oid=0, io=None, **kw):
    stem = io if io is not None else (f"{name}_" if name in _UNDERSCORE_IO else name)
    return TypeDef(oid, name, length, byval, category, align, storage, array_oid, stem, **kw)


_UNDERSCORE_IO = {"date", "timestamp", "timestamptz", "time", "timetz", "interval", "numeric",
                  "uuid", "json", "jsonb", "xml", "point", "bit", "varbit", "pg_node_tree",
                  "record", "cstring", "void", "anyarray", "inet", "anyelement", "internal",
                  "trigger", "any", "anynonarray", "anyenum", "cidr", "macaddr", "jsonpath"}

TYPES: tuple[TypeDef, ...] = (
    _t(16, "bool", 1, True, "B", "c", array_oid=1000, io="bool", preferred=True, sql_name="boolean"),
    _t(17, "bytea", -1, False, "U", "i", "x", 1001),
    _t(18, "char", 1, True, "Z", "c", array_oid=1002, sql_name='"char"'),
    _t(19, "name", 64, False, "S", "c", array_oid=1003, elem=18),
    _t(20, "int8", 8, True, "N", "d", array_oid=1016, sql_name="bigint"),
    _t(21, "int2", 2, True, "N", "s", array_oid=1005, sql_name="smallint"),
    _t(22, "int2vector", -1, False, "A", "i", array_oid=1006, elem=21),
    _t(23, "int4", 4, True, "N", "i", array_oid=1007, sql_name="integer"),
    _t(24, "regproc", 4, True, "N", "i", array_oid=1008),
    _t(25, "text", -1, False, "S", "i", "x", 1009, preferred=True),
    _t(26, "oid", 4, True, "N", "i", array_oid=1028, preferred=True),
    _t(27, "tid", 6, False, "U", "s", array_oid=1010),
    _t(28, "xid", 4, True, "U", "i", array_oid=1011),
    _t(29, "cid", 4, True, "U", "i", array_oid=1012),
    _t(30, "oidvector", -1, False, "A", "i", array_oid=1013, elem=26),
    _t(114, "json", -1, False, "U", "i", "x", 199),
    _t(142, "xml", -1, False, "U", "i", "x", 143),
    _t(194, "pg_node_tree", -1, False, "Z", "i", "x"),
    _t(600, "point", 16, False, "G", "d", array_oid=1017),
    _t(650, "cidr", -1, False, "I", "i", "m", 651),
    _t(700, "float4", 4, True, "N", "i", array_oid=1021, sql_name="real"),
    _t(701, "float8", 8, True, "N", "d", array_oid=1022, preferred=True,
       sql_name="double precision"),
    _t(705, "unknown", -2, False, "X", "c", typtype="p"),
    _t(790, "money", 8, True, "N", "d", array_oid=791, io="cash_"),
    _t(829, "macaddr", 6, False, "U", "i", array_oid=1040),
    _t(869, "inet", -1, False, "I", "i", "m", 1041, preferred=True),
    _t(1033, "aclitem", 12, False, "U", "i", array_oid=1034),
    _t(1042, "bpchar", -1, False, "S", "i", "x", 1014, sql_name="character", modkind="length"),
    _t(1043, "varchar", -1, False, "S", "i", "x", 1015, sql_name="character varying",
       modkind="length"),
    _t(1082, "date", 4, True, "D", "i", array_oid=1182),
    _t(1083, "time", 8, True, "D", "d", array_oid=1183, sql_name="time",
       tail=" without time zone", modkind="precision"),
    _t(1114, "timestamp", 8, True, "D", "d", array_oid=1115, sql_name="timestamp",
       tail=" without time zone", modkind="precision"),
    _t(1184, "timestamptz", 8, True, "D", "d", array_oid=1185, preferred=True,
       sql_name="timestamp", tail=" with time zone", modkind="precision"),
    _t(1186, "interval", 16, False, "T", "d", array_oid=1187, preferred=True),
    _t(1266, "timetz", 12, False, "D", "d", array_oid=1270, sql_name="time",
       tail=" with time zone", modkind="precision"),
    _t(1560, "bit", -1, False, "V", "i", "x", 1561, modkind="length0"),
    _t(1562, "varbit", -1, False, "V", "i", "x", 1563, preferred=True,
       sql_name="bit varying", modkind="length0"),
    _t(1700, "numeric", -1, False, "N", "i", "m", 1231, modkind="numeric"),
    _t(1790, "refcursor", -1, False, "U", "i", "x", 2201, io="text"),
    _t(2202, "regprocedure", 4, True, "N", "i", array_oid=2207),
    _t(2205, "regclass", 4, True, "N", "i", array_oid=2210),
    _t(2206, "regtype", 4, True, "N", "i", array_oid=2211),
    _t(4089, "regnamespace", 4, True, "N", "i", array_oid=4090),
    _t(4096, "regrole", 4, True, "N", "i", array_oid=4097),
    _t(2950, "uuid", 16, False, "U", "c", array_oid=2951),
    _t(3802, "jsonb", -1, False, "U", "i", "x", 3807),
    _t(4072, "jsonpath", -1, False, "U", "i", "x", 4073),
    _t(2249, "record", -1, False, "P", "d", "x", 2287, typtype="p"),
    _t(2275, "cstring", -2, False, "P", "c", array_oid=1263, typtype="p"),
    _t(2276, "any", 4, True, "P", "i", typtype="p", sql_name='"any"'),
    _t(2277, "anyarray", -1, False, "P", "d", "x", typtype="p"),
    _t(2278, "void", 4, True, "P", "i", typtype="p"),
    _t(2279, "trigger", 4, True, "P", "i", typtype="p"),
    _t(2281, "internal", 8, True, "P", "d", typtype="p"),
    _t(2283, "anyelement", 4, True, "P", "i", typtype="p"),
    _t(2776, "anynonarray", 4, True, "P", "i", typtype="p"),
)

ARRAY_IO = "array_"


def array_types() -> list[TypeDef]:
    """One `_name` array type per scalar with a typarray, as PostgreSQL defines them."""
    out = []
    for t in TYPES:
        if t.array_oid:
            out.append(TypeDef(t.array_oid, f"_{t.name}", -1, False, "A",
                               "d" if t.align == "d" else "i", "x", 0, ARRAY_IO, elem=t.oid,
                               sql_name=(t.sql_name or t.name) + "", tail=t.tail,
                               modkind=t.modkind))
    return out


ALL_TYPES: tuple[TypeDef, ...] = TYPES + tuple(array_types())
TYPE_BY_OID = {t.oid: t for t in ALL_TYPES}


def io_functions() -> dict[str, tuple[int, tuple[int, ...]]]:
    """I/O function name -> (return type, argument types), for pg_proc."""
    cstring, internal, bytea = 2275, 2281, 17
    funcs: dict[str, tuple[int, tuple[int, ...]]] = {
        "array_in": (2277, (cstring, 26, 23)), "array_out": (cstring, (2277,)),
        "array_recv": (2277, (internal, 26, 23)), "array_send": (bytea, (2277,)),
        "array_subscript_handler": (internal, (internal,)),
    }
    for t in TYPES:
        funcs.setdefault(f"{t.io}in", (t.oid, (cstring,)))
        funcs.setdefault(f"{t.io}out", (cstring, (t.oid,)))
        funcs.setdefault(f"{t.io}recv", (t.oid, (internal,)))
        funcs.setdefault(f"{t.io}send", (bytea, (t.oid,)))
    return funcs


FIRST_NORMAL_OID = 16384  # PostgreSQL's FirstNormalObjectId: below it, its built-in objects


@dataclass(frozen=True)
class PgType:
    """A PostgreSQL type as sent in RowDescription: OID, name, typlen and typmod; and for
    an array type the gateway numbers itself (a table's row type's array), its element
    type's OID (array_send writes it; built-in arrays have theirs in ELEMENT_OF)."""

    oid: int
    name: str
    size: int
    typmod: int = -1
    elem: int = 0


def _served(name: str) -> PgType:
    row = _ROW_BY_NAME[name]
    return PgType(row.oid, row.name, row.length)


_ROW_BY_NAME = {t.name: t for t in TYPES}

# The scalar types whose values the gateway sends and receives.
BOOL = _served("bool")
BYTEA = _served("bytea")
NAME = _served("name")
CHAR = _served("char")  # "char": one byte, the catalogs' kind codes (pg_type.typtype ...)
INT8 = _served("int8")
INT2 = _served("int2")
INT4 = _served("int4")
TEXT = _served("text")
OID = _served("oid")
JSON = _served("json")
FLOAT4 = _served("float4")
FLOAT8 = _served("float8")
UNKNOWN = _served("unknown")
BPCHAR = _served("bpchar")
VARCHAR = _served("varchar")
DATE = _served("date")
TIME = _served("time")
TIMESTAMP = _served("timestamp")
TIMESTAMPTZ = _served("timestamptz")
INTERVAL = _served("interval")
NUMERIC = _served("numeric")
UUID = _served("uuid")
JSONB = _served("jsonb")
# Served as PostgreSQL's own text (a PostgreSQL source's rows), with binary encoders of
# their own (pgwire.types.bits, .timetz, .money, .regtypes); arrays of them too.
BIT = _served("bit")
VARBIT = _served("varbit")
TIMETZ = _served("timetz")
MONEY = _served("money")
REGPROC = _served("regproc")
REGPROCEDURE = _served("regprocedure")
REGCLASS = _served("regclass")
REGTYPE = _served("regtype")
REGNAMESPACE = _served("regnamespace")
REGROLE = _served("regrole")
TEXT_SERVED_TYPES: tuple[PgType, ...] = (
    BIT, VARBIT, TIMETZ, MONEY, REGPROC, REGPROCEDURE, REGCLASS, REGTYPE, REGNAMESPACE, REGROLE,
)

SCALAR_TYPES: tuple[PgType, ...] = (
    BOOL, BYTEA, NAME, CHAR, INT8, INT2, INT4, TEXT, OID, JSON, FLOAT4, FLOAT8, UNKNOWN, BPCHAR,
    VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL, NUMERIC, UUID, JSONB,
)  # fmt: skip

# element oid → array type (pg_type.typarray; arrays are always varlena), and back.
ARRAY_OF: dict[int, PgType] = {
    t.oid: PgType(row.array_oid, f"_{t.name}", -1)
    for t in (*SCALAR_TYPES, *TEXT_SERVED_TYPES)
    if (row := TYPE_BY_OID[t.oid]).array_oid
}
ELEMENT_OF: dict[int, PgType] = {
    arr.oid: elem for elem in (*SCALAR_TYPES, *TEXT_SERVED_TYPES) if (arr := ARRAY_OF.get(elem.oid))
}

BOOL_ARRAY = ARRAY_OF[BOOL.oid]
BYTEA_ARRAY = ARRAY_OF[BYTEA.oid]
NAME_ARRAY = ARRAY_OF[NAME.oid]
INT2_ARRAY = ARRAY_OF[INT2.oid]
INT4_ARRAY = ARRAY_OF[INT4.oid]
TEXT_ARRAY = ARRAY_OF[TEXT.oid]
BPCHAR_ARRAY = ARRAY_OF[BPCHAR.oid]
VARCHAR_ARRAY = ARRAY_OF[VARCHAR.oid]
INT8_ARRAY = ARRAY_OF[INT8.oid]
FLOAT4_ARRAY = ARRAY_OF[FLOAT4.oid]
FLOAT8_ARRAY = ARRAY_OF[FLOAT8.oid]
OID_ARRAY = ARRAY_OF[OID.oid]
TIMESTAMP_ARRAY = ARRAY_OF[TIMESTAMP.oid]
DATE_ARRAY = ARRAY_OF[DATE.oid]
TIME_ARRAY = ARRAY_OF[TIME.oid]
TIMESTAMPTZ_ARRAY = ARRAY_OF[TIMESTAMPTZ.oid]
INTERVAL_ARRAY = ARRAY_OF[INTERVAL.oid]
NUMERIC_ARRAY = ARRAY_OF[NUMERIC.oid]
JSON_ARRAY = ARRAY_OF[JSON.oid]
UUID_ARRAY = ARRAY_OF[UUID.oid]
JSONB_ARRAY = ARRAY_OF[JSONB.oid]

_BY_OID: dict[int, PgType] = {t.oid: t for t in (*SCALAR_TYPES, *ARRAY_OF.values(),
                                                  *TEXT_SERVED_TYPES)}

# Every spelling PostgreSQL's grammar or format_type() uses for the types above.
_ALIASES: dict[str, PgType] = {
    "bool": BOOL,
    "boolean": BOOL,
    "bytea": BYTEA,
    "name": NAME,
    "int8": INT8,
    "bigint": INT8,
    "int2": INT2,
    "smallint": INT2,
    "int4": INT4,
    "int": INT4,
    "integer": INT4,
    "text": TEXT,
    "oid": OID,
    "json": JSON,
    "float4": FLOAT4,
    "real": FLOAT4,
    "float8": FLOAT8,
    "double precision": FLOAT8,
    "float": FLOAT8,
    "unknown": UNKNOWN,
    "bpchar": BPCHAR,
    "char": BPCHAR,
    "character": BPCHAR,
    "varchar": VARCHAR,
    "character varying": VARCHAR,
    "date": DATE,
    "time": TIME,
    "time without time zone": TIME,
    "timestamp": TIMESTAMP,
    "timestamp without time zone": TIMESTAMP,
    "timestamptz": TIMESTAMPTZ,
    "timestamp with time zone": TIMESTAMPTZ,
    "interval": INTERVAL,
    "numeric": NUMERIC,
    "decimal": NUMERIC,
    "uuid": UUID,
    "jsonb": JSONB,
    "bit": BIT,
    "varbit": VARBIT,
    "bit varying": VARBIT,
    "timetz": TIMETZ,
    "time with time zone": TIMETZ,
    "money": MONEY,
    **{t.name: t for t in (REGPROC, REGPROCEDURE, REGCLASS, REGTYPE, REGNAMESPACE, REGROLE)},
}

_BY_TYPNAME: dict[str, PgType] = {t.name: t for t in _BY_OID.values()}

_TYPE_WITH_ARGS = re.compile(
    r"^(?P<base>[a-z ]+?)\s*\(\s*(?P<args>[-+0-9, ]*)\)(?P<rest>[a-z ]*)$"
)


def pg_type_by_oid(oid: int) -> PgType | None:
    """The built-in type with this OID, or None when the gateway does not know it."""
    return _BY_OID.get(oid)


def pg_type_by_name(name: str) -> PgType | None:
    """Look a type up by any of its SQL spellings: 'integer', 'character varying', 'int4[]'.

    Type modifiers are understood where they change RowDescription: 'numeric(10,2)',
    'varchar(20)', 'char(3)', 'timestamp(3) with time zone'. Unknown names give None.
    """
    if name.strip().startswith('"char"'):  # quoted, PostgreSQL's one-byte type, not char(1)
        return CHAR if name.strip() == '"char"' else ARRAY_OF[CHAR.oid] if name.strip() == '"char"[]' else None
    key = " ".join(name.strip().lower().replace('"', "").split())
    if key.endswith("[]"):
        elem = pg_type_by_name(key[:-2])
        return ARRAY_OF.get(elem.oid) if elem is not None else None
    plain = _ALIASES.get(key) or _BY_TYPNAME.get(key)
    if plain is not None:
        return plain
    m = _TYPE_WITH_ARGS.match(key)
    if m is None:
        return None
    base = _ALIASES.get(
        (m.group("base").strip() + " " + m.group("rest").strip()).strip()
    )
    if base is None:
        return None
    try:
        args = [int(a) for a in m.group("args").split(",") if a.strip()]
    except ValueError:
        return None
    return _with_typmod(base, args)


def _with_typmod(base: PgType, args: list[int]) -> PgType | None:
    """Apply SQL type arguments the way PostgreSQL's typmodin functions encode them."""
    if base is NUMERIC and 1 <= len(args) <= 2:
        precision, scale = args[0], args[1] if len(args) == 2 else 0
        return replace(NUMERIC, typmod=numeric_typmod(precision, scale))
    if base in (VARCHAR, BPCHAR) and len(args) == 1:
        return replace(base, typmod=args[0] + 4)  # VARHDRSZ + length
    if base in (TIME, TIMESTAMP, TIMESTAMPTZ, TIMETZ, BIT, VARBIT) and len(args) == 1:
        return replace(base, typmod=args[0])
    if base is FLOAT8 and len(args) == 1 and 1 <= args[0] <= 53:
        return FLOAT4 if args[0] <= 24 else FLOAT8
    if base is INTERVAL and len(args) == 1:
        # INTERVAL_FULL_RANGE (0x7FFF) in the high half, precision in the low half.
        return replace(base, typmod=(0x7FFF << 16) | args[0])
    return None


def numeric_typmod(precision: int, scale: int) -> int:
    """numeric(p, s) as PostgreSQL 15 encodes it (negative scales keep 11 bits)."""
    return ((precision << 16) | (scale & 0x7FF)) + 4


# The names PostgreSQL's input functions use in their error messages.
_SQL_NAMES: dict[int, str] = {
    BOOL.oid: "boolean",
    INT2.oid: "smallint",
    INT4.oid: "integer",
    INT8.oid: "bigint",
    FLOAT4.oid: "real",
    FLOAT8.oid: "double precision",
    TIME.oid: "time",
    TIMESTAMPTZ.oid: "timestamp with time zone",
    JSONB.oid: "json",
}


def sql_name(oid: int) -> str:
    """How PostgreSQL names a type in 'invalid input syntax for type X' messages."""
    known = _SQL_NAMES.get(oid)
    if known is not None:
        return known
    found = _BY_OID.get(oid)
    return found.name if found is not None else "unknown"


# format_type()'s names (regtype's output, and the name in coercion errors).
_FORMAT_NAMES: dict[int, str] = {
    BOOL.oid: "boolean", INT2.oid: "smallint", INT4.oid: "integer", INT8.oid: "bigint",
    FLOAT4.oid: "real", FLOAT8.oid: "double precision", VARCHAR.oid: "character varying",
    BPCHAR.oid: "character", TIME.oid: "time without time zone", TIMETZ.oid: "time with time zone",
    TIMESTAMP.oid: "timestamp without time zone", TIMESTAMPTZ.oid: "timestamp with time zone",
    VARBIT.oid: "bit varying",
}


def format_type(oid: int) -> str:
    """A type as PostgreSQL's format_type() names it: `integer`, `character varying[]`."""
    known = _FORMAT_NAMES.get(oid)
    if known is not None:
        return known
    found = _BY_OID.get(oid)
    if found is None:
        return "???"  # format_type's own answer for an OID it does not know
    element = ELEMENT_OF.get(oid)
    if element is not None or found.elem:
        return f"{format_type(element.oid if element is not None else found.elem)}[]"
    return found.name


def input_syntax_error(oid: int, text: str) -> PgError:
    """The 22P02 error an input function raises for text it cannot parse."""
    return PgError(
        INVALID_TEXT_REPRESENTATION,
        f'invalid input syntax for type {sql_name(oid)}: "{text}"',
    )


