"""What `fedgate sources` shows of a DSN: everything but the password."""

from __future__ import annotations

import pytest

from gateway.server.source_probe import mask_password, table


@pytest.mark.parametrize("dsn, shown", [
    ("postgresql://app:s3cr:et@db:5432/shop", "postgresql://app:***@db:5432/shop"),
    ("mysql://root:p%40ss@maria:3306/shop", "mysql://root:***@maria:3306/shop"),
    ("postgresql://app@db/shop", "postgresql://app@db/shop"),
    ("postgresql://db/shop?user=app&password=hunter2&sslmode=require",
     "postgresql://db/shop?user=app&password=***&sslmode=require"),
    ("host=db user=app password='two words' dbname=shop",
     "host=db user=app password=*** dbname=shop"),
    ("host=db PASSWORD=x dbname=shop", "host=db PASSWORD=*** dbname=shop"),
])
def test_mask_password(dsn, shown):
    assert mask_password(dsn) == shown


def test_table_aligns_columns():
    assert table(("A", "LONG"), [("xyz", "1"), ("b", "")]) == [
        "A    LONG",
        "xyz  1",
        "b",
    ]
