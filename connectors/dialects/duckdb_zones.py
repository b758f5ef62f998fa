"""A time zone written as an hour offset (`'+05'`, `'-3'`), as PostgreSQL reads it.

PostgreSQL reads such a zone POSIX's way: hours west of Greenwich, so `ts AT TIME ZONE
'+05'` is at UTC-5. DuckDB's ICU knows no zone by that name (`Unknown TimeZone '+05'!`),
but tzdata's `Etc/GMT+5` is the same zone, its sign POSIX's too. So an hour offset within
tzdata's Etc zones (-14 to +12) is written as its Etc name, in AT TIME ZONE and in
timezone(zone, ts). Other offsets (`'+05:30'`) are left as written, and refused as before.
"""

from __future__ import annotations

import re

from sqlglot import exp

_HOURS = re.compile(r"\s*([+-]?)0*(\d{1,2})\s*")


def _etc_name(text: str) -> str | None:
    found = _HOURS.fullmatch(text)
    if found is None:
        return None
    sign, hours = found.group(1) or "+", int(found.group(2))
    if hours > (12 if sign == "+" else 14):
        return None
    return f"Etc/GMT{sign}{hours}"


def _zone(node: exp.Expression) -> exp.Expression | None:
    """The zone argument of AT TIME ZONE or timezone(zone, ts), if `node` is one."""
    if isinstance(node, exp.AtTimeZone):
        return node.args.get("zone")
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "timezone" and len(node.expressions) == 2:
        return node.expressions[0]
    return None


def _offset_zone(node: exp.Expression) -> bool:
    zone = _zone(node)
    return isinstance(zone, exp.Literal) and zone.is_string and _etc_name(zone.this) is not None


def needs_rewrite(tree: exp.Expression) -> bool:
    return any(map(_offset_zone, tree.find_all(exp.AtTimeZone, exp.Anonymous)))


def postgres_zone(node: exp.Expression) -> exp.Expression:
    """`node` with an hour-offset zone written as its Etc name; any other node as it is."""
    if not _offset_zone(node):
        return node
    zone = _zone(node)
    assert isinstance(zone, exp.Literal)
    rewritten = node.copy()
    target = _zone(rewritten)
    assert target is not None
    target.replace(exp.Literal.string(_etc_name(zone.this) or zone.this))
    return rewritten
