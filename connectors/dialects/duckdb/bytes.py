"""octet_length() of text; length(), substring(), get_byte() and encode() to hex or base64
of a bytea: as PostgreSQL answers them, under the names DuckDB has them.

    octet_length(s)          →  CAST(strlen(s) AS INT)           (UTF-8 bytes, as a UTF8 database)
    length(b)                →  CAST(octet_length(b) AS INT)     (b a bytea)
    encode(b, 'hex')         →  lower(hex(b))
    encode(b, 'base64')      →  to_base64(b) with a newline after every 76 characters
    substring(b FROM s FOR n)  →  unhex(substring(hex(b), ...))   (bytea_substring's bounds)
    get_byte(b, n)           →  CAST('0x' || substring(hex(b), 2n + 1, 2) AS INT)

DuckDB's octet_length() takes a BLOB only, its length(), substring() and get_byte() no
BLOB, and its hex() writes capitals. PostgreSQL's base64 is MIME's: a newline after each
line of 76 characters, the last one too when it is full (57 bytes give 76 characters and
a newline), unless it ends with padding (56 bytes give 76 characters ending `...=`, and
none).
Everything else is left to DuckDB, which has no match for it, so it is refused as before:
octet_length() of a character(n) (whose padding PostgreSQL counts) or of an argument of
unknown type, encode() to 'escape' or to a format that is not a constant, and a volatile
argument of substring() or get_byte() (it is written more than once).
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import volatile_reason
from connectors.dialects.rules import call as _call, raised

_T = exp.DataType.Type
NEGATIVE_LENGTH = "negative substring length not allowed"
_TEXT = (_T.TEXT, _T.VARCHAR)
_BYTEA = (_T.VARBINARY, _T.BINARY, _T.BLOB)
MIME_LINE = 76  # base64 characters per line (PostgreSQL's pg_base64_encode)


def needs_rewrite(tree: exp.Expression) -> bool:
    """Whether `tree` calls one of the functions rewritten here."""
    return tree.find(exp.Length, exp.Encode, exp.Substring) is not None or any(
        _is_octet_length(call) or _is_get_byte(call) for call in tree.find_all(exp.Anonymous))


def postgres_bytes(node: exp.Expression) -> exp.Expression:
    """`node` as PostgreSQL answers it in DuckDB, or as it is."""
    if _is_octet_length(node) and _of(node.expressions[0], _TEXT):
        return _int4(_call("strlen", node.expressions[0].copy()))
    if isinstance(node, exp.Length) and _of(node.this, _BYTEA):
        return _int4(_call("octet_length", node.this.copy()))
    if isinstance(node, exp.Encode) and _of(node.this, _BYTEA):
        charset = node.args.get("charset")
        format_ = charset.name.lower() if isinstance(charset, exp.Literal) and charset.is_string else None
        if format_ == "hex":
            return _call("lower", _call("hex", node.this.copy()))
        if format_ == "base64":
            return _mime_lines(_call("to_base64", node.this.copy()))
    if isinstance(node, exp.Substring) and _of(node.this, _BYTEA) and node.args.get("start") is not None \
            and not any(volatile_reason(part) for part in node.iter_expressions()):
        return _substring(node)
    if _is_get_byte(node) and _of(node.expressions[0], _BYTEA) \
            and not any(volatile_reason(part) for part in node.expressions):
        return _get_byte(node)
    return node


def _is_get_byte(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "get_byte" \
        and len(node.expressions) == 2


def _get_byte(node: exp.Anonymous) -> exp.Expression:
    """get_byte(b, n): the byte at offset n, read from the hex text; outside 0..len - 1
    PostgreSQL's 2202E, its message naming the valid range."""
    data, index = node.expressions
    at = exp.Cast(this=index.copy(), to=exp.DataType.build("BIGINT"))
    size = _call("octet_length", data.copy())
    last = exp.Sub(this=size.copy(), expression=exp.Literal.number(1))
    message = exp.DPipe(this=exp.DPipe(this=exp.DPipe(this=exp.Literal.string("index "), expression=exp.Cast(
        this=at.copy(), to=exp.DataType.build("VARCHAR"))), expression=exp.Literal.string(" out of valid range, 0..")),
        expression=exp.Cast(this=last, to=exp.DataType.build("VARCHAR")))
    digits = _call("substring", _call("hex", data.copy()),
                   exp.Add(this=exp.Mul(this=exp.Literal.number(2), expression=at.copy()), expression=exp.Literal.number(1)),
                   exp.Literal.number(2))
    byte = exp.Cast(this=exp.DPipe(this=exp.Literal.string("0x"), expression=digits), to=exp.DataType.build("INT"))
    outside = exp.or_(exp.LT(this=at.copy(), expression=exp.Literal.number(0)), exp.GTE(this=at, expression=size))
    return exp.Case(ifs=[exp.If(this=outside, true=_call("error", message))], default=byte)


def _substring(node: exp.Substring) -> exp.Expression:
    """bytea_substring: bytes from max(s, 1) up to s + n (exclusive), none when that is
    before the start; a negative n raises PostgreSQL's 22011. Cut from the hex text, two
    characters a byte."""
    start = exp.Cast(this=node.args["start"].copy(), to=exp.DataType.build("BIGINT"))
    first = exp.Greatest(this=start, expressions=[exp.Literal.number(1)])
    hexed = _call("hex", node.this.copy())
    at = exp.Sub(this=exp.Mul(this=exp.Literal.number(2), expression=first), expression=exp.Literal.number(1))
    length = node.args.get("length")
    if length is None:
        return _call("unhex", _call("substring", hexed, at))
    count = exp.Cast(this=length.copy(), to=exp.DataType.build("BIGINT"))
    kept = exp.Greatest(this=exp.Sub(this=exp.Add(this=start.copy(), expression=count), expression=first.copy()),
                        expressions=[exp.Literal.number(0)])
    piece = _call("unhex", _call("substring", hexed, at, exp.Mul(this=exp.Literal.number(2), expression=kept)))
    negative = exp.LT(this=count.copy(), expression=exp.Literal.number(0))
    return exp.Case(ifs=[exp.If(this=negative, true=raised(NEGATIVE_LENGTH))], default=piece)


def _is_octet_length(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "octet_length" \
        and len(node.expressions) == 1


def _of(argument: exp.Expression, kinds: tuple[exp.DataType.Type, ...]) -> bool:
    return argument.type is not None and argument.type.this in kinds


def _int4(call: exp.Expression) -> exp.Expression:  # PostgreSQL's int4 result
    return exp.Cast(this=call, to=exp.DataType.build("INT"))


def _mime_lines(encoded: exp.Expression) -> exp.Expression:
    """A newline after every full line of MIME_LINE characters, as pg_base64_encode: not
    after the last when it ends with the padded group, which is written after its loop."""
    lines = _call("regexp_replace", encoded, exp.Literal.string(f"(.{{{MIME_LINE}}})"),
                  exp.Literal.string("\\1\n"), exp.Literal.string("g"))
    return _call("regexp_replace", lines, exp.Literal.string("=\n$"), exp.Literal.string("="))

