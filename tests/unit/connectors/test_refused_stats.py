"""A source's refused statistics are said once per place, not at every catalog refresh."""

import logging
import sqlite3

from connectors.refused_stats import RefusedStats
from connectors.sqlite.column_stats import distinct_counts


def test_said_once_per_place(caplog):
    refused = RefusedStats(logging.getLogger("fedgate.test"), "column statistics")
    with caplog.at_level(logging.WARNING, logger="fedgate.test"):
        for _ in range(3):
            refused.say("schema a", PermissionError("denied"))
        refused.say("schema b", PermissionError("denied"))
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "cannot read the column statistics of schema a (denied); filters on its tables are "
        "estimated to keep a third of the rows",
        "cannot read the column statistics of schema b (denied); filters on its tables are "
        "estimated to keep a third of the rows"]


def test_a_refused_sqlite_stat1_is_said_once_and_serves_no_estimates(caplog):
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (a int)")
    con.execute("CREATE INDEX t_a ON t (a)")
    con.execute("INSERT INTO t VALUES (1), (2)")
    con.execute("ANALYZE")
    # A connection whose authorizer refuses the statistics table (as an embedding
    # application may): reading it raises sqlite3.DatabaseError.
    con.set_authorizer(lambda action, table, *_: sqlite3.SQLITE_DENY
                       if action == sqlite3.SQLITE_READ and table == "sqlite_stat1"
                       else sqlite3.SQLITE_OK)
    with caplog.at_level(logging.WARNING, logger="fedgate.sqlite"):
        assert distinct_counts(con, "lite") == {}
        assert distinct_counts(con, "lite") == {}
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and said[0].startswith("cannot read the sqlite_stat1 of source lite (")
