"""E'...' strings read and written as PostgreSQL's lexer has them (planner.pg_escapes)."""

from __future__ import annotations

import sqlglot

import planner  # noqa: F401  sets the dialect's escape tables


def test_a_backslash_before_v_stands_for_v() -> None:
    literal = sqlglot.parse_one(r"SELECT E'a\vb\tc\x0bd\\e'", read="postgres").expressions[0]
    assert literal.this == "avb\tc\x0bd\\e"


def test_a_vertical_tab_is_written_back_as_a_hex_escape() -> None:
    # sqlglot keeps an E'' string with numeric escapes as a byte string, written as E''.
    tree = sqlglot.parse_one(r"SELECT E'\x0b'", read="postgres")
    assert tree.sql("postgres") == "SELECT e'\\x0b'"
