"""regexp_match(s, pattern [, flags]): PostgreSQL's text[] of the first match, on DuckDB.

PostgreSQL answers the first match's capturing groups as a text[] (the whole match when
the pattern has none), NULL for a group that took no part in the match, and NULL when
nothing matches. DuckDB has no regexp_match(); regexp_extract(s, pattern, n) gives one
group, as '' both for a group that matched nothing and for one that took no part. So for
a literal pattern whose every capturing group matches at least one character whenever it
takes part, '' can only mean "took no part", and the call is written out:

    regexp_match(s, '(b)(c)?')
    →  CASE WHEN regexp_matches(s, '(b)(c)?')
            THEN [NULLIF(regexp_extract(s, '(b)(c)?', 1), ''),
                  NULLIF(regexp_extract(s, '(b)(c)?', 2), '')] END

Any other pattern (a group that may match nothing, `(c*)`, `(a|)`, or a construct this
does not read: `(?...)`, a back reference), a pattern that is not a literal, flags other
than 'i' (which keeps connectors.dialects.duckdb.strings' rule: an ASCII pattern only)
and a volatile string are refused (0A000); flag 'g' is PostgreSQL's own error.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import volatile_reason
from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

NAME = "regexp_match"
_ZERO_WIDTH_ESCAPES = set("bBAzZmMyY")
_OPTIONAL = ("?", "*", "{0", "{,")


def _refuse(what: str) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, f"regexp_match() {what} is not supported by fedgate "
                   "outside PostgreSQL sources")


def needs_rewrite(tree: exp.Expression) -> bool:
    return any(call.name.lower() == NAME for call in tree.find_all(exp.Anonymous))


def _bracket_end(pattern: str, i: int) -> int | None:
    """Where the bracket expression opening at pattern[i] ends (after its ']')."""
    j, n = i + 1, len(pattern)
    if j < n and pattern[j] == "^":
        j += 1
    if j < n and pattern[j] == "]":  # a ']' first is a member
        j += 1
    while j < n and pattern[j] != "]":
        if pattern[j] == "\\":
            j += 2
        elif pattern[j] == "[" and j + 1 < n and pattern[j + 1] in ":.=":  # [:alpha:] and kin
            close = pattern.find(pattern[j + 1] + "]", j + 2)
            if close < 0:
                return None
            j = close + 2
        else:
            j += 1
    return j + 1 if j < n else None


def _plain_positions(pattern: str, start: int = 0) -> list[int] | None:
    """The positions from `start` of the characters outside escapes and bracket
    expressions (where parentheses mean groups); None for a bracket that does not close."""
    positions, i, n = [], start, len(pattern)
    while i < n:
        if pattern[i] == "\\":
            i += 2
        elif pattern[i] == "[":
            end = _bracket_end(pattern, i)
            if end is None:
                return None
            i = end
        else:
            positions.append(i)
            i += 1
    return positions


def _group_end(pattern: str, i: int) -> int | None:
    """Where the group opening at pattern[i] ends (after its ')'); None for `(?`."""
    depth = 0
    for j in _plain_positions(pattern, i) or ():
        if pattern.startswith("(?", j):
            return None
        if pattern[j] == "(":
            depth += 1
        elif pattern[j] == ")":
            depth -= 1
            if depth == 0:
                return j + 1
    return None


def _surely_matches_something(body: str) -> bool | None:
    """Whether `body` (a group's, or a pattern's) matches at least one character whenever
    it matches; None for a construct not read here."""
    i, n, something = 0, len(body), False
    while i < n:
        c = body[i]
        if c == "|":
            return False  # an alternative may be empty
        if c == ")":
            return None
        if c == "\\":
            if i + 1 >= n or body[i + 1].isdigit():
                return None  # a back reference
            nonempty, end = body[i + 1] not in _ZERO_WIDTH_ESCAPES, i + 2
        elif c == "[":
            bracket_end = _bracket_end(body, i)
            if bracket_end is None:
                return None
            nonempty, end = True, bracket_end
        elif c == "(":
            group_end = _group_end(body, i)
            if group_end is None:
                return None
            inner = _surely_matches_something(body[i + 1:group_end - 1])
            if inner is None:
                return None
            nonempty, end = inner, group_end
        elif c in "^$":
            nonempty, end = False, i + 1
        elif c in "?*+{":
            return None  # a quantifier with nothing before it
        else:
            nonempty, end = True, i + 1
        if nonempty and not body.startswith(_OPTIONAL, end):
            something = True
        i = end
        while i < n and body[i] in "?*+":  # the quantifier (and a lazy one's '?')
            i += 1
        if i < n and body[i] == "{":
            close = body.find("}", i)
            if close < 0:
                return None
            i = close + 1
            if i < n and body[i] == "?":
                i += 1
    return something


def capturing_groups(pattern: str) -> int | None:
    """How many capturing groups `pattern` has, when each surely matches a character
    whenever it takes part in a match; None otherwise."""
    if _surely_matches_something(pattern) is None:
        return None  # a construct not read here, anywhere in the pattern
    positions = _plain_positions(pattern)
    if positions is None:
        return None
    count = 0
    for i in positions:
        if pattern[i] == "(":
            end = _group_end(pattern, i)
            if end is None or not _surely_matches_something(pattern[i + 1:end - 1]):
                return None
            count += 1
    return count


def postgres_regexp_match(node: exp.Expression) -> exp.Expression:
    if not (isinstance(node, exp.Anonymous) and node.name.lower() == NAME):
        return node
    arguments = node.expressions
    if len(arguments) not in (2, 3):
        return node  # PostgreSQL's own 42883, from the engine's
    text, pattern = arguments[0], arguments[1]
    flags = arguments[2] if len(arguments) == 3 else None
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise _refuse("of a pattern that is not a constant")
    if flags is not None and not (isinstance(flags, exp.Literal) and flags.is_string):
        raise _refuse("with flags that are not a constant")
    options = flags.this if flags is not None else ""
    if "g" in options:
        raise PgError(INVALID_PARAMETER_VALUE, "regexp_match() does not support the \"global\" option",
                      hint="Use the regexp_matches function instead.")
    if options not in ("", "i") or (options == "i" and not pattern.this.isascii()):
        raise _refuse(f"with flags '{options}'" if options != "i" else "ignoring the case of a non-ASCII pattern")
    if volatile_reason(text) is not None:
        raise _refuse("of a volatile string")
    groups = capturing_groups(pattern.this)
    if groups is None:
        raise _refuse("with a group that may match nothing, or a construct such as (?...) or a back reference,")
    extra = [exp.Literal.string(options)] if options else []

    def extract(group: int) -> exp.Expression:
        found = exp.Anonymous(this="regexp_extract", expressions=[
            text.copy(), pattern.copy(), exp.Literal.number(group), *[e.copy() for e in extra]])
        return exp.Nullif(this=found, expression=exp.Literal.string("")) if group else found

    matched = exp.Anonymous(this="regexp_matches", expressions=[text.copy(), pattern.copy(),
                                                                *[e.copy() for e in extra]])
    elements = [extract(g) for g in range(1, groups + 1)] if groups else [extract(0)]
    return exp.Case(ifs=[exp.If(this=matched, true=exp.Array(expressions=elements))])


# --- regexp_matches(s, pattern [, flags]): a set of text[] ------------------------------

SET_NAME = "regexp_matches"
_ENGINE_CALL = "fedgate_engine_call"  # meta: DuckDB's own regexp_matches(), written here


def has_set_calls(tree: exp.Expression) -> bool:
    return any(call.name.lower() == SET_NAME and not call.meta.get(_ENGINE_CALL)
               for call in tree.find_all(exp.Anonymous))


def _set_refusal(what: str) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, f"regexp_matches() {what} is not supported by fedgate "
                   "outside PostgreSQL sources")


def _in_plain_select_list(node: exp.Expression) -> bool:
    """An item of a select list (aliased or not) that neither groups, aggregates,
    deduplicates nor windows: there a set-returning call adds rows as DuckDB's unnest()
    does."""
    item = node.parent if isinstance(node.parent, exp.Alias) else node
    select = item.parent
    if not isinstance(select, exp.Select) or item.arg_key != "expressions":
        return False
    return not (select.args.get("group") or select.args.get("distinct")
                or select.find(exp.AggFunc, exp.Window) is not None)


def postgres_regexp_matches(tree: exp.Expression) -> None:
    """Rewrite, in place, each regexp_matches() call of `tree` (PostgreSQL's set of the
    matches' text[]; DuckDB's regexp_matches is a boolean), or refuse it:

        regexp_matches(s, '(b)(c)?')      one row for the first match, none without one
        →  unnest(CASE WHEN regexp_matches(s, '(b)(c)?') THEN [<as regexp_match>] ELSE [] END)
        regexp_matches(s, '([a-c])', 'g') a row for each match
        →  [NULLIF(unnest(regexp_extract_all(s, '([a-c])', 1)), '')]

    With 'g', a pattern of at most one capturing group that matches at least a character
    (PostgreSQL's and RE2's empty matches are not the same); otherwise as regexp_match."""
    for call in [c for c in tree.find_all(exp.Anonymous)
                 if c.name.lower() == SET_NAME and not c.meta.get(_ENGINE_CALL)]:
        arguments = call.expressions
        if len(arguments) not in (2, 3) or not _in_plain_select_list(call):
            raise _set_refusal("outside a select list without grouping, aggregates, DISTINCT or windows")
        text, pattern = arguments[0], arguments[1]
        flags = arguments[2] if len(arguments) == 3 else None
        if not (isinstance(pattern, exp.Literal) and pattern.is_string) or \
                (flags is not None and not (isinstance(flags, exp.Literal) and flags.is_string)):
            raise _set_refusal("of a pattern or flags that are not constants")
        options = flags.this if flags is not None else ""
        every = "g" in options
        case = options.replace("g", "")
        if case not in ("", "i") or options.count("g") > 1 or (case and not pattern.this.isascii()):
            raise _set_refusal(f"with flags '{options}'")
        if volatile_reason(text) is not None:
            raise _set_refusal("of a volatile string")
        groups = capturing_groups(pattern.this)
        if groups is None or (every and (groups > 1 or not _surely_matches_something(pattern.this))):
            raise _set_refusal("with this pattern")
        extra = [exp.Literal.string(case)] if case else []
        if every:
            found = exp.Anonymous(this="regexp_extract_all", expressions=[
                text.copy(), pattern.copy(), exp.Literal.number(groups), *extra])
            each: exp.Expression = exp.Unnest(expressions=[found])
            if groups:
                each = exp.Nullif(this=each, expression=exp.Literal.string(""))
            call.replace(exp.Array(expressions=[each]))
            continue
        first = postgres_regexp_match(exp.Anonymous(this=NAME, expressions=[a.copy() for a in arguments]))
        condition, array = first.args["ifs"][0].this, first.args["ifs"][0].args["true"]
        condition.meta[_ENGINE_CALL] = True
        rows = exp.Case(ifs=[exp.If(this=condition, true=exp.Array(expressions=[array]))],
                        default=exp.Array(expressions=[]))
        call.replace(exp.Unnest(expressions=[rows]))
