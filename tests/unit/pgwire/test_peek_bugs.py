"""A bug the decoder fuzz's peek check found (test_decoder_fuzz.py): peek.bind accepts Bind
messages the decoder refuses, so the express lane relays them to the source instead of
leaving them to the session's decoder. Fails until peek.bind checks what the decoder does.
"""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.pgwire.test_decoder_fuzz import (
    FUZZ,
    check_peek_agrees,
    cstr,
    int16,
    names,
    small_blobs,
    typed,
)

# Size words of a Bind parameter: NULL, empty, right, and the wrong ones.
ODD_VALUE_SIZES = [-1, -2, -5, -(2**31), 0, 1, 3, 2**31 - 1]


@st.composite
def odd_bind_frames(draw: st.DrawFn) -> bytes:
    """A Bind built field by field with counts and size words that may lie: format
    counts that match neither zero, one nor the parameter count, negative or short
    parameter sizes, result-format counts off by a few."""
    params = draw(st.lists(small_blobs, max_size=4))
    format_count = draw(st.sampled_from([0, 1, len(params), len(params) + 1, 2, 3]))
    body = cstr(draw(names)) + cstr(draw(names))
    body += struct.pack("!H", format_count) + b"".join(
        struct.pack("!h", draw(int16)) for _ in range(format_count))
    body += struct.pack("!H", len(params))
    for value in params:
        size = draw(st.sampled_from([len(value), len(value), *ODD_VALUE_SIZES]))
        body += struct.pack("!i", size) + value
    results = draw(st.lists(int16, max_size=3))
    body += struct.pack("!H", len(results)) + b"".join(struct.pack("!h", r) for r in results)
    return typed(b"B", body)


@FUZZ
@given(odd_bind_frames())
def test_peek_bind_refuses_what_the_decoder_refuses(frame: bytes) -> None:
    check_peek_agrees(frame, frame, 0)


def test_bind_with_a_negative_parameter_size() -> None:
    """Size word -2: the decoder says "insufficient data left in message" (as PostgreSQL);
    peek.bind reads it as an empty value."""
    body = cstr("") + cstr("") + struct.pack("!HHi", 0, 1, -2) + struct.pack("!H", 0)
    frame = typed(b"B", body)
    check_peek_agrees(frame, frame, 0)


def test_bind_with_more_formats_than_parameters() -> None:
    """Two format codes for one parameter: the decoder refuses it ("bind message has 2
    parameter formats but 1 parameters"); peek.bind does not look."""
    body = (cstr("") + cstr("") + struct.pack("!Hhh", 2, 0, 0) + struct.pack("!Hi", 1, 1)
            + b"x" + struct.pack("!H", 0))
    frame = typed(b"B", body)
    check_peek_agrees(frame, frame, 0)
