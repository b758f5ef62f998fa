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


def _etc_zone(node: exp.Expression) -> str | None:
    """The Etc name of `node`'s zone, when it is an hour offset written as a constant."""
    zone = _zone(node)
    return _etc_name(zone.this) if isinstance(zone, exp.Literal) and zone.is_string else None


def needs_rewrite(tree: exp.Expression) -> bool:
    return any(_etc_zone(node) is not None for node in tree.find_all(exp.AtTimeZone, exp.Anonymous))


def postgres_zone(node: exp.Expression) -> exp.Expression:
    """`node` with an hour-offset zone written as its Etc name; any other node as it is."""
    name = _etc_zone(node)
    if name is None:
        return node
    rewritten = node.copy()
    zone = _zone(rewritten)
    assert zone is not None  # (the copy has the zone the original has)
    zone.replace(exp.Literal.string(name))
    return rewritten
