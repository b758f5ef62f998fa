"""PostgreSQL's string functions that DuckDB answers differently on some inputs.

Each call is rewritten so that DuckDB computes PostgreSQL's answer on every input, or
refused (0A000) where no rewrite does:
- `upper(s)`, `lower(s)`: PostgreSQL under the C collation (fedgate's) changes only ASCII
  letters (`upper('é')` is 'é'), DuckDB every letter: a translate() of the 26 letters;
  `s ILIKE p` likewise folds only ASCII letters ('éclair' ILIKE '%É%' is false): a LIKE
  of both sides' ASCII letters in lower case; a case-insensitive regular expression
  (`~*`, flag 'i') too, which DuckDB's RE2 folds by Unicode: answered for an ASCII literal
  pattern, else refused;
- `substr(s, start [, count])` with a start below 1: PostgreSQL counts the characters
  before the string (`substr('abc', -2, 4)` is 'a'), DuckDB counts from the end ('bc');
  a negative count is an error in PostgreSQL (22011), a count backwards in DuckDB;
- `split_part(s, '', n)`: PostgreSQL takes the whole string as the one field (n = 1 or
  -1, else ''), DuckDB splits between characters;
- `string_to_array(s, d)`: '' is an empty array in PostgreSQL, a NULL delimiter splits
  into characters and '' does not split; DuckDB answers [''], [s] and characters;
- `lpad(s, n, '')`, `rpad(s, n, '')`: PostgreSQL pads with nothing (s cut to n
  characters), DuckDB raises;
- `chr(0)` and `chr(n)` of a negative n: PostgreSQL's errors (54000, 22023), DuckDB
  answers or raises its own;
- `initcap(s)`: under the C collation PostgreSQL starts a word after any character that
  is not an ASCII letter or digit and changes only ASCII letters; DuckDB (sqlglot's
  rendering) knows Unicode letters. Only an ASCII literal is answered, else refused;
- `s SIMILAR TO p`: DuckDB reads p as a regular expression; PostgreSQL's `%`, `_` and
  escapes are translated (its similar_to_escape) when p is a literal, else refused;
- `x::varchar(n)`: PostgreSQL cuts x to n characters, DuckDB's VARCHAR(n) keeps them
  all (the client's own column is cut as it is presented, but an expression over the
  cast read the whole text): left(x, n); a cast to character(n) likewise, its trailing
  spaces dropped where PostgreSQL drops them (comparisons, text), refused where its
  padding may show (concat(), arrays) but for the client's own column;
- `decode(s, 'hex' | 'base64')`: bytea in PostgreSQL, DuckDB's decode() reads a blob as
  UTF-8 text. A literal is decoded here by PostgreSQL's rules (its errors included) and
  handed to DuckDB as unhex() of the bytes; anything else is refused.
"""

from __future__ import annotations

import re

import base64
import binascii
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from connectors.base import CLIENT_OUTPUTS, volatile_reason
from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

NEGATIVE_SUBSTRING_LENGTH = "negative substring length not allowed"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()
NULL_CHARACTER = "null character not permitted"
NEGATIVE_CHARACTER = "character number must be positive"
_REWRITTEN = (exp.Upper, exp.Lower, exp.Substring, exp.SplitPart, exp.StringToArray,
              exp.SimilarTo, exp.Pad, exp.Chr, exp.Initcap, exp.Decode, exp.ILike,
              exp.RegexpILike, exp.RegexpReplace, exp.RegexpLike)
_HEX_DIGITS = set("0123456789abcdefABCDEF")
_BASE64_SPACE = " \t\n\r"


def _limited_varchar(node: exp.Expression) -> bool:
    return isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.VARCHAR and bool(node.to.expressions)


def _char(node: exp.Expression) -> bool:
    return isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.CHAR


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(*_REWRITTEN) is not None or any(
        _limited_varchar(cast) or _char(cast) for cast in tree.find_all(exp.Cast))


def _client_output(node: exp.Expression) -> bool:
    """An output column of the client's own rows (connectors.base.CLIENT_OUTPUTS)."""
    alias = node.parent
    select = alias.parent if isinstance(alias, exp.Alias) else None
    return isinstance(select, exp.Select) and bool(select.meta.get(CLIENT_OUTPUTS)) \
        and alias.arg_key == "expressions"


def _refuse(what: str) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED,
                   f"{what} is not supported by fedgate outside PostgreSQL sources")


def _text(value: str) -> exp.Literal:
    return exp.Literal.string(value)


def _ascii_case(node: exp.Upper | exp.Lower) -> exp.Expression:
    source, target = (_LOWER, _UPPER) if isinstance(node, exp.Upper) else (_UPPER, _LOWER)
    return exp.Anonymous(this="translate", expressions=[node.this.copy(), _text(source), _text(target)])


def _ascii_ilike(node: exp.ILike) -> exp.Expression:
    def lowered(side: exp.Expression) -> exp.Expression:
        return exp.Anonymous(this="translate", expressions=[side.copy(), _text(_UPPER), _text(_LOWER)])
    like = exp.Like(**{key: value.copy() if isinstance(value, exp.Expression) else value
                       for key, value in node.args.items()})  # NOT ILIKE's negate too
    like.set("this", lowered(node.this))
    if isinstance(node.expression, (exp.Any, exp.All)):
        raise _refuse("ILIKE ANY or ALL")
    like.set("expression", lowered(node.expression))
    return like


def _case_insensitive(node: exp.Expression) -> bool:
    flags = node.args.get("modifiers") or node.args.get("flag")
    return isinstance(node, exp.RegexpILike) or (
        isinstance(flags, exp.Literal) and "i" in flags.this) or (
        flags is not None and not isinstance(flags, exp.Literal))


def _ascii_pattern(node: exp.Expression) -> exp.Expression:
    """A case-insensitive match, kept for an ASCII literal pattern only."""
    pattern = node.expression
    if _case_insensitive(node) and not (isinstance(pattern, exp.Literal) and pattern.is_string
                                        and pattern.this.isascii()):
        raise _refuse("a case-insensitive regular expression that is not an ASCII literal")
    return node


def _whole_number_at_least_one(value: exp.Expression) -> bool:
    return isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit() \
        and int(value.this) >= 1


def _capturing(pattern: str) -> bool | None:
    """Whether a POSIX pattern has a capturing group; None when a bracket makes it unclear."""
    groups = re.search(r"(?<!\\)\((?!\?)", pattern) is not None
    return None if groups and "[" in pattern else groups


def _pattern_substring(node: exp.Substring, pattern: str) -> exp.Expression:
    """substring(s FROM pattern): the first parenthesised group's match, or the whole
    match without one; NULL where nothing matches (DuckDB's regexp_extract says '')."""
    if node.args.get("length") is not None:
        raise _refuse("substring(s FROM pattern FOR escape)")
    capturing = _capturing(pattern)
    if capturing is None:
        raise _refuse("substring(s FROM pattern) with a bracket expression and a group")
    text, regex = node.this, exp.Literal.string(pattern)
    extract = exp.Anonymous(this="regexp_extract", expressions=[
        text.copy(), regex.copy(), exp.Literal.number(1 if capturing else 0)])
    found = exp.Anonymous(this="regexp_matches", expressions=[text.copy(), regex.copy()])
    return exp.Case(ifs=[exp.If(this=found, true=extract)])


def _substring(node: exp.Substring) -> exp.Expression:
    start, count = node.args.get("start"), node.args.get("length")
    if isinstance(start, exp.Literal) and start.is_string:
        return _pattern_substring(node, start.this)  # substring(s FROM pattern)
    if start is None or (
            _whole_number_at_least_one(start) and (count is None or _whole_number_at_least_one(count))):
        return node
    if volatile_reason(start) is not None or (count is not None and volatile_reason(count)):
        raise _refuse("substr() with a volatile start or count")
    first = exp.Greatest(this=start.copy(), expressions=[exp.Literal.number(1)])
    if count is None:
        return exp.Substring(this=node.this.copy(), start=first)
    end = exp.Add(this=start.copy(), expression=count.copy())
    length = exp.Greatest(this=exp.Sub(this=end, expression=first.copy()),
                          expressions=[exp.Literal.number(0)])
    answer = exp.Substring(this=node.this.copy(), start=first, length=length)
    negative = exp.LT(this=count.copy(), expression=exp.Literal.number(0))
    if not isinstance(node.this, exp.Literal):  # substr() is strict: NULL text is NULL
        negative = exp.and_(negative, exp.Not(this=exp.Is(this=node.this.copy(), expression=exp.Null())))
    return exp.Case(ifs=[exp.If(this=negative, true=_error(NEGATIVE_SUBSTRING_LENGTH))], default=answer)


def _split_part(node: exp.SplitPart) -> exp.Expression:
    delimiter, part = node.args.get("delimiter"), node.args.get("part_index")
    if delimiter is None or part is None or \
            (isinstance(delimiter, exp.Literal) and delimiter.is_string and delimiter.this != ""):
        return node
    strict = exp.or_(exp.Is(this=node.this.copy(), expression=exp.Null()),
                     exp.Is(this=part.copy(), expression=exp.Null()))  # NULL in, NULL out
    whole = exp.Case(ifs=[exp.If(this=strict, true=exp.Null()),
                          exp.If(this=exp.In(this=part.copy(), expressions=[
                              exp.Literal.number(1), exp.Literal.number(-1)]), true=node.this.copy())],
                     default=_text(""))
    return exp.Case(ifs=[exp.If(this=exp.EQ(this=delimiter.copy(), expression=_text("")), true=whole)],
                    default=node.copy())


def _string_to_array(node: exp.StringToArray) -> exp.Expression:
    text, delimiter = node.this, node.expression
    if node.args.get("null") is not None or delimiter is None:
        return node
    empty = exp.Cast(this=exp.Array(expressions=[]), to=exp.DataType.build("TEXT[]", dialect="duckdb"))
    ifs = [exp.If(this=exp.EQ(this=text.copy(), expression=_text("")), true=empty)]
    if not (isinstance(delimiter, exp.Literal) and delimiter.is_string and delimiter.this != ""):
        characters = exp.Anonymous(this="string_split", expressions=[text.copy(), _text("")])
        ifs += [exp.If(this=exp.Is(this=delimiter.copy(), expression=exp.Null()), true=characters),
                exp.If(this=exp.EQ(this=delimiter.copy(), expression=_text("")),
                       true=exp.Array(expressions=[text.copy()]))]
    return exp.Case(ifs=ifs, default=node.copy())


_REGEX_LITERAL = set(".^$\\")  # plain characters in SIMILAR TO, operators in a regex


def similar_to_regex(pattern: str) -> str:
    """A SIMILAR TO pattern (escape `\\`) as the regular expression PostgreSQL matches."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            following = pattern[i + 1]
            if following == '"':
                raise _refuse('SIMILAR TO with an escaped double quote')
            out.append(following if following.isalnum() else "\\" + following)
            i += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == "%":
            out.append(".*")
        elif char == "_":
            out.append(".")
        elif char in _REGEX_LITERAL:
            out.append("\\" + char)
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _similar_to(node: exp.SimilarTo) -> exp.Expression:
    pattern = node.expression
    if isinstance(node.parent, exp.Escape):
        raise _refuse("SIMILAR TO with ESCAPE")
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise _refuse("SIMILAR TO with a pattern that is not a literal")
    return exp.SimilarTo(this=node.this.copy(), expression=_text(similar_to_regex(pattern.this)))


def _error(message: str) -> exp.Expression:
    return exp.Anonymous(this="error", expressions=[_text(message)])


def _pad(node: exp.Pad) -> exp.Expression:
    fill = node.args.get("fill_pattern")
    if fill is None or (isinstance(fill, exp.Literal) and fill.is_string and fill.this != ""):
        return node
    width = exp.Greatest(this=node.expression.copy(), expressions=[exp.Literal.number(0)])
    cut = exp.Substring(this=node.this.copy(), start=exp.Literal.number(1), length=width)
    return exp.Case(ifs=[exp.If(this=exp.EQ(this=fill.copy(), expression=_text("")), true=cut)],
                    default=node.copy())


def _chr(node: exp.Chr) -> exp.Expression:
    if len(node.expressions) != 1:
        return node
    code = node.expressions[0]
    if isinstance(code, exp.Literal) and not code.is_string and code.this.isdigit() and int(code.this) > 0:
        return node
    zero = exp.Literal.number(0)
    return exp.Case(ifs=[exp.If(this=exp.LT(this=code.copy(), expression=zero), true=_error(NEGATIVE_CHARACTER)),
                         exp.If(this=exp.EQ(this=code.copy(), expression=zero.copy()),
                                true=_error(NULL_CHARACTER))],
                    default=node.copy())


def _hex(text: str) -> bytes:
    """PostgreSQL's hex_decode: pairs of digits, whitespace between pairs."""
    digits, i = [], 0
    while i < len(text):
        if text[i] in " \t\n\r":
            i += 1
            continue
        if text[i] not in _HEX_DIGITS:
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid hexadecimal digit: "{text[i]}"')
        if i + 1 >= len(text):
            raise PgError(INVALID_PARAMETER_VALUE, "invalid hexadecimal data: odd number of digits")
        if text[i + 1] not in _HEX_DIGITS:
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid hexadecimal digit: "{text[i + 1]}"')
        digits.append(text[i:i + 2])
        i += 2
    return bytes.fromhex("".join(digits))


def _base64(text: str) -> bytes:
    compact = "".join(c for c in text if c not in _BASE64_SPACE)
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError) as exc:
        # PostgreSQL's messages name the offending symbol; this one is refused, not misworded.
        raise _refuse("decode() of base64 text that is not valid base64") from exc


def _decode(node: exp.Decode) -> exp.Expression:
    text, charset = node.this, node.args.get("charset")
    if not (isinstance(charset, exp.Literal) and charset.is_string
            and charset.this.lower() in ("hex", "base64")):
        raise _refuse("decode() with a format other than 'hex' or 'base64'")
    if isinstance(text, exp.Null):
        return exp.Cast(this=exp.Null(), to=exp.DataType.build("BLOB"))
    if not (isinstance(text, exp.Literal) and text.is_string):
        raise _refuse("decode() of text that is not a literal")
    value = _hex(text.this) if charset.this.lower() == "hex" else _base64(text.this)
    return exp.Anonymous(this="unhex", expressions=[_text(value.hex())])


def _initcap(node: exp.Initcap) -> exp.Expression:
    text = node.this
    if not (isinstance(text, exp.Literal) and text.is_string and text.this.isascii()):
        raise _refuse("initcap() of text that may hold non-ASCII letters")
    return node


# sqlglot's node class -> its rewrite (none of these classes has subclasses, so the
# lookup by exact class is the isinstance test).
_REWRITES: dict[type[exp.Expression], Callable[[Any], exp.Expression]] = {
    exp.Upper: _ascii_case, exp.Lower: _ascii_case, exp.Substring: _substring,
    exp.SplitPart: _split_part, exp.StringToArray: _string_to_array,
    exp.SimilarTo: _similar_to, exp.Pad: _pad, exp.Chr: _chr, exp.Decode: _decode,
    exp.Initcap: _initcap, exp.ILike: _ascii_ilike, exp.RegexpILike: _ascii_pattern,
    exp.RegexpReplace: _ascii_pattern, exp.RegexpLike: _ascii_pattern,
}


def _varchar_cast(node: exp.Cast) -> exp.Expression:
    """`x::varchar(n)` is x cut to n characters; DuckDB's VARCHAR(n) keeps them all."""
    length = node.to.expressions[0]
    written = length.this if isinstance(length, exp.DataTypeParam) else length
    if isinstance(written, exp.Literal) and written.this.isdigit():
        if int(written.this) < 1:  # PostgreSQL's own errors (varchar's typmodin)
            raise PgError(INVALID_PARAMETER_VALUE, "length for type varchar must be at least 1")
        if int(written.this) > 10485760:
            raise PgError(INVALID_PARAMETER_VALUE, "length for type varchar cannot exceed 10485760")
    return exp.Cast(this=exp.Left(this=node.this, expression=length.this.copy()
                                  if isinstance(length, exp.DataTypeParam) else length.copy()),
                    to=node.to.copy())


# Where PostgreSQL reads a character(n) without its padding: compared (bpchar's own
# comparisons ignore trailing spaces), or turned into text (||, length(), upper() ...).
_UNPADDED_READERS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.In, exp.DPipe,
                     exp.Length, exp.Upper, exp.Lower)


def _char_cast(node: exp.Cast) -> exp.Expression:
    """`x::char(n)` (`::char` is char(1)) where the padding is dropped: x cut to n
    characters, trailing spaces removed. A constant at least n long needs no padding: it
    is cut here. The client's own column is cut and padded as it is presented
    (gateway.executor.presented); any other reader (concat(), an array, json) may keep
    the padding, so there it is refused."""
    parent = node.parent
    to_text = isinstance(parent, exp.Cast) and parent.to.this in (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR)
    unpadded = isinstance(parent, _UNPADDED_READERS) or to_text
    length = node.to.expressions[0] if node.to.expressions else exp.Literal.number(1)
    written = length.this if isinstance(length, exp.DataTypeParam) else length
    value = node.this
    if isinstance(value, exp.Literal) and value.is_string and isinstance(written, exp.Literal) \
            and len(value.this) >= int(written.this) and not isinstance(parent, exp.Array):  # (a bpchar[])
        cut_text = value.this[:int(written.this)]
        return _text(cut_text.rstrip(" ") if unpadded else cut_text)
    if not unpadded:
        raise _refuse("a cast to character(n) inside an expression")
    # a string constant compared with it is a character(n) too (its type was unknown)
    others = [parent.this, parent.expression] if isinstance(parent, exp.Binary) and not isinstance(parent, exp.DPipe) \
        else list(parent.expressions) if isinstance(parent, exp.In) and parent.this is node else []
    for other in others:
        if other is not node and isinstance(other, exp.Literal) and other.is_string:
            other.replace(_text(other.this.rstrip(" ")))
    cut = exp.Left(this=value, expression=written.copy())
    return exp.Cast(this=exp.Anonymous(this="rtrim", expressions=[cut, _text(" ")]),
                    to=exp.DataType.build("VARCHAR"))


def postgres_strings(node: exp.Expression) -> exp.Expression:
    """`node` rewritten to PostgreSQL's answer in DuckDB (children are rewritten first)."""
    if _limited_varchar(node):
        return _varchar_cast(node)  # type: ignore[arg-type]
    if _char(node) and not _client_output(node):
        return _char_cast(node)  # type: ignore[arg-type]
    rewrite = _REWRITES.get(type(node))
    return node if rewrite is None else rewrite(node)
