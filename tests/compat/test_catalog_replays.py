"""Replays of the catalog queries BI tools and drivers send at connect and while browsing.

Written from the public sources of DBeaver (plugin org.jkiss.dbeaver.ext.postgresql),
Metabase (driver/postgres.clj and its sql-jdbc describe-fields), Grafana (the PostgreSQL
data source's query editor) and npgsql (PostgresDatabaseInfo type loading), with the
bind parameters those tools send written in as literals. Each must run without error and
return rows (where a real PostgreSQL with the demo loaded would).
"""

from __future__ import annotations

import psycopg
import pytest

DEMO_NS = "(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'demo')"
NATION = "(SELECT oid FROM pg_catalog.pg_class WHERE relname = 'nation')"

DBEAVER = {
    "connect-schema": "SELECT current_schema(),session_user",
    "connect-settings": "select * from pg_catalog.pg_settings where name='standard_conforming_strings'",
    "connect-database": "SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname='fedgate'",
    "keywords": "select string_agg(word, ',') from pg_catalog.pg_get_keywords()",
    "schemas": (
        "SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n\n"
        "LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 "
        "AND d.classoid='pg_namespace'::regclass\n ORDER BY nspname"),
    "roles": "SELECT a.oid,a.* FROM pg_catalog.pg_roles a ORDER BY a.rolname",
    "tablespaces": "SELECT t.oid,t.* FROM pg_catalog.pg_tablespace t ORDER BY t.spcname",
    "tables": (
        "SELECT c.oid,c.*,d.description,pg_catalog.pg_get_expr(c.relpartbound, c.oid) as "
        "partition_expr,  pg_catalog.pg_get_partkeydef(c.oid) as partition_key \n"
        "FROM pg_catalog.pg_class c\n"
        "LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 "
        "AND d.classoid='pg_class'::regclass\n"
        f"WHERE c.relnamespace={DEMO_NS} AND c.relkind not in ('i','I','c')"),
    "columns": (
        "SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as "
        "def_value,dsc.description,dep.objid\nFROM pg_catalog.pg_attribute a\n"
        "INNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid)\n"
        "LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum)\n"
        "LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)\n"
        "LEFT OUTER JOIN pg_depend dep on dep.refobjid = a.attrelid AND dep.deptype = 'i' "
        "and dep.refobjsubid = a.attnum and dep.classid = dep.refclassid\n"
        f"WHERE NOT a.attisdropped AND c.relkind not in ('i','I','c') AND c.oid={NATION}\n"
        "ORDER BY a.attnum"),
    "types": (
        "select t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as "
        "base_type_name, d.description\nfrom pg_catalog.pg_type t\n"
        "left join pg_catalog.pg_type et on et.oid=t.typelem \n"
        "left join pg_catalog.pg_class c on c.oid=t.typrelid\n"
        "left join pg_catalog.pg_description d on t.oid=d.objoid\n"
        "where t.typname is not null\n"
        "and (c.relkind is null or c.relkind = 'c') and (et.typcategory is null or "
        "et.typcategory <> 'C')"),
    "indexes": (
        "SELECT i.*,i.indkey as keys,c.relname,c.relnamespace,c.relam,c.reltablespace,"
        "tc.relname as tabrelname,dsc.description,pg_catalog.pg_get_expr(i.indpred, i.indrelid)"
        " as pred_expr,pg_catalog.pg_get_expr(i.indexprs, i.indrelid, true) as expr,"
        "pg_catalog.pg_relation_size(i.indexrelid) as index_rel_size,"
        "pg_catalog.pg_stat_get_numscans(i.indexrelid) as index_num_scans\n"
        "FROM pg_catalog.pg_index i\nINNER JOIN pg_catalog.pg_class c ON c.oid=i.indexrelid\n"
        "INNER JOIN pg_catalog.pg_class tc ON tc.oid=i.indrelid\n"
        "LEFT OUTER JOIN pg_catalog.pg_description dsc ON i.indexrelid=dsc.objoid\n"
        f"WHERE  i.indrelid={NATION} ORDER BY tc.relname, c.relname"),
    "table-statistics": (
        "select c.oid,pg_catalog.pg_total_relation_size(c.oid) as total_rel_size,"
        "pg_catalog.pg_relation_size(c.oid) as rel_size\nFROM pg_class c\n"
        f"WHERE c.relnamespace={DEMO_NS}"),
    "constraints": (
        "SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,"
        "d.description, case when c.contype='c' then \"substring\"(pg_get_constraintdef(c.oid),"
        " 7) end as consrc_copy\nFROM pg_catalog.pg_constraint c\n"
        "INNER JOIN pg_catalog.pg_class t ON t.oid=c.conrelid\n"
        "LEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.confrelid\n"
        "LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND "
        "d.classoid='pg_constraint'::regclass\n"
        f"WHERE c.conrelid={NATION}\nORDER BY c.oid"),
}

METABASE = {
    "tables": (
        'SELECT n.nspname AS "schema", c.relname AS "name", CASE c.relkind WHEN \'r\' THEN '
        "'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW' WHEN 'f' THEN "
        "'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS \"type\", "
        'd.description AS "description", stat.n_live_tup AS "estimated_row_count" '
        "FROM pg_catalog.pg_class AS c INNER JOIN pg_catalog.pg_namespace AS n ON "
        "c.relnamespace = n.oid LEFT JOIN pg_catalog.pg_description AS d ON (c.oid = d.objoid) "
        "AND (d.objsubid = 0) AND (d.classoid = 'pg_class'::regclass) LEFT JOIN "
        "pg_stat_user_tables AS stat ON (n.nspname = stat.schemaname) AND (c.relname = "
        "stat.relname) WHERE (c.relnamespace = n.oid) AND (n.nspname !~ "
        "'^information_schema|catalog_history|pg_') AND (c.relkind IN ('r', 'p', 'v', 'f', 'm'))"
        " AND (n.nspname IN ('demo')) ORDER BY \"type\" ASC, \"schema\" ASC, \"name\" ASC"),
    "describe-fields": (
        "SELECT c.column_name AS name, c.udt_name AS database_type, c.ordinal_position - 1 AS "
        "database_position, c.table_schema AS table_schema, c.table_name AS table_name, "
        "pk.column_name IS NOT NULL AS pk, COL_DESCRIPTION(CAST(CAST(FORMAT('%I.%I', "
        "CAST(c.table_schema AS TEXT), CAST(c.table_name AS TEXT)) AS REGCLASS) AS OID), "
        "c.ordinal_position) AS field_comment, ((column_default IS NULL) OR "
        "(LOWER(column_default) = 'null')) AND (is_nullable = 'NO') AND NOT ((column_default "
        "IS NOT NULL) AND (column_default LIKE '%nextval(%')) AS database_required, "
        "(column_default IS NOT NULL) AND (column_default LIKE '%nextval(%') AS "
        "database_is_auto_increment FROM information_schema.columns AS c LEFT JOIN (SELECT "
        "tc.table_schema, tc.table_name, kc.column_name FROM information_schema.table_constraints"
        " AS tc INNER JOIN information_schema.key_column_usage AS kc ON (tc.constraint_name = "
        "kc.constraint_name) AND (tc.table_schema = kc.table_schema) AND (tc.table_name = "
        "kc.table_name) WHERE tc.constraint_type = 'PRIMARY KEY') AS pk ON (c.table_schema = "
        "pk.table_schema) AND (c.table_name = pk.table_name) AND (c.column_name = "
        "pk.column_name) WHERE c.table_name IN ('nation') AND c.table_schema IN ('demo') "
        "ORDER BY table_schema ASC, table_name ASC, database_position ASC"),
    "version": "SELECT current_setting('server_version_num')",
}

GRAFANA = {
    "version": "SELECT current_setting('server_version_num')::int/100 as version",
    "tables": (
        "select quote_ident(table_name) as \"table\" from information_schema.tables where "
        "quote_ident(table_schema) not in ('information_schema', 'monitor', 'pg_catalog', "
        "'pg_toast', '_timescaledb_internal') and table_type = 'BASE TABLE' and "
        "quote_ident(table_schema) = 'demo' order by 1"),
    "columns": (
        "select quote_ident(column_name) as \"column\", data_type as \"type\" from "
        "information_schema.columns where quote_ident(table_schema) = 'demo' and "
        "quote_ident(table_name) = 'nation'"),
    "schemas": (
        "SELECT DISTINCT table_schema FROM information_schema.tables WHERE table_schema NOT IN"
        " ('information_schema', 'pg_catalog') ORDER BY 1"),
}

NPGSQL = {
    "version": "SELECT version()",
    "load-types": """
SELECT ns.nspname, t.oid, t.typname, t.typtype, t.typnotnull, t.elemtypoid
FROM (
    SELECT
        typ.oid, typ.typnamespace, typ.typname, typ.typtype, typ.typrelid, typ.typnotnull, typ.relkind,
        elemtyp.oid AS elemtypoid, elemtyp.typname AS elemtypname, elemcls.relkind AS elemrelkind,
        CASE WHEN elemproc.proname='array_recv' THEN 'a' ELSE elemtyp.typtype END AS elemtyptype
    FROM (
        SELECT typ.oid, typnamespace, typname, typrelid, typnotnull, relkind, typelem AS elemoid,
            CASE WHEN proc.proname='array_recv' THEN 'a' ELSE typ.typtype END AS typtype,
            CASE
                WHEN proc.proname='array_recv' THEN typ.typelem
                WHEN typ.typtype='r' THEN rngsubtype
                WHEN typ.typtype='m' THEN (SELECT rngtypid FROM pg_range WHERE rngmultitypid = typ.oid)
                WHEN typ.typtype='d' THEN typ.typbasetype
            END AS elemtypoid
        FROM pg_type AS typ
        LEFT JOIN pg_class AS cls ON (cls.oid = typ.typrelid)
        LEFT JOIN pg_proc AS proc ON proc.oid = typ.typreceive
        LEFT JOIN pg_range ON (pg_range.rngtypid = typ.oid)
    ) AS typ
    LEFT JOIN pg_type AS elemtyp ON elemtyp.oid = elemtypoid
    LEFT JOIN pg_class AS elemcls ON (elemcls.oid = elemtyp.typrelid)
    LEFT JOIN pg_proc AS elemproc ON elemproc.oid = elemtyp.typreceive
) AS t
JOIN pg_namespace AS ns ON (ns.oid = typnamespace)
WHERE
    typtype IN ('b', 'r', 'm', 'e', 'd') OR
    (typtype = 'c' AND relkind='c') OR
    (typtype = 'p' AND typname IN ('record', 'void', 'unknown')) OR
    (typtype = 'a' AND (
        elemtyptype IN ('b', 'r', 'm', 'e', 'd') OR
        (elemtyptype = 'p' AND elemtypname IN ('record', 'void')) OR
        (elemtyptype = 'c' AND elemrelkind='c')
    ))
ORDER BY CASE
       WHEN typtype IN ('b', 'e', 'p') THEN 0
       WHEN typtype = 'r' THEN 1
       WHEN typtype = 'm' THEN 2
       WHEN typtype = 'c' THEN 3
       WHEN typtype = 'd' AND elemtyptype <> 'a' THEN 4
       WHEN typtype = 'a' THEN 5
       WHEN typtype = 'd' AND elemtyptype = 'a' THEN 6
END""",
    "composite-fields": """
SELECT typ.oid, att.attname, att.atttypid
FROM pg_type AS typ
JOIN pg_namespace AS ns ON (ns.oid = typ.typnamespace)
JOIN pg_class AS cls ON (cls.oid = typ.typrelid)
JOIN pg_attribute AS att ON (att.attrelid = typ.typrelid)
WHERE
  (typ.typtype = 'c' AND cls.relkind='c') AND
  attnum > 0 AND
  NOT attisdropped
ORDER BY typ.oid, att.attnum""",
    "enum-labels": """
SELECT pg_type.oid, enumlabel
FROM pg_enum
JOIN pg_type ON pg_type.oid=enumtypid
ORDER BY oid, enumsortorder""",
}

# Queries whose answer is legitimately empty against the demo (no indexes, enums ...).
MAY_BE_EMPTY = {"dbeaver:indexes", "dbeaver:constraints", "npgsql:composite-fields",
                "npgsql:enum-labels"}

CASES = [(f"{tool}:{name}", sql) for tool, queries in
         (("dbeaver", DBEAVER), ("metabase", METABASE), ("grafana", GRAFANA),
          ("npgsql", NPGSQL)) for name, sql in queries.items()]


@pytest.fixture(scope="module")
def conn(gateway):
    with psycopg.connect(gateway.dsn, autocommit=True) as connection:
        yield connection


@pytest.mark.parametrize(("case", "sql"), CASES, ids=[c for c, _ in CASES])
def test_replayed_catalog_query(conn, case, sql):
    rows = conn.execute(sql).fetchall()
    if case not in MAY_BE_EMPTY:
        assert rows, f"{case} returned no rows"


def test_replayed_answers_are_right(conn):
    found = dict(conn.execute(GRAFANA["columns"]).fetchall())
    assert found == {"n_nationkey": "bigint", "n_name": "text", "n_regionkey": "bigint",
                     "n_comment": "text"}
    assert conn.execute(GRAFANA["version"]).fetchone() == (1500,)
    fields = conn.execute(METABASE["describe-fields"]).fetchall()
    assert [f[0] for f in fields] == ["n_nationkey", "n_name", "n_regionkey", "n_comment"]
    tables = conn.execute(METABASE["tables"]).fetchall()
    assert ("demo", "nation", "TABLE", None, 25) in tables
    # The demo is a DuckDB file: its relations have no size here (NULL), not a made-up one.
    sizes = conn.execute(DBEAVER["table-statistics"]).fetchall()
    assert sizes and all(r[1:] == (None, None) for r in sizes)
    types = {r[2]: r for r in conn.execute(NPGSQL["load-types"]).fetchall()}
    assert types["_int4"][3] == "a" and types["_int4"][5] == 23  # array of int4
