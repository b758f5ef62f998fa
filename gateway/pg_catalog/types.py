"""pg_type rows as PostgreSQL 15 has them, and the I/O functions they name in pg_proc.

Drivers read pg_type to learn how to decode a column: pgJDBC decides "is this an array"
with `typinput = 'array_in'::regproc`, npgsql joins `pg_proc.oid = typreceive` and looks
for `array_recv`, asyncpg follows `typelem`/`typarray`. So every type carries its real OID,
typelem/typarray, and typinput/typoutput/typreceive/typsend pointing at pg_proc rows with
PostgreSQL's function names.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.pg_catalog.model import OWNER_OID, PG_CATALOG_OID


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


def type_rows(proc_oid: dict[str, int]) -> list[tuple]:
    rows = []
    for t in ALL_TYPES:
        is_array = t.io == ARRAY_IO
        subscript = proc_oid["array_subscript_handler"] if is_array else 0
        rows.append((
            t.oid, t.name, PG_CATALOG_OID, OWNER_OID, t.length, t.byval, t.typtype,
            t.category, t.preferred, True, ",", 0, subscript, t.elem, t.array_oid,
            proc_oid[f"{t.io}in"], proc_oid[f"{t.io}out"], proc_oid[f"{t.io}recv"],
            proc_oid[f"{t.io}send"], 0, 0, 0, t.align, t.storage, False, 0, -1, 0,
            100 if t.category == "S" and not is_array else 0, None, None, None))
    return rows


def display_rows() -> list[tuple]:
    """Helper rows for format_type(): (oid, base name, tail, modkind, is_array)."""
    rows = []
    for t in ALL_TYPES:
        is_array = t.io == ARRAY_IO
        rows.append((t.oid, t.sql_name or (t.name if not is_array else t.name[1:]), t.tail,
                     t.modkind, is_array, _info_schema_type(t, is_array)))
    return rows


def _info_schema_type(t: TypeDef, is_array: bool) -> str:
    """information_schema.columns.data_type for this type."""
    if is_array:
        return "ARRAY"
    if t.typtype == "p" or t.category in ("Z", "G", "U", "I") and t.name not in (
            "bytea", "uuid", "json", "jsonb", "xml"):
        return "USER-DEFINED"
    if t.name == "bytea":
        return "bytea"
    return (t.sql_name or t.name) + t.tail
