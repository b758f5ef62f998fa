"""Where a PostgreSQL fragment's parameter markers are (connectors.postgres.bound_text)."""

from connectors.postgres.bound_text import markers


def test_markers_outside_literals_identifiers_and_comments() -> None:
    sql = ("SELECT 'x$1' || s, $1, $$a $2$$, E'\\'$3', \"c$4\" FROM t WHERE a = $12::int -- $5\n"
           "/* $6 */ AND b = ANY(CAST($2 AS INT[]))")
    found = [(sql[start:end], number) for start, end, number in markers(sql)]
    assert found == [("$1", 1), ("$12", 12), ("$2", 2)]


def test_no_markers() -> None:
    assert markers("SELECT '$1', \"$2\"") == []
