# cython: language_level=3, boundscheck=False, wraparound=False, annotation_typing=False
"""The walks over a source's answer: the relay's row walk and the express lane's pass.

A relayed result is forwarded as slices of the bytes received: the gateway only needs to
know where a run of whole DataRows ends (`data_rows_end`), and, in the express lane, which
of an answer's messages the client gets (`answer_pass`). Only the message headers are
read (the tag byte and the big-endian length), never the rows.

One source for both builds: Cython compiles this module when fedgate is installed (the C
types of its names are in answer_walks.pxd beside it: `data` is then a pointer to the
bytes, the lengths are C integers), and the same file runs as it is when the extension is
not built or FEDGATE_ROW_WALK=python (`pgwire.compiled`). So the code is written for
both: `data` is bytes or a bytearray, never a memoryview (a pointer does not know its
length, so `n` is taken first and no index reaches past it), and every slice is made
`bytes` as the compiled slice of a pointer is (`_piece`).
"""

from __future__ import annotations

DATA_ROW = 0x44  # 'D'
# answer_pass's flags.
PASS_DISCARD, PASS_QUIET, PASS_SUSPENDED = 1, 2, 4


def _readable(data: bytes | bytearray, pos: int) -> None:
    """What both builds refuse alike: another type than bytes or bytearray, a negative
    position."""
    if type(data) is not bytes and type(data) is not bytearray:
        raise TypeError(f"expected bytes or a bytearray, not {type(data).__name__}")
    if pos < 0:
        raise ValueError("pos must not be negative")


def _piece(view: bytes | bytearray, start: int, end: int) -> bytes:
    """view[start:end] as bytes: compiled, the slice of a pointer is bytes already, and
    only interpreted is a bytearray's slice copied once more."""
    piece = view[start:end]
    return piece if type(piece) is bytes else bytes(piece)


def data_rows_end(data: bytes | bytearray, pos: int) -> int:
    """The end of the run of complete DataRows (tag 'D') that starts at `pos` in `data`.

    A row counts when its whole message (the tag byte and the length, which counts its
    own 4 bytes) lies inside the data; the run stops at the first that does not. This
    loop is the relay's whole per-row cost."""
    _readable(data, pos)
    n = len(data)
    view = data  # compiled: the bytes themselves, as `const unsigned char *`
    while n - pos >= 5 and view[pos] == DATA_ROW:
        # Built up in a 64-bit integer, so that no length goes negative on any platform.
        length = view[pos + 1]
        length = length << 8 | view[pos + 2]
        length = length << 8 | view[pos + 3]
        length = length << 8 | view[pos + 4]
        if length + 1 > n - pos:
            break
        pos += length + 1
    return pos


def answer_pass(data: bytes | bytearray, pos: int, flags: int,
                described: dict[bytes, bytes]) -> tuple[bytes, int, bool]:
    """Walk the complete messages of a source's answer from `pos`: (passed, pos, stopped).

    `passed` is what the client gets of them, in order: the messages passed on as they
    came (DataRow, CommandComplete, notices, EmptyQueryResponse, notifications) and each
    RowDescription as `described` maps its body (the link's client copy). Skipped:
    Parse/Bind/CloseComplete, NoData, ParameterDescription, PortalSuspended (unless
    PASS_SUSPENDED) and ParameterStatus; with PASS_QUIET (the answers to commands sent
    ahead of the statement) or PASS_DISCARD everything but DataRows; with PASS_DISCARD
    DataRows too. The walk ends at `pos`: `stopped` when the message there is the
    caller's to read (ReadyForQuery, an error, a length below 4, and unless quiet a
    CopyInResponse or a RowDescription `described` does not know), else there is no
    complete message at `pos`."""
    _readable(data, pos)
    if type(described) is not dict:
        raise TypeError("answer_pass: described must be a dict")
    discard = (flags & PASS_DISCARD) != 0
    quiet = discard or (flags & PASS_QUIET) != 0
    suspended = (flags & PASS_SUSPENDED) != 0
    n = len(data)
    view = data
    pieces = []
    run_at = run_end = -1
    stopped = False
    while n - pos >= 5:
        length = view[pos + 1]
        length = length << 8 | view[pos + 2]
        length = length << 8 | view[pos + 3]
        length = length << 8 | view[pos + 4]
        if length + 1 > n - pos:
            break  # cut by the chunk's end
        tag = view[pos]
        if length < 4 or tag == 0x5A or tag == 0x45 or (tag == 0x47 and not quiet):  # Z E G
            stopped = True
            break
        if tag == 0x54 and not quiet:  # T
            found = described.get(_piece(view, pos + 5, pos + 1 + length))
            if found is None:
                stopped = True  # not described yet: the caller's
                break
            if type(found) is not bytes:
                raise TypeError("answer_pass: a description must be bytes")
            if run_at >= 0:
                pieces.append(_piece(view, run_at, run_end))
                run_at = run_end = -1
            pieces.append(found)
            pos += length + 1
            continue
        if tag == DATA_ROW or (tag == 0x73 and suspended):  # s: PortalSuspended
            passed = not discard
        else:  # Parse/Bind/CloseComplete, NoData, ParameterDescription, ParameterStatus
            passed = not (quiet or tag == 0x31 or tag == 0x32 or tag == 0x33 or tag == 0x6E
                          or tag == 0x74 or tag == 0x73 or tag == 0x53)
        if passed:
            if run_at >= 0 and run_end != pos:
                pieces.append(_piece(view, run_at, run_end))
                run_at = -1
            if run_at < 0:
                run_at = pos
            run_end = pos + length + 1
        pos += length + 1
    if run_at >= 0:
        pieces.append(_piece(view, run_at, run_end))
    return b"".join(pieces), pos, stopped
