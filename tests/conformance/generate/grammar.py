"""Random valid read statements over the differential suite's tables, seeded and reproducible.

The statements are built as sqlglot trees (never by pasting text) from typed pieces over
`t` and `u` (tests/conformance/world.py), so each one is valid PostgreSQL: expressions of
the column types with casts, comparisons, CASE, COALESCE, NULLIF, IN lists and LIKE;
inner, left, right and full joins; scalar, IN and EXISTS subqueries; aggregates with
DISTINCT and FILTER, GROUP BY, HAVING and grouping sets; windows with frames; UNION,
INTERSECT and EXCEPT with and without ALL; VALUES; CTEs; ORDER BY with LIMIT/OFFSET on a
total order. `statement(rng)` gives one (its tree, and whether its row order is part of
the answer). The same seed gives the same statements.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from sqlglot import exp

# Column -> its type's family, per table (world.py's T_COLUMNS and U_COLUMNS).
T = {"id": "int", "g": "int", "k": "int", "n": "numeric", "f": "float", "s": "text",
     "d": "date", "ts": "timestamp", "b": "bool"}
U = {"g": "int", "name": "text"}
TABLES = {"t": T, "u": U}
FAMILIES = ("int", "numeric", "float", "text", "date", "bool")
TEXT_WORDS = ("apple", "Banana", "b", "B", "", "zebra", "é", "a%b_c")
COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


@dataclass(frozen=True)
class Scope:
    """The columns an expression may name: (table alias, column, family)."""

    columns: tuple[tuple[str, str, str], ...]

    def of(self, family: str) -> list[tuple[str, str, str]]:
        return [c for c in self.columns if c[2] == family]


def scope_of(*aliases: tuple[str, str]) -> Scope:
    """(alias, table) pairs -> the columns they bring."""
    return Scope(tuple((alias, name, family) for alias, table in aliases
                       for name, family in TABLES[table].items()))


class Builder:
    """One statement's random choices; `depth` bounds the nesting of expressions."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # --- expressions ---------------------------------------------------------------------

    def literal(self, family: str) -> exp.Expression:
        r = self.rng
        if family == "int":
            return exp.Literal.number(r.choice((0, 1, 2, 3, 5, 10, 20, -1, 100)))
        if family == "numeric":
            return exp.Literal.number(r.choice(("1.5", "0.25", "2.50", "-3.3", "10")))
        if family == "float":
            return exp.Cast(this=exp.Literal.number(r.choice(("0.5", "2", "-1.25"))),
                            to=exp.DataType.build("float8"))
        if family == "text":
            return exp.Literal.string(r.choice(TEXT_WORDS))
        if family == "date":
            return exp.Cast(this=exp.Literal.string(r.choice(("2024-01-01", "2024-02-29", "2000-01-01"))),
                            to=exp.DataType.build("date"))
        if family == "bool":
            return exp.Boolean(this=r.random() < 0.5)
        raise ValueError(family)

    def column(self, scope: Scope, family: str) -> exp.Expression | None:
        found = scope.of(family)
        if not found:
            return None
        alias, name, _ = self.rng.choice(found)
        return exp.column(name, table=alias)

    def value(self, scope: Scope, family: str, depth: int = 2) -> exp.Expression:
        """An expression of `family`'s type."""
        r = self.rng
        if depth <= 0 or self.chance(0.35):
            col = self.column(scope, family) if self.chance(0.75) else None
            return col if col is not None else self.literal(family)
        d = depth - 1
        if family == "bool":
            return self.predicate(scope, d)
        pick = r.random()
        if pick < 0.15:
            return exp.Coalesce(this=self.value(scope, family, d), expressions=[self.value(scope, family, d)])
        if pick < 0.25:
            return exp.Case(ifs=[exp.If(this=self.predicate(scope, d), true=self.value(scope, family, d))],
                            default=self.value(scope, family, d) if self.chance(0.7) else None)
        if pick < 0.3:
            return exp.Nullif(this=self.value(scope, family, d), expression=self.value(scope, family, d))
        if family in ("int", "numeric", "float"):
            if pick < 0.7:
                op = r.choice((exp.Add, exp.Sub, exp.Mul))
                return exp.Paren(this=op(this=self.value(scope, family, d), expression=self.value(scope, family, d)))
            if pick < 0.8:
                return exp.Abs(this=self.value(scope, family, d))
            if pick < 0.9 and family == "int":
                return exp.Length(this=self.value(scope, "text", d))
            if family == "int":
                return exp.Cast(this=self.value(scope, "numeric", d), to=exp.DataType.build("int4"))
            return exp.Cast(this=self.value(scope, "int", d), to=exp.DataType.build(
                "numeric" if family == "numeric" else "float8"))
        if family == "text":
            if pick < 0.5:
                return exp.DPipe(this=self.value(scope, "text", d), expression=self.value(scope, "text", d))
            if pick < 0.65:
                return r.choice((exp.Upper, exp.Lower))(this=self.value(scope, "text", d))
            if pick < 0.8:
                return exp.Substring(this=self.value(scope, "text", d), start=exp.Literal.number(r.randint(1, 3)),
                                     length=exp.Literal.number(r.randint(0, 4)))
            return exp.Cast(this=self.value(scope, "int", d), to=exp.DataType.build("text"))
        if family == "date":
            return exp.Add(this=self.value(scope, "date", d), expression=self.literal("int"))
        return self.literal(family)

    def predicate(self, scope: Scope, depth: int = 2) -> exp.Expression:
        r = self.rng
        pick = r.random()
        d = max(depth - 1, 0)
        if depth > 0 and pick < 0.2:
            op = r.choice((exp.And, exp.Or))
            return exp.Paren(this=op(this=self.predicate(scope, d), expression=self.predicate(scope, d)))
        if depth > 0 and pick < 0.27:
            return exp.Not(this=exp.Paren(this=self.predicate(scope, d)))
        if pick < 0.35:
            family = r.choice(FAMILIES[:-1])
            return exp.Is(this=self.value(scope, family, d), expression=exp.Null()) if self.chance(0.5) else \
                exp.Not(this=exp.Is(this=self.value(scope, family, d), expression=exp.Null()))
        if pick < 0.45:
            family = r.choice(("int", "text"))
            items = [self.literal(family) for _ in range(r.randint(1, 3))]
            found = exp.In(this=self.value(scope, family, d), expressions=items)
            return exp.Not(this=found) if self.chance(0.3) else found
        if pick < 0.52:
            pattern = exp.Literal.string(r.choice(("a%", "%e%", "_", "B%", "%")))
            like = exp.ILike if self.chance(0.3) else exp.Like
            return like(this=self.value(scope, "text", d), expression=pattern)
        if pick < 0.58:
            return exp.Between(this=self.value(scope, "int", d), low=self.literal("int"), high=self.literal("int"))
        if pick < 0.64:
            col = self.column(scope, "bool")
            if col is not None:
                return col
        family = r.choice(("int", "int", "numeric", "float", "text", "date"))
        op = r.choice(COMPARISONS)
        return op(this=self.value(scope, family, d), expression=self.value(scope, family, d))

    # --- statements ----------------------------------------------------------------------

    def from_clause(self) -> tuple[exp.Select, Scope]:
        """SELECT * FROM t [JOIN u ...] with its scope (no select list yet)."""
        r = self.rng
        select = exp.Select()
        if self.chance(0.35):
            kind = r.choice(("", "LEFT", "RIGHT", "FULL"))
            on = exp.EQ(this=exp.column("g", table="t"), expression=exp.column("g", table="u"))
            if self.chance(0.3):
                on = exp.And(this=on, expression=self.predicate(scope_of(("t", "t"), ("u", "u")), 1))
            select = select.from_(exp.Table(this=exp.to_identifier("t"))).join(
                exp.Table(this=exp.to_identifier("u")), on=on, join_type=kind)
            return select, scope_of(("t", "t"), ("u", "u"))
        return select.from_(exp.Table(this=exp.to_identifier("t"))), scope_of(("t", "t"))

    def subquery_predicate(self, scope: Scope) -> exp.Expression:
        r = self.rng
        inner = exp.Select().from_(exp.Table(this=exp.to_identifier("u")))
        if self.chance(0.5):  # correlated EXISTS
            where = exp.EQ(this=exp.column("g", table="u"), expression=self.column(scope, "int") or exp.column("g", table="t"))
            found = exp.Exists(this=inner.select(exp.Literal.number(1)).where(where))
            return exp.Not(this=found) if self.chance(0.3) else found
        inner = inner.select(exp.column("g", table="u"))
        if self.chance(0.5):
            inner = inner.where(self.predicate(scope_of(("u", "u")), 1))
        found = exp.In(this=self.value(scope, "int", 1), query=inner.subquery())
        return exp.Not(this=found) if r.random() < 0.3 else found

    def plain(self) -> tuple[exp.Expression, bool]:
        """SELECT expressions FROM ... WHERE ... [ORDER BY ... LIMIT]."""
        select, scope = self.from_clause()
        items = []
        for i in range(self.rng.randint(1, 4)):
            family = self.rng.choice(FAMILIES)
            items.append(exp.alias_(self.value(scope, family), f"c{i}"))
        select = select.select(*items)
        if self.chance(0.7):
            where = self.predicate(scope)
            if self.chance(0.2):
                where = exp.And(this=where, expression=self.subquery_predicate(scope))
            select = select.where(where)
        ordered = False
        if len(scope.columns) == len(T) and self.chance(0.3):  # t alone: id orders it totally
            select = select.order_by(exp.Ordered(this=exp.column("id", table="t"),
                                                 desc=self.chance(0.5)))
            select = select.limit(self.rng.randint(0, 6))
            if self.chance(0.3):
                select = select.offset(self.rng.randint(0, 4))
            ordered = True
        elif self.chance(0.15):
            select = select.distinct()
        return select, ordered

    def aggregate(self) -> tuple[exp.Expression, bool]:
        """SELECT keys, aggregates FROM ... [WHERE] GROUP BY keys [HAVING]."""
        r = self.rng
        select, scope = self.from_clause()
        keys = [self.value(scope, r.choice(("int", "text", "bool", "date")), 1)
                for _ in range(r.randint(0, 2))]
        aggregates = []
        for _ in range(r.randint(1, 3)):
            family = r.choice(("int", "numeric", "float", "text", "date"))
            arg = self.value(scope, family, 1)
            if family == "text" or family == "date":
                call = r.choice((exp.Min, exp.Max, exp.Count))(this=arg)
            else:
                call = r.choice((exp.Sum, exp.Min, exp.Max, exp.Count, exp.Avg))(this=arg)
            if isinstance(call, (exp.Count, exp.Sum)) and self.chance(0.2):
                call = type(call)(this=exp.Distinct(expressions=[arg]))
            if self.chance(0.2):
                call = exp.Filter(this=call, expression=exp.Where(this=self.predicate(scope, 1)))
            aggregates.append(call)
        if self.chance(0.3):
            aggregates.append(exp.Count(this=exp.Star()))
        items = [exp.alias_(e, f"c{i}") for i, e in enumerate(keys + aggregates)]
        select = select.select(*items)
        if self.chance(0.5):
            select = select.where(self.predicate(scope))
        if keys:
            if len(keys) == 2 and self.chance(0.2):
                sets = exp.GroupingSets(expressions=[exp.Tuple(expressions=[k.copy()]) for k in keys]
                                        + [exp.Tuple(expressions=[])])
                select = select.group_by(sets)
            else:
                select = select.group_by(*[k.copy() for k in keys])
            if self.chance(0.3):
                select = select.having(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1)))
        return select, False

    def window(self) -> tuple[exp.Expression, bool]:
        """Window functions over t, ordered by id within their partition."""
        r = self.rng
        scope = scope_of(("t", "t"))
        items = [exp.column("id", table="t")]
        for i in range(r.randint(1, 2)):
            spec_order = exp.Order(expressions=[exp.Ordered(this=exp.column("id", table="t"))])
            partition = [self.value(scope, r.choice(("int", "text", "bool")), 1)] if self.chance(0.7) else []
            choice = r.random()
            if choice < 0.3:
                func: exp.Expression = r.choice((exp.RowNumber(), exp.Anonymous(this="rank"),
                                                 exp.Anonymous(this="dense_rank")))
                frame = None
            elif choice < 0.5:
                func = exp.Anonymous(this=r.choice(("lag", "lead")),
                                     expressions=[self.value(scope, r.choice(("int", "text")), 1)])
                frame = None
            else:
                family = r.choice(("int", "numeric", "float"))
                func = r.choice((exp.Sum, exp.Min, exp.Max, exp.Count, exp.Avg))(this=self.value(scope, family, 1))
                frame = exp.WindowSpec(kind="ROWS", start=r.choice(("UNBOUNDED", "1")),
                                       start_side="PRECEDING", end="CURRENT ROW") if self.chance(0.6) else None
            window = exp.Window(this=func, partition_by=partition, order=spec_order, spec=frame)
            items.append(exp.alias_(window, f"w{i}"))
        select = exp.Select().select(*items).from_(exp.Table(this=exp.to_identifier("t")))
        if self.chance(0.4):
            select = select.where(self.predicate(scope, 1))
        return select, False

    def set_operation(self) -> tuple[exp.Expression, bool]:
        r = self.rng
        family = r.choice(("int", "text", "numeric", "date"))
        sides = []
        for _ in range(2):
            select, scope = self.from_clause()
            select = select.select(exp.alias_(self.value(scope, family, 1), "c0"))
            if self.chance(0.6):
                select = select.where(self.predicate(scope, 1))
            sides.append(select)
        op = r.choice((exp.Union, exp.Intersect, exp.Except))
        return op(this=sides[0], expression=sides[1], distinct=self.chance(0.5)), False

    def with_cte(self) -> tuple[exp.Expression, bool]:
        inner, _ = self.plain() if self.chance(0.5) else self.aggregate()
        if isinstance(inner, exp.Select):
            inner.set("order", None)
            inner.set("limit", None)
            inner.set("offset", None)
        outer = exp.Select().select(exp.Star()).from_(exp.Table(this=exp.to_identifier("c")))
        if self.chance(0.4):
            outer = outer.where(exp.Not(this=exp.Is(this=exp.column("c0", table="c"), expression=exp.Null())))
        return outer.with_("c", as_=inner), False

    def values(self) -> tuple[exp.Expression, bool]:
        r = self.rng
        family = r.choice(("int", "text"))
        rows = [exp.Tuple(expressions=[self.literal(family), self.literal("int")]) for _ in range(r.randint(1, 4))]
        table = exp.Values(expressions=rows, alias=exp.TableAlias(
            this=exp.to_identifier("v"), columns=[exp.to_identifier("a"), exp.to_identifier("x")]))
        select = exp.Select().select(exp.column("a", table="v"), exp.Count(this=exp.Star())).from_(table)
        return select.group_by(exp.column("a", table="v")), False


SHAPES = (("plain", Builder.plain, 5), ("aggregate", Builder.aggregate, 3), ("window", Builder.window, 1),
          ("set operation", Builder.set_operation, 1), ("cte", Builder.with_cte, 1),
          ("values", Builder.values, 1))


def statement(rng: random.Random) -> tuple[str, exp.Expression, bool]:
    """(shape, tree, whether the row order is part of the answer) of one random statement."""
    builder = Builder(rng)
    names, makers, weights = zip(*SHAPES)
    index = rng.choices(range(len(SHAPES)), weights=weights)[0]
    tree, ordered = makers[index](builder)
    return names[index], tree, ordered
