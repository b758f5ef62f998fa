"""The relay's row walk (`data_rows_end`) and the express lane's answer walk
(`answer_pass`): one source (pgwire/protocol/answer_walks.py), compiled by Cython and run
as it is; the two builds give the same answer for any bytes, and which one the gateway
uses is chosen as documented (FEDGATE_ROW_WALK=python runs the source interpreted).
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgwire.protocol.client import PASS_DISCARD, PASS_QUIET, ROW_WALK_ENV
from tests.support.builds import compiled, interpreted

COMPILED = compiled("pgwire.protocol.answer_walks")
INTERPRETED = interpreted("pgwire.protocol.answer_walks")
walk_c, walk_py = COMPILED.data_rows_end, INTERPRETED.data_rows_end
answer_c, answer_py = COMPILED.answer_pass, INTERPRETED.answer_pass


def row(payload: bytes) -> bytes:
    return b"D" + struct.pack("!I", 4 + len(payload)) + payload


TAIL = b"C\0\0\0\x0dSELECT 3\0" + b"Z\0\0\0\x05I"


@pytest.mark.parametrize("data, pos, end", [
    (b"", 0, 0),
    (row(b"ab") * 3 + TAIL, 0, 21),               # stops at the CommandComplete
    (row(b"ab") * 3, 0, 21),                      # ends exactly with the last row
    (row(b"ab") * 3, 7, 21),                      # from a later row
    (row(b"ab") * 2 + row(b"abc")[:-1], 0, 14),   # the last row cut short
    (row(b"ab") * 2 + b"D\0\0", 0, 14),           # its header cut short
    (row(b"ab") + b"D", 0, 7),                    # only its tag
    (TAIL, 0, 0),                                 # no row at pos
    (row(b"ab"), 40, 40),                         # pos past the end
    (row(b""), 0, 5),                             # a row of no columns
])
@pytest.mark.parametrize("walk", [walk_c, walk_py], ids=["compiled", "interpreted"])
def test_known_runs(walk, data: bytes, pos: int, end: int) -> None:
    for form in (data, bytearray(data)):
        assert walk(form, pos) == end


@pytest.mark.parametrize("walk", [walk_c, walk_py], ids=["compiled", "interpreted"])
def test_the_walk_refuses_what_it_does_not_read(walk) -> None:
    """A negative position; a memoryview (the compiled walk reads a pointer to the bytes
    of bytes or a bytearray, so both builds take those only)."""
    with pytest.raises(ValueError):
        walk(row(b"ab"), -1)
    with pytest.raises(TypeError):
        walk(memoryview(row(b"ab")), 0)


@settings(max_examples=500, deadline=None, database=None)
@given(st.lists(st.binary(max_size=40), max_size=30), st.binary(max_size=12),
       st.integers(0, 2000), st.integers(0, 50))
def test_the_builds_agree_on_cut_streams(payloads: list[bytes], tail: bytes, cut: int,
                                           pos: int) -> None:
    """Rows then anything, cut at any point (a chunk's end), walked from any position."""
    data = (b"".join(row(p) for p in payloads) + tail)[:cut]
    assert walk_c(data, pos) == walk_py(data, pos)


@settings(max_examples=500, deadline=None, database=None)
@given(st.binary(max_size=64).map(lambda b: bytes(x if x % 3 else 0x44 for x in b)),
       st.integers(0, 70))
def test_the_builds_agree_on_garbage(data: bytes, pos: int) -> None:
    """Bytes rich in 'D' tags and small lengths, including lengths below 4."""
    assert walk_c(data, pos) == walk_py(data, pos)


def row_walk_in_fresh_process(env: dict[str, str]) -> str:
    code = ("from pgwire.protocol.client import ROW_WALK, data_rows_end\n"
            "print(ROW_WALK, type(data_rows_end).__name__)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=False, timeout=60)
    return res.stdout.strip() if res.returncode == 0 else res.stderr.strip().splitlines()[-1]


def test_choice_of_walk() -> None:
    base = {k: v for k, v in os.environ.items() if k != ROW_WALK_ENV}
    assert row_walk_in_fresh_process(base) == "compiled cython_function_or_method"
    assert row_walk_in_fresh_process({**base, ROW_WALK_ENV: "C"}) == (
        "compiled cython_function_or_method")
    assert row_walk_in_fresh_process({**base, ROW_WALK_ENV: "python"}) == (
        f"interpreted ({ROW_WALK_ENV}=python) function")
    assert row_walk_in_fresh_process({**base, ROW_WALK_ENV: "fast"}) == (
        f"ValueError: {ROW_WALK_ENV}='fast': expected 'c' or 'python'")


# --- the express lane's answer walk ---------------------------------------------------------

def message(tag: bytes, payload: bytes = b"") -> bytes:
    return tag + struct.pack("!I", 4 + len(payload)) + payload


DESCRIBED_AT_SOURCE = b"\0\1abalance\0" + bytes(18)
ROW, DONE = message(b"D", b"\0\1\0\0\0\1" + b"0"), message(b"C", b"SELECT 1\0")
PGBENCH_ANSWER = (message(b"2") + message(b"T", DESCRIBED_AT_SOURCE) + ROW + DONE
                  + message(b"Z", b"I"))


@pytest.mark.parametrize("walk", [answer_py, answer_c], ids=["interpreted", "compiled"])
def test_answer_pass_stops_where_the_lane_reads(walk) -> None:  # type: ignore[no-untyped-def]
    """A pgbench -S answer: BindComplete skipped; a RowDescription not described yet is the
    caller's, a described one is replaced; the row and CommandComplete pass; ReadyForQuery
    is the caller's."""
    data = PGBENCH_ANSWER
    t_at, z_at = 5, len(data) - 6
    after_t = t_at + 5 + len(DESCRIBED_AT_SOURCE)
    assert walk(data, 0, 0, {}) == (b"", t_at, True)
    assert walk(data, after_t, 0, {}) == (ROW + DONE, z_at, True)
    client_copy = b"T-as-the-client-sees-it"
    assert walk(data, 0, 0, {DESCRIBED_AT_SOURCE: client_copy}) == (
        client_copy + ROW + DONE, z_at, True)
    assert walk(data, len(data), 0, {}) == (b"", len(data), False)
    # Quiet (answers to commands sent ahead): only the row passes.
    assert walk(data, 0, PASS_QUIET, {}) == (ROW, z_at, True)
    # Discarded: nothing passes, the walk runs to ReadyForQuery.
    assert walk(data, 0, PASS_DISCARD, {}) == (b"", z_at, True)
    # A skipped message between two passed ones.
    gap = ROW + message(b"1") + DONE
    assert walk(gap, 0, 0, {}) == (ROW + DONE, len(gap), False)
    # Cut inside the row: nothing yet.
    assert walk(data[:after_t + 3], after_t, 0, {}) == (b"", after_t, False)
    # A length below 4 is the caller's.
    assert walk(b"D\0\0\0\2xyz", 0, 0, {}) == (b"", 0, True)


def answer_stream() -> st.SearchStrategy[bytes]:
    tags = st.sampled_from(list(b"DCTZEGN123ntsSIA"))
    bodies = st.sampled_from([b"", b"x", b"abc", b"\0\1"]) | st.binary(max_size=12)
    one = st.tuples(tags, bodies).map(lambda t: message(bytes([t[0]]), t[1]))
    return st.lists(one, max_size=12).map(b"".join)


DESCRIBED = {b"": b"<empty described>", b"x": b"<x described>", b"\0\1": b"<01>"}


@settings(max_examples=1000, deadline=None, database=None)
@given(answer_stream(), st.binary(max_size=6), st.integers(0, 400), st.integers(0, 60),
       st.integers(0, 7))
def test_answer_pass_builds_agree(data: bytes, tail: bytes, cut: int, pos: int,
                                        flags: int) -> None:
    """Answers of any messages, cut at any point, walked from any position with any flags."""
    data = (data + tail)[:cut]
    assert answer_c(data, pos, flags, DESCRIBED) == answer_py(data, pos, flags, DESCRIBED)
    assert answer_c(bytearray(data), pos, flags, {}) == answer_py(data, pos, flags, {})


@settings(max_examples=500, deadline=None, database=None)
@given(st.binary(max_size=64).map(lambda b: bytes(x if x % 3 else 0x44 for x in b)),
       st.integers(0, 70), st.integers(0, 7))
def test_answer_pass_builds_agree_on_garbage(data: bytes, pos: int, flags: int) -> None:
    assert answer_c(data, pos, flags, DESCRIBED) == answer_py(data, pos, flags, DESCRIBED)


def test_answer_pass_many_pieces() -> None:
    """Many runs, each a piece of its own."""
    data = (ROW + message(b"1")) * 100 + message(b"T", b"x") + DONE
    expected = ROW * 100 + b"<x described>" + DONE
    assert answer_c(data, 0, 0, DESCRIBED) == (expected, len(data), False)
    assert answer_py(data, 0, 0, DESCRIBED) == (expected, len(data), False)


@pytest.mark.parametrize("walk", [answer_py, answer_c], ids=["interpreted", "compiled"])
def test_answer_pass_refuses_bad_arguments(walk) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError):
        walk(PGBENCH_ANSWER, 0, 0, None)
    with pytest.raises(TypeError):
        walk(PGBENCH_ANSWER, 0, 0, {DESCRIBED_AT_SOURCE: "text"})
    with pytest.raises(TypeError):
        walk(memoryview(PGBENCH_ANSWER), 0, 0, {})
    with pytest.raises(ValueError):
        walk(PGBENCH_ANSWER, -1, 0, {})
