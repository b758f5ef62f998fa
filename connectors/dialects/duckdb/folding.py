"""Calls DuckDB lacks, of constants, answered when the statement is planned.

PostgreSQL computes these from their arguments alone, so over constants the answer is a
constant the engine can be handed:
- sha224(), sha384(), sha512() of a bytea constant (or a string read as one): DuckDB has
  sha256 alone (sqlglot wrote sha512 as sha256); the digest is computed with hashlib;
- regexp_matches(text, pattern [, 'g']) of a text constant and a pattern of plain
  characters, with plain parentheses around some of them: such a pattern matches exactly
  its characters, wherever they stand, so the matches (the first, or each in turn with
  'g') are found here; each is a text[] of its parenthesised parts (or of the whole match),
  one row each, as the set-returning function gives them (no match: no row);
- to_number(text, template) of a text that has the template's very shape (a digit for
  each 9 or 0, the template's group and decimal separators where it has them): its
  digits, at as many decimal places as the template has digits after its point.
Anything else stays as it was: refused (0A000) by connectors.dialects.duckdb.functions.
"""

from __future__ import annotations

import hashlib
import re

from sqlglot import exp

from pgwire.types.pg_type import BYTEA
from pgwire.types.table import decode_param

_DIGESTS = {"224": "sha224", "384": "sha384", "512": "sha512"}
# Characters that stand for themselves in every regular expression flavour.
_PLAIN = re.compile(r"[A-Za-z0-9 _,:;/=@#%&'\"!<>~-]+")
_PIECE = re.compile(r"\(([^()]*)\)|([^()]+)")


def _digest_name(node: exp.Expression) -> str | None:
    if isinstance(node, exp.SHA2Digest):
        return _DIGESTS.get(node.args.get("length").name if node.args.get("length") else "")
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "sha224" and len(node.expressions) == 1:
        return "sha224"
    return None


def _is_regexp_matches(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "regexp_matches"


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(exp.ToNumber) is not None or any(
        _digest_name(n) or _is_regexp_matches(n) for n in tree.find_all(exp.SHA2Digest, exp.Anonymous))


def _bytea_constant(value: exp.Expression) -> bytes | None:
    if isinstance(value, exp.Cast) and value.to.this in (exp.DataType.Type.VARBINARY, exp.DataType.Type.BLOB):
        value = value.this
    if not (isinstance(value, exp.Literal) and value.is_string):
        return None
    return bytes(decode_param(BYTEA.oid, 0, value.this.encode("utf-8")))


def _digest(node: exp.Expression, name: str) -> exp.Expression:
    argument = node.this if isinstance(node, exp.SHA2Digest) else node.expressions[0]
    data = _bytea_constant(argument)
    if data is None:
        return node
    return exp.Anonymous(this="unhex", expressions=[exp.Literal.string(hashlib.new(name, data).hexdigest())])


def _plain_groups(pattern: str) -> list[tuple[str, bool]] | None:
    """The pattern as (characters, parenthesised) pieces, when each is plain; else None."""
    pieces = [(m.group(1) if m.group(1) is not None else m.group(2), m.group(1) is not None)
              for m in _PIECE.finditer(pattern)]
    if "".join(f"({t})" if grouped else t for t, grouped in pieces) != pattern or \
            not all(_PLAIN.fullmatch(t) for t, _ in pieces):
        return None
    return pieces


def _matches(node: exp.Anonymous) -> exp.Expression:
    args = node.expressions
    if not 2 <= len(args) <= 3 or not all(isinstance(a, exp.Literal) and a.is_string for a in args):
        return node
    subject, pattern = args[0].this, args[1].this
    flags = args[2].this if len(args) == 3 else ""
    pieces = _plain_groups(pattern)
    if pieces is None or flags not in ("", "g"):
        return node
    whole = "".join(text for text, _ in pieces)
    rows: list[list[str]] = []
    at = subject.find(whole)
    while at >= 0:
        # a plain group matches its own characters: the parts are the pattern's groups
        rows.append([text for text, grouped in pieces if grouped] or [whole])
        if flags != "g":
            break
        at = subject.find(whole, at + len(whole))
    # list_value() of the rows' arrays: one dimension per row to the array rewrites (a
    # text[] each), unnested into rows; no match, an empty slice of a text[] list
    values: exp.Expression = exp.Anonymous(this="list_value", expressions=[
        exp.Array(expressions=[exp.Literal.string(p) for p in row]) for row in rows or [[""]]])
    if not rows:
        values = exp.Anonymous(this="list_slice", expressions=[values, exp.Literal.number(2), exp.Literal.number(1)])
    return exp.Unnest(expressions=[values])


def _to_number(node: exp.ToNumber) -> exp.Expression:
    """to_number(text, template) of constants, when the text has the template's very shape:
    a digit for each 9 or 0, a ',' for each ',' or G, a '.' for the one '.' or D (anything
    else, signs and spaces included, stays refused)."""
    text, template = node.this, node.args.get("format")
    if not all(isinstance(a, exp.Literal) and a.is_string for a in (text, template)):
        return node
    shape = template.this.upper()
    if not shape or len(shape) != len(text.this) or not set(shape) <= set("90,G.D") or \
            sum(c in ".D" for c in shape) > 1:
        return node
    digits, scale, after_point = [], 0, False
    for wanted, got in zip(shape, text.this):
        if wanted in "90":
            if not got.isascii() or not got.isdigit():
                return node
            digits.append(got)
            scale += after_point
        elif wanted in ",G" and got != "," or wanted in ".D" and got != ".":
            return node
        elif wanted in ".D":
            after_point = True
    if not digits:
        return node
    whole = "".join(digits)
    value = f"{whole[:len(whole) - scale] or '0'}.{whole[len(whole) - scale:]}" if scale else whole
    return exp.Cast(this=exp.Literal.string(value), to=exp.DataType.build(f"DECIMAL({max(len(whole), 1)}, {scale})"))


def fold_constants(node: exp.Expression) -> exp.Expression:
    """`node` answered as a constant where the module docstring says; others as they are."""
    if isinstance(node, exp.ToNumber):
        return _to_number(node)
    name = _digest_name(node)
    if name is not None:
        return _digest(node, name)
    if _is_regexp_matches(node):
        return _matches(node)  # type: ignore[arg-type]
    return node
