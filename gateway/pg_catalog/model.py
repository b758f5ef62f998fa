"""The federated catalog as PostgreSQL objects: namespaces, relations and columns with OIDs.

`CatalogModel.build(snapshot)` numbers everything the way PostgreSQL would: the system
namespaces keep their real OIDs (pg_catalog 11, public 2200, information_schema 13000 as
in a fresh PostgreSQL 15), user objects start at 16384 (FirstNormalObjectId). Numbering
follows sorted names, so the same catalog always gets the same OIDs and a client that
cached an OID across a refresh still finds the same table.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from connectors.base import TableInfo
from gateway.pg_catalog.enums import TYPE_OID_META, EnumType, source_enums
from pgwire.types.pg_type import FIRST_NORMAL_OID
from pgwire.types.table import PgType, pg_type_for_field

PG_CATALOG_OID = 11
PUBLIC_OID = 2200
INFORMATION_SCHEMA_OID = 13000
OWNER_OID = 10  # the bootstrap superuser; pg_roles names it after the session's user
DATABASE_OID = 16383  # below FirstNormalObjectId, like template databases' neighbours
BTREE_AM_OID = 403
HEAP_AM_OID = 2
PG_CLASS_OID = 1259
PG_NAMESPACE_RELOID = 2615
PG_CONSTRAINT_RELOID = 2606
PG_PROC_RELOID = 1255
PG_TYPE_RELOID = 1247

SYSTEM_SCHEMAS = ("pg_catalog", "information_schema")


@dataclass(frozen=True)
class Column:
    name: str
    number: int  # attnum, from 1
    pgtype: PgType
    not_null: bool


@dataclass(frozen=True)
class Relation:
    oid: int
    name: str
    namespace_oid: int
    namespace: str
    kind: str  # relkind: 'r' table, 'v' view, 'i' index
    columns: tuple[Column, ...]
    row_estimate: int | None = None
    primary_key: tuple[str, ...] = ()
    pk_index_oid: int | None = None
    pk_constraint_oid: int | None = None
    comment: str | None = None
    row_type_oid: int = 0  # pg_class.reltype: the relation's composite type (0: none)
    row_array_oid: int = 0  # that type's array type
    source_row_type: tuple[int, int] | None = None  # the source's OIDs of both (TableInfo.row_type)


@dataclass
class CatalogModel:
    version: int
    namespaces: dict[str, int] = field(default_factory=dict)  # name -> oid
    relations: list[Relation] = field(default_factory=list)
    enums: list[EnumType] = field(default_factory=list)  # the sources' (gateway.pg_catalog.enums)

    @classmethod
    def build(cls, version: int, user_sources: dict[str, list[TableInfo]],
              system_tables: dict[str, list[TableInfo]]) -> CatalogModel:
        """`user_sources`: each source's tables; `system_tables`: pg_catalog's own relations
        and information_schema's views, keyed by their schema name."""
        model = cls(version)
        model.namespaces = {"pg_catalog": PG_CATALOG_OID, "public": PUBLIC_OID,
                            "information_schema": INFORMATION_SCHEMA_OID}
        next_oid = FIRST_NORMAL_OID
        for name in sorted(user_sources):
            if name not in model.namespaces:
                model.namespaces[name] = next_oid
                next_oid += 1
        system_oid = 12000  # system relations without a well-known OID
        for schema, tables in system_tables.items():
            for info in sorted(tables, key=lambda t: t.ref.name):
                oid = WELL_KNOWN_RELATIONS.get(info.ref.name) if schema == "pg_catalog" else None
                if oid is None:
                    oid, system_oid = system_oid, system_oid + 1
                kind = "v" if schema == "information_schema" or info.ref.name in SYSTEM_VIEWS else "r"
                model.relations.append(_relation(oid, model.namespaces[schema], schema, kind, info))
        for source in sorted(user_sources):
            for info in sorted(user_sources[source], key=lambda t: t.ref.name):
                relation = _relation(next_oid, model.namespaces[source], source, "r", info)
                next_oid += 1
                if info.primary_key:
                    relation = _with_pk(relation, next_oid, next_oid + 1)
                    next_oid += 2
                model.relations.append(relation)
        # Each source relation's row type (and its array), numbered after every relation,
        # so a relation keeps its OID: `SELECT t FROM t` is a value of type t (pg_class.reltype).
        for i, relation in enumerate(model.relations):
            if relation.namespace not in SYSTEM_SCHEMAS:
                model.relations[i] = replace(relation, row_type_oid=next_oid,
                                             row_array_oid=next_oid + 1)
                next_oid += 2
        model._number_enums(user_sources, next_oid)
        return model

    def _number_enums(self, user_sources: dict[str, list[TableInfo]], next_oid: int) -> None:
        """Each source's enums, numbered after everything else (a relation keeps its OID),
        and the columns of one typed as it (pg_attribute.atttypid)."""
        by_source: dict[str, dict[int, EnumType]] = {}
        for source in sorted(user_sources):
            found = source_enums(user_sources[source])
            for source_oid, (name, labels, source_array) in sorted(found.items(), key=lambda kv: kv[1][0]):
                made = EnumType(next_oid, name, self.namespaces[source], source, labels, source_oid,
                                next_oid + 1, next_oid + 1 + len(labels), source_array)
                next_oid += 2 + len(labels)
                self.enums.append(made)
                by_source.setdefault(source, {})[source_oid] = made
        fields = {(source, info.ref.name): info.schema for source in user_sources
                  for info in user_sources[source]}
        for i, rel in enumerate(self.relations):
            enums = by_source.get(rel.namespace)
            schema = fields.get((rel.namespace, rel.name)) if enums else None
            if schema is None:
                continue
            typed = [replace(c, pgtype=PgType(enums[int(f.metadata[TYPE_OID_META])].oid,
                                              enums[int(f.metadata[TYPE_OID_META])].name, 4))
                     if f.metadata and TYPE_OID_META in f.metadata
                     and int(f.metadata[TYPE_OID_META]) in enums else c
                     for c, f in zip(rel.columns, schema)]
            self.relations[i] = replace(rel, columns=tuple(typed))

    def row_types_by_name(self) -> dict[str, dict[str, int]]:
        """Per source, the OID of each of its tables' row type in this catalog, by the
        table's name: what the engine's whole row of a file's table is described as."""
        found: dict[str, dict[str, int]] = {}
        for rel in self.relations:
            if rel.row_type_oid:
                found.setdefault(rel.namespace, {})[rel.name] = rel.row_type_oid
        return found

    def row_type_oids(self) -> dict[str, dict[int, int]]:
        """Per source, its own OIDs of its tables' row types (and their arrays) and of its
        enums (and their arrays) -> this catalog's: what a description relayed from the source names
        (gateway.relay.links), and what the engine's enum outputs are described as."""
        found: dict[str, dict[int, int]] = {}
        for made in self.enums:
            found.setdefault(made.namespace, {})[made.source_oid] = made.oid
            if made.source_array_oid:
                found[made.namespace][made.source_array_oid] = made.array_oid
        for rel in self.relations:
            if rel.source_row_type is not None and rel.row_type_oid:
                row, array = rel.source_row_type
                found.setdefault(rel.namespace, {}).update(
                    {row: rel.row_type_oid, array: rel.row_array_oid})
        return found


def _relation(oid: int, ns_oid: int, ns: str, kind: str, info: TableInfo) -> Relation:
    columns = tuple(Column(f.name, i, pg_type_for_field(f), not f.nullable)
                    for i, f in enumerate(info.schema, 1))
    return Relation(oid, info.ref.name, ns_oid, ns, kind, columns, info.row_estimate,
                    tuple(info.primary_key), source_row_type=info.row_type)


def _with_pk(relation: Relation, index_oid: int, constraint_oid: int) -> Relation:
    known = {c.name for c in relation.columns}
    missing = [c for c in relation.primary_key if c not in known]
    if missing:
        raise ValueError(f"primary key of {relation.namespace}.{relation.name} names unknown "
                         f"columns {missing}")
    columns = tuple(Column(c.name, c.number, c.pgtype, c.not_null or c.name in relation.primary_key)
                    for c in relation.columns)
    return replace(relation, columns=columns, pk_index_oid=index_oid,
                   pk_constraint_oid=constraint_oid)


# Real OIDs of PostgreSQL 15's catalog relations: clients hard-code a few of them
# (e.g. 'pg_class'::regclass = 1259 in pg_description.classoid).
WELL_KNOWN_RELATIONS = {
    "pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255, "pg_class": 1259,
    "pg_authid": 1260, "pg_database": 1262, "pg_tablespace": 1213, "pg_namespace": 2615,
    "pg_constraint": 2606, "pg_index": 2610, "pg_attrdef": 2604, "pg_description": 2609,
    "pg_inherits": 2611, "pg_am": 2601, "pg_collation": 3456, "pg_enum": 3501,
    "pg_range": 3541, "pg_policy": 3256, "pg_statistic_ext": 3381, "pg_publication": 6104,
    "pg_trigger": 2620, "pg_rewrite": 2618, "pg_language": 2612, "pg_extension": 3079,
    "pg_depend": 2608, "pg_operator": 2617,
}
# pg_catalog relations that are views in PostgreSQL.
SYSTEM_VIEWS = frozenset({"pg_roles", "pg_user", "pg_settings", "pg_stat_activity",
                          "pg_prepared_statements", "pg_tables", "pg_views", "pg_indexes",
                          "pg_matviews", "pg_stat_user_tables"})
