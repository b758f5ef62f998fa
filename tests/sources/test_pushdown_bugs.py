"""Bugs the pushdown fuzz (test_pushdown_fuzz.py) found, one small failing test each.

They fail until the product is fixed; the fuzz itself steers around them (see the
comments there) so that it keeps looking for escapes meanwhile.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given

from tests.sources.test_pushdown_fuzz import (
    BATCH,
    LITERALS,
    Federation,
    Shipped,
    alias_allowed,
    client,
    extended,
    fuzz_federation,
    generated_batch,
    literal_batch,
    nul_literals,
    quoted,
    refill,
    simple,
    texts,
)
from tests.support import rawpg

# The fixtures of the fuzz module, so these tests run alone too.
__all__ = ["client", "fuzz_federation"]


def test_literals_reach_a_source_with_standard_conforming_strings_off(
        fuzz_federation: Federation, client: rawpg.RawPG) -> None:
    """The literal fuzz on the PostgreSQL database whose default is
    standard_conforming_strings = off: the gateway's connections inherit it, and the SQL
    it writes ('a\\b' with a raw backslash) means something else there."""

    @LITERALS
    @given(generated_batch(BATCH, texts))
    def batch(generated: tuple[list[str], random.Random]) -> None:
        literal_batch(fuzz_federation, client, "postgres_scs_off", *generated)

    batch()


def test_e_string_with_a_raw_vertical_tab(fuzz_federation: Federation,
                                          client: rawpg.RawPG) -> None:
    """E'a<VT>b' is the three characters a, VT, b; the gateway ships e'a\\vb', which
    PostgreSQL reads as 'avb' (\\v is no escape in PostgreSQL)."""
    source = fuzz_federation.sources["postgres"]
    value = "a\x0bb"
    refill(source, [value])
    answer = simple(client, f"SELECT id FROM pg.vals WHERE s = E'{value}'")
    assert answer.error is None and answer.rows == [["1"]], answer


def test_like_with_a_bind_parameter_on_mysql(fuzz_federation: Federation,
                                             client: rawpg.RawPG) -> None:
    """s LIKE $1 on a MySQL source finds nothing, where s LIKE '<same pattern>' finds the row."""
    refill(fuzz_federation.sources["mysql"], ["abc"])
    assert simple(client, "SELECT id FROM my.vals WHERE s LIKE 'abc'").rows == [["1"]]
    answer = extended(client, "SELECT id FROM my.vals WHERE s LIKE $1", ["abc"])
    assert answer.error is None and answer.rows == [["1"]], answer


@pytest.mark.parametrize("key", ["mysql", "sqlite"])
@pytest.mark.parametrize("how", ["bind", "U&''"])
def test_nul_in_a_parameter_or_unicode_escape_is_refused(
        fuzz_federation: Federation, client: rawpg.RawPG, key: str, how: str) -> None:
    """A text parameter holding NUL, or U&'a\\0000b', is accepted (and compared) on MySQL
    and SQLite sources; PostgreSQL refuses both (22021 invalid byte sequence for encoding
    "UTF8": 0x00, and 22P?? invalid Unicode escape value)."""
    table = f"{fuzz_federation.sources[key].name}.vals"
    answer = dict(nul_literals(client, table))[how]
    assert answer.error is not None, answer
    assert answer.error["C"] != "XX000", answer.error
    assert simple(client, "SELECT 1").rows == [["1"]]


def test_alias_beyond_the_bmp_on_mysql(fuzz_federation: Federation,
                                       client: rawpg.RawPG) -> None:
    """An alias with a character beyond the Basic Multilingual Plane is shipped to MySQL,
    which refuses it (names are utf8mb3 there): XX000 instead of the answer."""
    source = fuzz_federation.sources["mysql"]
    refill(source, ["x"])
    alias = "\U0001f600"
    assert alias_allowed(alias)
    shipped = Shipped(source, "vals")
    answer = simple(client, f"SELECT id AS {quoted(alias)} FROM my.vals WHERE id = 1")
    assert answer.error is None, answer.error
    assert answer.columns == [alias] and answer.rows == [["1"]]
    shipped.check("alias")


@pytest.mark.parametrize("protocol", ["simple", "extended"])
@pytest.mark.parametrize("rest", ["; DELETE FROM vals; --", " OR true --"])
def test_a_quote_escaped_with_a_backslash_on_a_source_with_standard_conforming_strings_off(
        fuzz_federation: Federation, client: rawpg.RawPG, protocol: str, rest: str) -> None:
    """The client's literal '\\''<rest>' is ONE string (standard strings: the backslash is
    a character, '' a quote) that no row holds. Shipped as written to a PostgreSQL source
    whose standard_conforming_strings is off, \\' is a quote, the next quote ends the
    string, and <rest> is SQL there: a second statement (not run only because the gateway
    prepares the statement: "cannot insert multiple commands into a prepared statement"),
    or `OR true` and a comment that eats the end of the shipped statement (syntax error).
    Expected: no row, no error, the table unchanged."""
    source = fuzz_federation.sources["postgres_scs_off"]
    refill(source, ["a", "b"])
    sql = f"SELECT id FROM pgoff.vals WHERE s = '\\''{rest}'"
    shipped = Shipped(source, "vals")
    answer = simple(client, sql) if protocol == "simple" else extended(client, sql, [])
    # Before the count below, which the source's log would show too.
    shipped.check("backslash quote")
    remaining = source.run(["SELECT count(*) FROM vals"])[0][0]
    assert (answer.error, answer.rows, remaining) == (None, [], 2), (answer, remaining)
