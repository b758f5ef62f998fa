"""The relay's row walk (`data_rows_end`): the C one in pgwire/protocol/rowwalk.c and the
pure Python one it falls back to give the same answer for any bytes, and which one the
gateway uses is chosen as documented (FEDGATE_ROW_WALK=python picks the Python walk).

The C walk must be built here: `pip install -e .` (as `make` runs it) compiles it, and a
test run that silently measured the Python walk twice would prove nothing about C.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgwire.protocol.client import ROW_WALK_ENV, data_rows_end_py

try:
    from pgwire.protocol.rowwalk import data_rows_end as walk_c
except ImportError as exc:  # a failure, not a skip: see the module's docstring
    raise AssertionError("the C row walk is not built: run `pip install --no-deps -e .` "
                         "with a C compiler and Python's headers installed") from exc


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
@pytest.mark.parametrize("walk", [walk_c, data_rows_end_py], ids=["C", "python"])
def test_known_runs(walk, data: bytes, pos: int, end: int) -> None:
    for form in (data, bytearray(data), memoryview(data)):
        assert walk(form, pos) == end


def test_c_walk_refuses_a_negative_position() -> None:
    with pytest.raises(ValueError):
        walk_c(row(b"ab"), -1)


@settings(max_examples=500, deadline=None, database=None)
@given(st.lists(st.binary(max_size=40), max_size=30), st.binary(max_size=12),
       st.integers(0, 2000), st.integers(0, 50))
def test_c_and_python_agree_on_cut_streams(payloads: list[bytes], tail: bytes, cut: int,
                                           pos: int) -> None:
    """Rows then anything, cut at any point (a chunk's end), walked from any position."""
    data = (b"".join(row(p) for p in payloads) + tail)[:cut]
    assert walk_c(data, pos) == data_rows_end_py(data, pos)


@settings(max_examples=500, deadline=None, database=None)
@given(st.binary(max_size=64).map(lambda b: bytes(x if x % 3 else 0x44 for x in b)),
       st.integers(0, 70))
def test_c_and_python_agree_on_garbage(data: bytes, pos: int) -> None:
    """Bytes rich in 'D' tags and small lengths, including lengths below 4."""
    assert walk_c(data, pos) == data_rows_end_py(data, pos)


def row_walk_in_fresh_process(env: dict[str, str]) -> str:
    code = "from pgwire.protocol.client import ROW_WALK; print(ROW_WALK)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=False, timeout=60)
    return res.stdout.strip() if res.returncode == 0 else res.stderr.strip().splitlines()[-1]


def test_choice_of_walk() -> None:
    base = {k: v for k, v in os.environ.items() if k != ROW_WALK_ENV}
    assert row_walk_in_fresh_process(base) == "C"
    assert row_walk_in_fresh_process({**base, ROW_WALK_ENV: "C"}) == "C"
    assert row_walk_in_fresh_process({**base, ROW_WALK_ENV: "python"}) == (
        f"pure Python ({ROW_WALK_ENV}=python)")
    assert row_walk_in_fresh_process({**base, ROW_WALK_ENV: "fast"}) == (
        f"ValueError: {ROW_WALK_ENV}='fast': expected 'c' or 'python'")


def test_without_the_c_module() -> None:
    """As after an install without a compiler: the Python walk, named for the start-up
    warning; or, with FEDGATE_ROW_WALK=c, an ImportError (ModuleNotFoundError)."""
    code = ("import sys; sys.modules['pgwire.protocol.rowwalk'] = None  # not importable\n"
            "from pgwire.protocol.client import ROW_WALK, data_rows_end, data_rows_end_py\n"
            "assert data_rows_end is data_rows_end_py; print(ROW_WALK)")
    base = {k: v for k, v in os.environ.items() if k != ROW_WALK_ENV}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=base, check=True, timeout=60)
    assert res.stdout.startswith("pure Python: the C row walk (pgwire/protocol/rowwalk.c) "
                                 "is not built"), res.stdout
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**base, ROW_WALK_ENV: "c"}, check=False, timeout=60)
    assert res.returncode != 0 and "ModuleNotFoundError" in res.stderr, res.stderr
