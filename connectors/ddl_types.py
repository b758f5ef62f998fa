"""A result column's PostgreSQL type as a target dialect's column type, for the DDL of
`CREATE TABLE src.t AS <query>` (docs/design.md §5, "Moves").

Each type is chosen so that the new table reads back through its source's reader
(`connectors/<kind>/types.py`) as the type it was made from: MySQL's BOOLEAN is
tinyint(1), read as bool; a timestamp with time zone is MySQL's TIMESTAMP (stored in UTC)
and a timestamp without one its DATETIME; SQLite keeps the declared names its affinity
rules and the reader's temporal names know. What a target cannot hold is 0A000.
"""

from __future__ import annotations

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

DIALECTS = {"postgres": "postgres", "mysql": "mysql", "sqlite": "sqlite"}
_MYSQL = {"int2": "SMALLINT", "int4": "INT", "int8": "BIGINT", "float4": "FLOAT",
          "float8": "DOUBLE", "text": "LONGTEXT", "bool": "BOOLEAN", "date": "DATE",
          "timestamp": "DATETIME(6)", "timestamptz": "TIMESTAMP(6)", "bytea": "LONGBLOB",
          "json": "JSON", "jsonb": "JSON", "uuid": "UUID", "time": "TIME(6)"}
_SQLITE = {"int2": "INTEGER", "int4": "INTEGER", "int8": "INTEGER", "float4": "REAL",
           "float8": "REAL", "text": "TEXT", "bool": "BOOLEAN", "date": "DATE",
           "timestamp": "TIMESTAMP", "timestamptz": "TIMESTAMP", "bytea": "BLOB",
           "json": "TEXT", "jsonb": "TEXT", "uuid": "TEXT", "numeric": "NUMERIC"}


def column_type(kind: str, pg_type: str, typmod: int) -> exp.DataType:
    """The DDL type on a `kind` target of a column PostgreSQL types `pg_type(typmod)`."""
    length = typmod - 4 if pg_type in ("varchar", "bpchar") and typmod >= 4 else None
    numeric = ((typmod - 4) >> 16, (typmod - 4) & 0xFFFF) if pg_type == "numeric" and typmod >= 4 else None
    if kind == "postgres":
        spelled = pg_type + (f"({length})" if length is not None else
                             f"({numeric[0]},{numeric[1]})" if numeric else "")
        return exp.DataType.build(spelled, dialect="postgres")
    if pg_type in ("varchar", "bpchar") and length is not None:
        word = "VARCHAR" if pg_type == "varchar" else "CHAR"
        return _named(f"{word}({length})")
    if pg_type in ("varchar", "bpchar", "name"):
        pg_type = "text"
    if pg_type == "numeric":
        if kind == "mysql":
            # MySQL's DECIMAL defaults to (10, 0); an unconstrained numeric keeps the
            # widest it has.
            precision, scale = numeric or (65, 30)
            return exp.DataType.build(f"DECIMAL({precision},{scale})", dialect="mysql")
        return _named(f"NUMERIC({numeric[0]},{numeric[1]})" if numeric else "NUMERIC")
    spelled = (_MYSQL if kind == "mysql" else _SQLITE).get(pg_type)
    if spelled is None:
        raise PgError(FEATURE_NOT_SUPPORTED,
                      f"a column of type {pg_type} cannot be created in a {kind} source")
    return _named(spelled)


def _named(spelled: str) -> exp.DataType:
    """A type written as the target spells it (sqlglot's own mapping would respell
    SQLite's BOOLEAN as INTEGER, which its reader takes for a number)."""
    return exp.DataType(this=exp.DataType.Type.USERDEFINED, kind=spelled)


def create_table(kind: str, table: exp.Table, columns: list[tuple[str, str, int]],
                 unlogged: bool = False) -> str:
    """CREATE TABLE `table` (columns: name, PostgreSQL type name, typmod) in `kind`'s
    dialect; `unlogged` (PostgreSQL): a scratch table, which skips the WAL."""
    definitions = []
    for name, pg_type, typmod in columns:
        definition = exp.ColumnDef(this=exp.to_identifier(name, quoted=True),
                                   kind=column_type(kind, pg_type, typmod))
        if kind == "mysql" and pg_type == "timestamptz":
            # Said NULL: MariaDB makes a bare TIMESTAMP column NOT NULL DEFAULT now().
            definition.set("constraints", [exp.ColumnConstraint(
                kind=exp.NotNullColumnConstraint(allow_null=True))])
        definitions.append(definition)
    create = exp.Create(this=exp.Schema(this=table, expressions=definitions), kind="TABLE")
    if unlogged:
        create.set("properties", exp.Properties(expressions=[exp.UnloggedProperty()]))
    if kind == "sqlite":
        from connectors.dialects.sqlite import to_sqlite
        return to_sqlite(create)
    return create.sql(dialect=DIALECTS[kind])
