from __future__ import annotations

import sqlglot

from planner.regclass_arguments import regclass_arguments


def test_a_name_literal_becomes_a_regclass() -> None:
    tree = sqlglot.parse_one("SELECT pg_relation_size('t', 'fsm'), pg_catalog.pg_total_relation_size('s.u'), "
                             "pg_get_viewdef('v', true), pg_table_size(c.oid), lower('t') FROM c",
                             read="postgres")
    regclass_arguments(tree)
    assert tree.sql("postgres") == (
        "SELECT PG_RELATION_SIZE(REGCLASS_IN('t'), 'fsm'), "
        "pg_catalog.pg_total_relation_size(REGCLASS_IN('s.u')), "
        "PG_GET_VIEWDEF(REGCLASS_IN('v'), TRUE), PG_TABLE_SIZE(c.oid), LOWER('t') FROM c")
