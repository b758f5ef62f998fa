"""The express lane's Query split (`quick_split_bytes`), Bind (`quick_bind`) and the key
of an extended-protocol run (`run_key_of`): one source (gateway/relay/express/statement_bytes.py),
compiled by Cython and run as it is; the two builds give the same answer for any bytes,
the split agrees with the split of the text (`quick_split`), and which build the gateway
uses is chosen as documented (FEDGATE_EXPRESS=python runs the source interpreted).
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.relay.express.text_split import EXPRESS_BUILD_ENV, quick_split
from tests.support.builds import compiled, interpreted

COMPILED = compiled("gateway.relay.express.statement_bytes")
INTERPRETED = interpreted("gateway.relay.express.statement_bytes")
split_c, split_py = COMPILED.quick_split_bytes, INTERPRETED.quick_split_bytes
bind_c, bind_py = COMPILED.quick_bind, INTERPRETED.quick_bind
run_key_c, run_key_py = COMPILED.run_key_of, INTERPRETED.run_key_of

KNOWN = [
    b"SELECT abalance FROM pgbench_accounts WHERE aid = 54321;",
    b"UPDATE pgbench_accounts SET abalance = abalance + -4163 WHERE aid = 54321;",
    b"  SELECT x FROM t WHERE a >= 1.5e3 AND b < 99999999999 ; ",
    b"SELECT c1 FROM t2 WHERE v = 2.",
    b"SELECT 1e FROM t WHERE x = 3e+ AND y = .5 AND z = 1.2.3 AND w = 7E-2",
    b"\x1fSELECT x FROM t WHERE id = 1\x1c ;;\x1d",
    b"SELECT x FROM t WHERE id = 1 ; ;",  # a semicolon left inside
    b"SELECT a1, $1, _2, x.3 FROM t WHERE id = 4",
    b"SELECT 'a' FROM t WHERE id = 1",
    b'SELECT abalance FROM "pg"."pgbench_accounts" WHERE aid = 5',
    b'SELECT "c1", "2", "a b 3", "x""4" FROM "t5" WHERE "id"=6 AND"v"7',
    b'SELECT x FROM "t WHERE id = 1',  # left open
    b'SELECT x FROM "a;b" WHERE id = 1',
    b"SELECT x FROM t -- 1",
    b"SELECT x FROM t /* 1 */",
    b"SELECT x - -1 / 2 FROM t",
    b"SELECT x FROM t WHERE id = \xd9\xa1",
    b"SELECT x FROM t",
    b"42",
    b"",
    b";",
]


@pytest.mark.parametrize("data", KNOWN)
def test_known_texts(data: bytes) -> None:
    assert split_c(data) == split_py(data)
    text = quick_split(data.decode()) if data.isascii() else None
    found = split_py(data)
    assert found == (None if text is None else (text[0].encode(), text[1].encode(),
                                                [n.encode() for n in text[2]]))


@pytest.mark.parametrize("split", [split_c, split_py], ids=["compiled", "interpreted"])
def test_the_split_takes_bytes_only(split) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError):
        split("SELECT 1")
    with pytest.raises(TypeError):
        split(bytearray(b"SELECT 1"))


_ALPHABET = st.sampled_from(list(b"0123456789.eE+-;$?'\"\\/* \t\x1c\nab_x=(),") + [0xC3, 0x7F])


@settings(max_examples=2000, deadline=None, database=None)
@given(st.lists(_ALPHABET, max_size=40).map(bytes))
def test_the_builds_agree(data: bytes) -> None:
    """Bytes rich in digits, dots, exponents, white space and the characters that end the
    split's reading."""
    assert split_c(data) == split_py(data)


def split_in_fresh_process(env: dict[str, str]) -> str:
    code = ("from gateway.relay.express.text_split import SPLIT_BUILD\n"
            "from gateway.relay.express.statement_bytes import quick_split_bytes\n"
            "print(SPLIT_BUILD, type(quick_split_bytes).__name__)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=False, timeout=60)
    return res.stdout.strip() if res.returncode == 0 else res.stderr.strip().splitlines()[-1]


def test_choice_of_split() -> None:
    base = {k: v for k, v in os.environ.items() if k != EXPRESS_BUILD_ENV}
    assert split_in_fresh_process(base) == "compiled cython_function_or_method"
    assert split_in_fresh_process({**base, EXPRESS_BUILD_ENV: "C"}) == (
        "compiled cython_function_or_method")
    assert split_in_fresh_process({**base, EXPRESS_BUILD_ENV: "python"}) == (
        f"interpreted ({EXPRESS_BUILD_ENV}=python) function")
    assert split_in_fresh_process({**base, EXPRESS_BUILD_ENV: "fast"}) == (
        f"ValueError: {EXPRESS_BUILD_ENV}='fast': expected 'c' or 'python'")


@given(st.binary(max_size=20), st.lists(st.binary(max_size=12), max_size=6),
       st.binary(max_size=20))
def test_the_builds_bind_alike(head: bytes, numbers: list[bytes], tail: bytes) -> None:
    """The Bind of the split's numbers (`quick_bind`), in both builds."""
    assert bind_c(head, numbers, tail) == bind_py(head, numbers, tail)


@pytest.mark.parametrize("bind", [bind_c, bind_py], ids=["compiled", "interpreted"])
def test_the_bind_refuses_other_types(bind) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError):
        bind(b"", ["1"], b"")
    with pytest.raises(TypeError):
        bind(b"", (b"1",), b"")


def bind_message(names: bytes, formats: list[int], values: list[bytes | None],
                 results: list[int]) -> bytes:
    body = names + struct.pack("!h", len(formats)) + b"".join(struct.pack("!h", f) for f in formats)
    body += struct.pack("!h", len(values))
    for value in values:
        body += struct.pack("!i", -1) if value is None else struct.pack("!i", len(value)) + value
    body += struct.pack("!h", len(results)) + b"".join(struct.pack("!h", f) for f in results)
    return b"B" + struct.pack("!I", len(body) + 4) + body


RUN_TAIL = b"E\0\0\0\x09\0\0\0\0\0S\0\0\0\x04"


@given(st.binary(max_size=8), st.lists(st.sampled_from([0, 1]), max_size=3),
       st.lists(st.none() | st.binary(max_size=6), max_size=4),
       st.lists(st.sampled_from([0, 1]), max_size=3), st.binary(max_size=8))
def test_the_builds_run_keys_alike(head: bytes, formats: list[int],
                                     values: list[bytes | None], results: list[int],
                                     before: bytes) -> None:
    """The key of a run (`run_key_of`) of well-formed Binds, in both builds; two runs
    that differ in their values only have one key."""
    bind = bind_message(b"\0" + head.replace(b"\0", b"") + b"\0", formats, values, results)
    data = before + bind + RUN_TAIL
    start, end = len(before), len(before) + len(bind)
    found = run_key_c(data, start, end, len(data))
    assert found == run_key_py(data, start, end, len(data))
    assert found is not None
    other = before + bind_message(b"\0" + head.replace(b"\0", b"") + b"\0", formats,
                                  [b"x" * 9 for _ in values], results) + RUN_TAIL
    other_end = len(other) - len(RUN_TAIL)
    assert run_key_c(other, start, other_end, len(other))[0] == found[0]


@settings(max_examples=1000, deadline=None, database=None)
@given(st.binary(max_size=48), st.integers(0, 48), st.integers(0, 48))
def test_the_builds_run_keys_alike_on_garbage(data: bytes, start: int, length: int) -> None:
    data = data[:start] + b"B" + data[start:]
    start = min(start, len(data) - 1)
    end = min(len(data), start + length)  # a length below 4 too
    assert run_key_c(data, start, end, len(data)) == run_key_py(data, start, end, len(data))
