"""COLLATE in a statement the engine answers: the emulated catalog's collations, or none.

fedgate compares text in C order, and the collations its catalog lists (pg_collation:
`default`, `C`, `POSIX`, `ucs_basic`, all C order in PostgreSQL 15) are made plain by the
planner (planner.pgcompat). A COLLATE left in the tree names any other collation, which
DuckDB would apply its own way (`COLLATE "en_US"` sorted by ICU's rules there). So:
- an ICU collation (`de-x-icu`, `und-x-icu`) or the C.UTF-8 locale, which a PostgreSQL 15
  server built with ICU has whatever its machine: refused (0A000), naming it;
- any other name is PostgreSQL's own answer for a collation its catalog lacks (42704,
  `collation "en_US" for encoding "UTF8" does not exist`), as the catalog fedgate shows
  lacks it. A statement shipped whole to a PostgreSQL source keeps its COLLATE, and that
  server answers from its own catalog.
"""

from __future__ import annotations

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, UNDEFINED_OBJECT, PgError

_C_UTF8 = {"c.utf8", "c.utf-8"}


def _name(collation: exp.Expression) -> str:
    """The collation's name as PostgreSQL's NameListToString writes it: unquoted parts
    folded to lower case, joined by dots, no quotes."""
    parts = collation.parts if isinstance(collation, exp.Column) else [collation]
    return ".".join(p.name if isinstance(p, exp.Identifier) and p.quoted else p.name.lower()
                    for p in parts)


def check_collations(tree: exp.Expression) -> None:
    """Raise for the first COLLATE in `tree` (see the module docstring)."""
    for node in tree.find_all(exp.Collate):
        name = _name(node.expression)
        bare = name.rsplit(".", 1)[-1] if name.lower().startswith("pg_catalog.") else name
        if bare.lower().endswith("-x-icu") or bare.lower() in _C_UTF8:
            raise PgError(FEATURE_NOT_SUPPORTED, f'COLLATE "{bare}" is not supported by fedgate '
                          "outside PostgreSQL sources (it compares text in C order)")
        raise PgError(UNDEFINED_OBJECT, f'collation "{name}" for encoding "UTF8" does not exist')
