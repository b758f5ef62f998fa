"""VALUES columns whose numeric constants have different display scales, refused.

PostgreSQL's numeric keeps each value's own display scale: `VALUES (1), (2.5)` is 1 and
2.5, and max(), lag(), array_agg() or a text cast of that column show each value so.
A DuckDB DECIMAL column has one scale for all its rows (1.0 and 2.5; `(1.10), (1.1)`
shows 1.10 twice), and whatever reads the column then answers with the wrong digits. So
a VALUES list in which one column holds numeric constants of more than one scale is
refused (0A000) naming it; constants of one scale, integers alone, or columns holding
anything but plain number constants (casts, expressions, exponent literals) run as
before.
"""

from __future__ import annotations

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError


def _scale(item: exp.Expression) -> int | None:
    """The display scale of a plain number constant (`2.5`, `-2.25`, `4`), else None."""
    literal = item.this if isinstance(item, exp.Neg) else item
    if not isinstance(literal, exp.Literal) or literal.is_string or "e" in literal.this.lower():
        return None
    return len(literal.this.partition(".")[2])


def refuse_mixed_scales(tree: exp.Expression) -> None:
    """Raise 0A000 for a VALUES column holding number constants of different scales."""
    for values in tree.find_all(exp.Values):
        rows = [row.expressions for row in values.expressions if isinstance(row, exp.Tuple)]
        for column in zip(*rows):
            shown = {}
            for item in column:
                scale = _scale(item)
                if scale is not None:
                    shown.setdefault(scale, item.sql("postgres"))
            if len(shown) > 1:
                first, second = list(shown.values())[:2]
                raise PgError(FEATURE_NOT_SUPPORTED, f"a VALUES column mixing numeric constants of "
                              f"different scales ({first} and {second}) is not supported by the "
                              "query engine (PostgreSQL shows each value at its own scale)")
