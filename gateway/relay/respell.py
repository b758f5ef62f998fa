"""Names qualified with a source's name, respelled as the source knows them.

The gateway shows each source as a schema: a client may write `pg.pgbench_accounts`,
`"pg"."pgbench_accounts"`, `fedgate.pg.pgbench_accounts` or `pg.pgbench_accounts.aid`,
where the source's PostgreSQL knows the table as `public.pgbench_accounts`. A statement
of one PostgreSQL source written so is relayed (`gateway.relay.routing`) with each such
qualifier respelled: sqlglot parses the statement and says where the schema (and
database) qualifier of each table and column is, by its tokens' positions; exactly those
characters are replaced by the source's schema, rendered by sqlglot. Everything else
keeps the client's characters. Regenerating the whole statement from sqlglot's tree
would not do: its generator renames calls (`now()` becomes CURRENT_TIMESTAMP, `substr`
SUBSTRING), and PostgreSQL names a result column after the call it reads.

The relay respells a shape once: a statement whose numbers are lifted into parameters
(`gateway.relay.literals`) is respelled in its lifted form, which all statements of the
shape share; other texts are respelled one by one (`Router.respell` keeps them).
`Respelled.position` takes an error position of the source back into the client's text.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp


@dataclass(frozen=True, slots=True)
class Respelled:
    sql: str  # what the source is sent
    # Per qualifier replaced, in order: (start in the client's text, its length there,
    # the length of what replaced it)
    edits: tuple[tuple[int, int, int], ...]

    def position(self, position: int) -> int:
        """An error position (1-based, in `sql`) as a position in the client's text."""
        at, shift = position - 1, 0
        for start, length, written in self.edits:
            if at < start + shift:
                break
            if at < start + shift + written:
                return start + 1  # inside a respelled qualifier: where the client's begins
            shift += written - length
        return at - shift + 1


def respelled(sql: str, tree: exp.Expression, source: str, schema: str, database: str
              ) -> Respelled | None:
    """`sql` (parsed as `tree`) with each table and column qualified by `source` (or by
    `database`.`source`) qualified by the source's `schema` instead. None when the
    statement names the source where this does not reach (a function or a type
    qualified with it, another database's name, positions sqlglot did not keep): the
    planner takes such a statement."""
    spans: list[tuple[int, int]] = []
    for node in tree.find_all(exp.Table, exp.Column):
        db = node.args.get("db")
        if not isinstance(db, exp.Identifier) or _folded(db) != source:
            continue
        catalog = node.args.get("catalog")
        if catalog is not None and (not isinstance(catalog, exp.Identifier)
                                    or _folded(catalog) != database):
            return None  # PostgreSQL: cross-database references are not implemented
        first = _span(sql, catalog if catalog is not None else db)
        last = _span(sql, db)
        if first is None or last is None:
            return None
        spans.append((first[0], last[1]))
    for dot in tree.find_all(exp.Dot):
        if isinstance(dot.this, exp.Identifier) and _folded(dot.this) == source:
            return None  # pg.f(x), x::pg.type: the source's name where no table is
    if not spans:
        return None
    spans.sort()
    written = exp.to_identifier(schema, quoted=True).sql(dialect="postgres")
    parts: list[str] = []
    edits: list[tuple[int, int, int]] = []
    last_end = 0
    for start, end in spans:
        if start < last_end:
            return None  # overlapping qualifiers: not a statement this reads
        parts.append(sql[last_end:start])
        parts.append(written)
        edits.append((start, end - start, len(written)))
        last_end = end
    parts.append(sql[last_end:])
    return Respelled("".join(parts), tuple(edits))


def _folded(node: exp.Identifier) -> str:
    """An identifier as PostgreSQL folds it: unquoted names are lower case."""
    return node.this if node.quoted else node.this.lower()


def _span(sql: str, node: exp.Identifier) -> tuple[int, int] | None:
    """Where the identifier's token is in `sql` (end exclusive), checked against its text."""
    start, end = node.meta.get("start"), node.meta.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        return None
    text = sql[start:end + 1]
    expected = '"' + node.this.replace('"', '""') + '"' if node.quoted else node.this
    if text != expected and not (not node.quoted and text.lower() == expected.lower()):
        return None
    return start, end + 1
