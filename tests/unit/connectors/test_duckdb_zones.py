"""Hour-offset time zones written as tzdata's Etc zones (connectors.dialects.duckdb.zones),
POSIX's sign kept: PostgreSQL's '+05' is five hours west, as Etc/GMT+5 is."""

from __future__ import annotations

import pytest
import sqlglot

from connectors.dialects.duckdb.zones import needs_rewrite, postgres_zone


@pytest.mark.parametrize("zone, etc", [("+05", "Etc/GMT+5"), ("-3", "Etc/GMT-3"), ("5", "Etc/GMT+5"),
                                       ("+0", "Etc/GMT+0"), ("-14", "Etc/GMT-14"), (" +12 ", "Etc/GMT+12")])
def test_hour_offsets(zone: str, etc: str) -> None:
    for sql in (f"SELECT ts AT TIME ZONE '{zone}' FROM t", f"SELECT timezone('{zone}', ts) FROM t"):
        tree = sqlglot.parse_one(sql, read="postgres")
        assert needs_rewrite(tree)
        assert f"'{etc}'" in tree.transform(postgres_zone).sql("duckdb")


@pytest.mark.parametrize("zone", ["+05:30", "+13", "-15", "UTC", "Asia/Kolkata", "+5h"])
def test_other_zones_are_left_as_written(zone: str) -> None:
    assert not needs_rewrite(sqlglot.parse_one(f"SELECT ts AT TIME ZONE '{zone}' FROM t", read="postgres"))
