# cython: language_level=3, boundscheck=False, wraparound=False, annotation_typing=False
"""The express lane's walks over a client's statement bytes: the split of a simple
Query's text (`quick_split_bytes`), the Bind of its numbers (`quick_bind`) and the key of
an extended-protocol run (`run_key_of`). They run on every statement of the lane.

For a text the lane reads this way (ASCII; no quotes, backslashes, dollar signs, question
marks, comments or inner semicolons), `quick_split_bytes` returns (statement, shape, numbers): the
text stripped of white space and of its trailing semicolons, that statement with each
number replaced by `?`, and the numbers; None for any other text, or one without
numbers. A number is what `gateway.relay.express.text_split.quick_split` finds in a text:
(?<![\\w$.])(\\d+(?:\\.\\d*)?(?:[eE][+-]?\\d+)?). One pass over the bytes.

One source for both builds: Cython compiles this module when fedgate is installed (the C
types of its names are in statement_bytes.pxd beside it: the data is then a pointer to
the bytes, positions and lengths C integers), and the same file runs as it is when the
extension is not built or FEDGATE_EXPRESS=python (`pgwire.compiled`). So the code is
written for both: the length of the bytes is taken first and no index reaches past it,
and every slice is made `bytes` as the compiled slice of a pointer is (`_piece`). What
they build is written into a bytearray through a name that is, compiled, a pointer to
its bytes.
"""

from __future__ import annotations


def _piece(view: bytes | bytearray, start: int, end: int) -> bytes:
    """view[start:end] as bytes: compiled, the slice of a pointer is bytes already, and
    only interpreted is a bytearray's slice copied once more."""
    piece = view[start:end]
    return piece if type(piece) is bytes else bytes(piece)


def _space(c: int) -> bool:
    """What str.strip() strips among ASCII characters."""
    return c == 0x20 or 0x09 <= c <= 0x0D or 0x1C <= c <= 0x1F


def _digit(c: int) -> bool:
    return 0x30 <= c <= 0x39


def _joins_number(c: int) -> bool:
    """\\w, $ and . : what may not come right before a number."""
    return (0x30 <= c <= 0x39 or 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A or c == 0x5F
            or c == 0x24 or c == 0x2E)


def quick_split_bytes(data: bytes) -> tuple[bytes, bytes, list[bytes]] | None:
    """(statement, shape, numbers) of a simple Query's text (`data`, without its NUL)
    that the lane reads, else None."""
    if type(data) is not bytes:
        raise TypeError("quick_split_bytes(text) takes bytes")
    n = len(data)
    s = data  # compiled: the bytes themselves, as `const unsigned char *`
    semicolon = n  # where the first one is
    quotes = 0  # double quotes: odd, a quoted identifier is left open
    i = 0
    while i < n:
        c = s[i]
        if c >= 0x80 or c == 0x27 or c == 0x5C or c == 0x24 or c == 0x3F:
            return None  # non-ASCII ' \ $ ?
        if c == 0x22:
            quotes += 1
        if i + 1 < n and ((c == 0x2D and s[i + 1] == 0x2D) or (c == 0x2F and s[i + 1] == 0x2A)):
            return None  # -- or /*
        if c == 0x3B and semicolon == n:
            semicolon = i
        i += 1
    a = 0
    b = n
    while a < b and _space(s[a]):
        a += 1
    while b > a and _space(s[b - 1]):
        b -= 1
    while b > a and s[b - 1] == 0x3B:
        b -= 1
    while b > a and _space(s[b - 1]):
        b -= 1
    if semicolon < b or quotes & 1:  # only white space comes before `a`: this one is inside
        return None
    parts = []  # the statement's bytes between its numbers
    numbers = []
    part = i = a
    while i < b:
        if s[i] == 0x22:  # a quoted identifier, kept whole: no number inside it
            i += 1
            while s[i] != 0x22:  # it closes before `b` (an even count, none trimmed)
                i += 1
            i += 1
        elif _digit(s[i]) and (i == a or not _joins_number(s[i - 1])):
            j = i
            while j < b and _digit(s[j]):
                j += 1
            if j < b and s[j] == 0x2E:  # .
                j += 1
                while j < b and _digit(s[j]):
                    j += 1
            if j < b and (s[j] == 0x65 or s[j] == 0x45):  # e E
                k = j + 1
                if k < b and (s[k] == 0x2B or s[k] == 0x2D):  # + -
                    k += 1
                if k < b and _digit(s[k]):
                    while k < b and _digit(s[k]):
                        k += 1
                    j = k
            parts.append(_piece(s, part, i))
            numbers.append(_piece(s, i, j))
            part = i = j
        else:
            i += 1
    if not numbers:
        return None  # nothing to lift
    parts.append(_piece(s, part, b))
    sql = data if a == 0 and b == n else _piece(s, a, b)
    return sql, b"?".join(parts), numbers


def quick_bind(head: bytes, numbers: list[bytes], tail: bytes) -> bytes:
    """The Bind of the split's numbers (text format) to the source's statement, then
    `tail`: 'B', its length, `head` (the Bind's bytes between its length and its values),
    each number with its length, no result formats."""
    if type(head) is not bytes or type(numbers) is not list or type(tail) is not bytes:
        raise TypeError("quick_bind(head: bytes, numbers: list[bytes], tail: bytes)")
    body = len(head) + 2  # + the result formats' count
    for number in numbers:
        if type(number) is not bytes:
            raise TypeError("quick_bind: the numbers must be bytes")
        body += 4 + len(number)
    if body + 4 > 0x7FFFFFFF:
        raise ValueError("quick_bind: the message would be too long")
    # Written into `message` through `out` (compiled: a pointer to its bytes).
    message = bytearray(1 + 4 + body + len(tail))
    out = message
    out[0] = 0x42  # B
    o = _put_int32(out, 1, body + 4)
    o = _put(out, o, head)
    for number in numbers:
        o = _put_int32(out, o, len(number))
        o = _put(out, o, number)
    out[o] = out[o + 1] = 0  # no result formats
    _put(out, o + 2, tail)
    return _piece(out, 0, len(message))


def _put_int32(out: bytearray, at: int, value: int) -> int:
    """`value` (0 <= value < 2**31) as four big-endian bytes at `at`; where they end."""
    out[at] = (value >> 24) & 0xFF
    out[at + 1] = (value >> 16) & 0xFF
    out[at + 2] = (value >> 8) & 0xFF
    out[at + 3] = value & 0xFF
    return at + 4


def _put(out: bytearray, at: int, data: bytes) -> int:
    """`data` at `at`; where it ends."""
    n = len(data)
    d = data
    for k in range(n):
        out[at + k] = d[k]
    return at + n


def _int16(d: bytes, at: int) -> int:
    """The signed big-endian int16 at `at` (the caller saw two bytes there)."""
    value = d[at] << 8 | d[at + 1]
    return value - 0x10000 if value >= 0x8000 else value


def _int32(d: bytes, at: int) -> int:
    """The signed big-endian int32 at `at` (the caller saw four bytes there)."""
    value = d[at]
    value = value << 8 | d[at + 1]
    value = value << 8 | d[at + 2]
    value = value << 8 | d[at + 3]
    return value - 0x100000000 if value >= 0x80000000 else value


def run_key_of(data: bytes, start: int, end: int, stop: int) -> tuple[bytes, int] | None:
    """(key, where the Bind's parameters begin) of an extended-protocol run whose Bind is
    data[start:end] and which ends at `stop`; None when the Bind does not add up. The key
    is the run's bytes up to `stop` without the Bind's length and its parameter values:
    runs with equal keys differ only in their parameter values."""
    if type(data) is not bytes and type(data) is not bytearray:
        raise TypeError("run_key_of(data, ...) takes bytes or a bytearray")
    n = len(data)
    if start < 0 or end > n or stop > n or end > stop:
        raise ValueError("run_key_of: the Bind must lie inside the run")
    d = data
    if start + 5 > end:  # a length below 4: not a Bind that adds up
        return None
    # the portal's and the statement's names, each ended by a NUL
    p = start + 5
    while p < end and d[p] != 0:
        p += 1
    p += 1
    while p < end and d[p] != 0:
        p += 1
    if p >= end:
        return None
    params_at = p + 1
    if params_at + 2 > n:
        return None
    formats = _int16(d, params_at)
    if formats < 0:
        return None
    p = params_at + 2 + 2 * formats
    if p + 2 > n:
        return None
    count = _int16(d, p)
    if count < 0:
        return None
    p += 2
    values_at = p
    for _ in range(count):
        if p + 4 > n:
            return None
        size = _int32(d, p)
        p += 4 + (size if size > 0 else 0)
    if p + 2 > end:
        return None
    key = bytearray(start + 1 + values_at - start - 5 + stop - p)
    out = key
    o = _copy(out, 0, d, 0, start + 1)
    o = _copy(out, o, d, start + 5, values_at)
    _copy(out, o, d, p, stop)
    return _piece(out, 0, len(key)), params_at


def _copy(out: bytearray, at: int, d: bytes, start: int, end: int) -> int:
    """d[start:end] at `at`; where it ends."""
    for k in range(end - start):
        out[at + k] = d[start + k]
    return at + end - start
