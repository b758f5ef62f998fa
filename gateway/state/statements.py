"""Split a simple-query string into statements and recognise the session-level ones.

The statements handled by the gateway itself (SET, SHOW, BEGIN, ...) are matched with a
small grammar rather than sqlglot: they are on every client's connect path and pgbench's
hot path, and sqlglot parses several of them only as opaque commands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pgwire.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, PgError

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$")
# Text the character scanner would split exactly as `strip().rstrip(";")` does.
_PLAIN = re.compile(r"[^;'\"$/-]*;?\s*")


def split_statements(sql: str) -> list[str]:
    """Split on top-level semicolons, honouring quotes, comments and dollar quoting.

    Statements that hold nothing but white space and comments are dropped, so an empty
    list means an empty query (EmptyQueryResponse).
    """
    if "--" not in sql and "/*" not in sql:
        text = sql.strip().rstrip(";").rstrip()
        if ";" not in text:  # one statement, however it is quoted: nothing to split
            return [text] if text else []
    if _PLAIN.fullmatch(sql):  # one statement, no quotes, comments or inner semicolons
        text = sql.strip().rstrip(";").rstrip()
        return [text] if text else []
    out: list[str] = []
    start, i, n = 0, 0, len(sql)
    meaningful = False
    while i < n:
        c = sql[i]
        if c == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if c == "/" and sql.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if sql.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif sql.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            continue
        if c == ";":
            if meaningful:
                out.append(sql[start:i].strip())
            start, i, meaningful = i + 1, i + 1, False
            continue
        if not c.isspace() and not meaningful:
            meaningful, start = True, i  # leading comments and blanks are not kept
        if c in "'\"":
            # E'...' strings allow backslash escapes; standard strings only doubled quotes.
            escapes = c == "'" and i > 0 and sql[i - 1] in "eE" and \
                (i < 2 or not (sql[i - 2].isalnum() or sql[i - 2] == "_"))
            i += 1
            while i < n:
                if escapes and sql[i] == "\\":
                    i += 2
                    continue
                if sql[i] == c:
                    if i + 1 < n and sql[i + 1] == c:
                        i += 2
                        continue
                    break
                i += 1
            i += 1
            continue
        if c == "$":
            m = _DOLLAR_TAG.match(sql, i)
            if m and not (i > 0 and (sql[i - 1].isalnum() or sql[i - 1] == "_")):
                end = sql.find(m.group(0), m.end())
                i = n if end < 0 else end + len(m.group(0))
                continue
        i += 1
    if meaningful:
        out.append(sql[start:].strip())
    return out


@dataclass(frozen=True)
class Utility:
    """A statement the session answers itself. `kind` names the handler."""

    kind: str  # set, reset, show, begin, commit, rollback, savepoint, release,
    #            rollback_to, discard, deallocate, explain, copy, declare, fetch, move, close,
    #            signal (pg_cancel_backend / pg_terminate_backend: name cancel or terminate),
    #            prepare, execute (SQL-level prepared statements: gateway.session.prepared_sql)
    name: str | None = None  # GUC, savepoint, statement or cursor name
    value: str | None = None  # SET's value as written (quotes removed), EXPLAIN's and
    #                           DECLARE's query, FETCH's and MOVE's direction
    local: bool = False  # SET LOCAL
    analyze: bool = False  # EXPLAIN ANALYZE
    options: frozenset[str] = frozenset()  # DECLARE's: BINARY, SCROLL, HOLD; EXPLAIN's JSON
    args: str | None = None  # between PREPARE's or EXECUTE's parentheses, as written
    args_at: int = 0  # where `args` starts in the statement (0-based), for error positions


_WS = r"\s+"


def _explain_format(options: str) -> frozenset[str]:
    """EXPLAIN's FORMAT option as Utility.options: {"JSON"}, or nothing for TEXT."""
    found = re.search(r"\bFORMAT\s+(\w+)", options)
    if found is None or found.group(1) == "TEXT":
        return frozenset()
    if found.group(1) == "JSON":
        return frozenset({"JSON"})
    raise PgError(FEATURE_NOT_SUPPORTED,
                  f"EXPLAIN format {found.group(1)} is not supported (TEXT and JSON are)")
_COUNT = r"(?:[+-]?\d+|ALL)"
_DIRECTION = (rf"NEXT|PRIOR|FIRST|LAST|(?:ABSOLUTE|RELATIVE)\s+[+-]?\d+|(?:FORWARD|BACKWARD)(?:\s+{_COUNT})?"
              rf"|{_COUNT}")
_IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z_0-9$.]*)'
# a setting's name: dotted parts, each quoted or not (`"MyApp".x`)
_PART = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z_0-9$]*)'
_SETTING = rf"{_PART}(?:\.{_PART})*"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE | re.DOTALL)) for kind, pattern in (
        ("set_tz", r"SET(?:\s+(SESSION|LOCAL))?\s+TIME\s+ZONE\s+(.+)"),
        ("set", rf"SET(?:\s+(SESSION|LOCAL))?\s+({_SETTING})\s*(?:=|\s+TO\s+|\s)\s*(.+)"),
        ("reset", rf"RESET\s+({_SETTING})"),
        ("show", rf"SHOW\s+({_SETTING}|TIME\s+ZONE|TRANSACTION\s+ISOLATION\s+LEVEL)"),
        ("begin", r"(?:BEGIN|START\s+TRANSACTION)(?:\s+(?:WORK|TRANSACTION))?(?:\s+.*)?"),
        ("commit", r"(?:COMMIT|END)(?:\s+(?:WORK|TRANSACTION))?(?:\s+AND\s+NO\s+CHAIN)?"),
        ("rollback_to", rf"ROLLBACK(?:\s+(?:WORK|TRANSACTION))?\s+TO(?:\s+SAVEPOINT)?\s+({_IDENT})"),
        ("rollback", r"(?:ROLLBACK|ABORT)(?:\s+(?:WORK|TRANSACTION))?(?:\s+AND\s+NO\s+CHAIN)?"),
        ("savepoint", rf"SAVEPOINT\s+({_IDENT})"),
        ("release", rf"RELEASE(?:\s+SAVEPOINT)?\s+({_IDENT})"),
        ("discard", r"DISCARD\s+(ALL|PLANS|SEQUENCES|TEMP|TEMPORARY)"),
        ("deallocate", rf"DEALLOCATE(?:\s+PREPARE)?\s+({_IDENT})"),
        # The first `) AS ` ends the types: a type's own parentheses (numeric(10,2)) never
        # are followed by AS. PREPARE TRANSACTION has no AS and goes on to be refused.
        ("prepare", rf"PREPARE\s+({_IDENT})(?:\s*\((.*?)\))?\s*(?<=\s|\))AS\s+(.+)"),
        ("execute", rf"EXECUTE\s+({_IDENT})(?:\s*\((.*)\))?"),
        ("explain", r"EXPLAIN(?:\s+\((.*?)\)|\s+(ANALYZE|VERBOSE))*\s+(.+)"),
        ("copy", r"COPY\s+.+"),  # parsed in full by gateway.session.copy_out
        ("declare", rf"DECLARE\s+({_IDENT})((?:\s+(?:BINARY|ASENSITIVE|INSENSITIVE|NO\s+SCROLL|SCROLL))*)"
                    r"\s+CURSOR(?:\s+(WITH|WITHOUT)\s+HOLD)?\s+FOR\s+(.+)"),
        ("fetch", rf"(FETCH|MOVE)(?:\s+({_DIRECTION}))??(?:\s+(?:FROM|IN))?\s+({_IDENT})"),
        ("close", rf"CLOSE\s+({_IDENT})"),
    ))
_UTILITY_WORDS = re.compile(
    r"\s*(SET|RESET|SHOW|BEGIN|START|COMMIT|END|ROLLBACK|ABORT|SAVEPOINT|RELEASE|DISCARD|"
    r"DEALLOCATE|PREPARE|EXECUTE|EXPLAIN|COPY|DECLARE|FETCH|MOVE|CLOSE)\b", re.IGNORECASE)


def _unquote_setting(text: str) -> str:
    """A setting's name: each dotted part unquoted, or folded to lower case."""
    return ".".join(_unquote_ident(part) for part in re.findall(r'"(?:[^"]|"")+"|[^".]+', text))


def _unquote_ident(text: str) -> str:
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1].replace('""', '"')
    return text.lower()


def _unquote_value(text: str) -> str:
    """SET's value list as PostgreSQL stores it: items unquoted and joined by ', '."""
    items = []
    for item in re.findall(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|[^,\s]+""", text):
        if item.startswith("'"):
            items.append(item[1:-1].replace("''", "'"))
        elif item.startswith('"'):
            items.append(item[1:-1].replace('""', '"'))
        else:
            items.append(item)
    return ", ".join(items)


# `SELECT pg_cancel_backend(123)`, `SELECT pg_terminate_backend($1)`: the gateway's own
# sessions are signalled (gateway.session.signals). Anything longer goes to the planner.
_SIGNAL_START = re.compile(r"\s*SELECT\s+(?:pg_catalog\s*\.\s*)?pg_(?:cancel|terminate)_backend\b", re.I)
_SIGNAL = re.compile(r"SELECT\s+(?:pg_catalog\s*\.\s*)?pg_(cancel|terminate)_backend\s*\(\s*"
                     r"(\$1|[+-]?\d+)(?:\s*::\s*(?:int[248]?|integer|bigint|smallint))?\s*\)"
                     rf"(?:\s+(?:AS\s+)?{_IDENT})?", re.I | re.S)


def parse_utility(sql: str) -> Utility | None:
    """The session-level statement `sql` is, or None when it goes to the planner."""
    if _SIGNAL_START.match(sql):
        found = _SIGNAL.fullmatch(sql.strip().rstrip(";").strip())
        return Utility("signal", found.group(1).lower(), found.group(2)) if found else None
    if not _UTILITY_WORDS.match(sql):
        return None
    text = sql.strip().rstrip(";").strip()
    for kind, pattern in _PATTERNS:
        m = pattern.fullmatch(text)
        if m is None:
            continue
        if kind == "set_tz":
            return Utility("set", "timezone", _unquote_value(m.group(2)), local=_is_local(m.group(1)))
        if kind == "set":
            return Utility("set", _unquote_setting(m.group(2)), _unquote_value(m.group(3)),
                           local=_is_local(m.group(1)))
        if kind == "show":
            name = re.sub(r"\s+", " ", m.group(1)).lower()
            name = {"time zone": "timezone", "transaction isolation level": "transaction_isolation"}.get(name, name)
            return Utility("show", _unquote_setting(m.group(1)) if '"' in name else name)
        if kind == "reset":
            return Utility("reset", _unquote_setting(m.group(1)))
        if kind in ("rollback_to", "savepoint", "release", "deallocate"):
            return Utility(kind, _unquote_ident(m.group(1)))
        if kind in ("prepare", "execute"):
            at = m.start(2) + (len(sql) - len(sql.lstrip())) if m.group(2) is not None else 0
            return Utility(kind, _unquote_ident(m.group(1)), m.group(3) if kind == "prepare" else None,
                           args=m.group(2), args_at=at)
        if kind == "discard":
            return Utility("discard", m.group(1).upper())
        if kind == "explain":
            options = " ".join(g for g in m.groups()[:-1] if g).upper()
            return Utility("explain", value=m.group(3), analyze="ANALYZE" in options,
                           options=_explain_format(options))
        if kind == "copy":
            return Utility("copy", value=text)
        if kind == "declare":
            options = {word.upper() for word in m.group(2).split()}
            scroll = "SCROLL" in options and "NO" not in options
            flags = {"BINARY"} & options | ({"SCROLL"} if scroll else set()) | \
                ({"HOLD"} if (m.group(3) or "").upper() == "WITH" else set())
            return Utility("declare", _unquote_ident(m.group(1)), m.group(4), options=frozenset(flags))
        if kind == "fetch":
            direction = " ".join((m.group(2) or "NEXT").upper().split())
            return Utility(m.group(1).lower(), _unquote_ident(m.group(3)), direction)
        if kind == "close":
            return Utility("close", None if m.group(1).upper() == "ALL" else _unquote_ident(m.group(1)))
        return Utility(kind)
    word = text.split(None, 1)[0].upper()
    if word in ("PREPARE", "EXECUTE"):  # not their grammar: the planner would call them unsupported
        rest = text.split(None, 2)
        if word == "PREPARE" and len(rest) > 1 and rest[1].upper() == "TRANSACTION":
            raise PgError(FEATURE_NOT_SUPPORTED, "PREPARE TRANSACTION is not supported by fedgate")
        raise PgError(SYNTAX_ERROR, f"syntax error in {word}: expected {word} name "
                      + ("[(type, ...)] AS statement" if word == "PREPARE" else "[(argument, ...)]"))
    return None


_EXECUTE = re.compile(r"\s*EXECUTE\b", re.IGNORECASE)


def is_execute(sql: str) -> bool:
    """Whether `sql` is an EXECUTE (EXPLAIN EXECUTE explains the prepared statement)."""
    return _EXECUTE.match(sql) is not None


def _is_local(scope: str | None) -> bool:
    return scope is not None and scope.upper() == "LOCAL"
