"""COPY ... TO STDOUT: any federated query (or a table) streamed in text or CSV format.

psql's `\\copy (select ...) to 'file'` sends `COPY (select ...) TO STDOUT`, and drivers'
bulk-export calls do the same. The query is planned and run like any SELECT; its rows are
formatted a column at a time and escaped for the chosen format (`pgwire.types.copy_text`),
then sent one row per CopyData message, as PostgreSQL does (psycopg's row reader expects
exactly that).
COPY FROM is a separate feature and is refused here with 0A000.
"""

from __future__ import annotations

import asyncio
import functools
import re
from dataclasses import dataclass

import sqlglot
from sqlglot.errors import TokenError
from sqlglot.tokens import Tokenizer, TokenType

from gateway.session.core import OFFLOAD_ROWS, SessionCore
from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SYNTAX_ERROR, PgError
from pgwire.protocol import encoder
from pgwire.types.copy_text import TextLayout, copy_data, header_line

FLUSH_BYTES = 256 * 1024


@dataclass(frozen=True)
class CopyOut:
    query: str
    layout: TextLayout
    header: bool = False


def _tokens(sql: str):
    try:
        return Tokenizer().tokenize(sql)
    except TokenError as exc:
        raise PgError(SYNTAX_ERROR, f"syntax error in COPY: {exc}") from exc


def parse_copy(sql: str) -> CopyOut:
    """`COPY (query) TO STDOUT [WITH] options` or `COPY table [(cols)] TO STDOUT ...`."""
    text = sql.strip().rstrip(";")
    tokens = _tokens(text)
    if len(tokens) < 4 or tokens[0].text.upper() != "COPY":
        raise PgError(SYNTAX_ERROR, "syntax error in COPY")
    i = 1
    if tokens[1].token_type == TokenType.L_PAREN:
        close = _matching(tokens, 1)
        query = text[tokens[1].end + 1:tokens[close].start].strip()
        i = close + 1
    else:
        start = tokens[1].start
        while i < len(tokens) and tokens[i].text.upper() not in ("TO", "FROM", "(", "WITH"):
            i += 1
        table = text[start:tokens[i - 1].end + 1]
        columns = "*"
        if i < len(tokens) and tokens[i].token_type == TokenType.L_PAREN:
            close = _matching(tokens, i)
            columns = text[tokens[i].end + 1:tokens[close].start]
            i = close + 1
        query = f"SELECT {columns} FROM {table}"
    if i >= len(tokens) or tokens[i].text.upper() != "TO":
        if i < len(tokens) and tokens[i].text.upper() == "FROM":
            raise PgError(FEATURE_NOT_SUPPORTED, "COPY FROM is not supported by fedgate yet")
        raise PgError(SYNTAX_ERROR, "syntax error in COPY: expected TO STDOUT")
    if i + 1 >= len(tokens) or tokens[i + 1].text.upper() != "STDOUT":
        raise PgError(FEATURE_NOT_SUPPORTED,
                      "COPY to a file is not supported: use COPY ... TO STDOUT (psql's \\copy)")
    return _options(text[tokens[i + 1].end + 1:], query)


def _matching(tokens, open_index: int) -> int:
    depth = 0
    for j in range(open_index, len(tokens)):
        kind = tokens[j].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return j
    raise PgError(SYNTAX_ERROR, "syntax error in COPY: unbalanced parentheses")


_WORD = re.compile(r"""\s*([Ee]'(?:[^'\\]|\\.|'')*'|'(?:[^']|'')*'|[A-Za-z0-9_*]+|[(),])""")
_VALUED_OLD = {"delimiter", "null", "quote", "escape", "encoding"}


def _words(text: str) -> list[str]:
    """Names, quoted values (a comma inside one is a value's), commas and parentheses."""
    words, pos = [], 0
    while text[pos:].strip():
        m = _WORD.match(text, pos)
        if m is None:
            raise PgError(SYNTAX_ERROR, f'syntax error in COPY options at "{text[pos:].strip()}"')
        words.append(m.group(1))
        pos = m.end()
    return words


def _items(words: list[str]) -> list[list[str]]:
    """The option list `(name value, name, ...)`'s items, split at its top-level commas."""
    items: list[list[str]] = [[]]
    depth = 0
    for word in words:
        depth += {"(": 1, ")": -1}.get(word, 0)
        if word == "," and depth == 0:
            items.append([])
        else:
            items[-1].append(word)
    return [item for item in items if item]


def _value(word: str) -> str:
    if word[:2] in ("E'", "e'"):  # an escape string: PostgreSQL's lexer rules, as parsed
        literal = sqlglot.parse_one(f"SELECT {word}", read="postgres").expressions[0]
        return literal.this
    return word[1:-1].replace("''", "'") if word.startswith("'") else word


def _options(rest: str, query: str) -> CopyOut:
    """Both option syntaxes: `WITH (FORMAT csv, HEADER)` and the old `WITH CSV HEADER`."""
    rest = rest.strip()
    if rest.upper().startswith("WITH"):
        rest = rest[4:].strip()
    found: dict[str, str | None] = {}
    if rest.startswith("(") and rest.endswith(")"):
        for words in _items(_words(rest[1:-1])):
            found[words[0].lower()] = _value(words[1]) if len(words) > 1 else None
    else:
        words = [word for word in _words(rest) if word != ","]
        i = 0
        while i < len(words):
            name = words[i].lower()
            if name in ("csv", "binary", "text"):
                found["format"] = name
            elif name in _VALUED_OLD and i + 1 < len(words):
                i += 1
                if words[i].lower() == "as" and i + 1 < len(words):
                    i += 1
                found[name] = _value(words[i])
            else:
                found[name] = None
            i += 1
    fmt = (found.pop("format", None) or "text").lower()
    if fmt == "binary":
        raise PgError(FEATURE_NOT_SUPPORTED, "COPY BINARY is not supported by fedgate yet")
    if fmt not in ("text", "csv"):
        raise PgError(INVALID_PARAMETER_VALUE, f'COPY format "{fmt}" not recognized')
    csv = fmt == "csv"
    header = found.pop("header", "false")
    if "quote" in found and not csv:
        raise PgError(FEATURE_NOT_SUPPORTED, "COPY quote available only in CSV mode")
    layout = TextLayout(csv=csv, delimiter=found.pop("delimiter", None) or ("," if csv else "\t"),
                        null=found.pop("null", None) if "null" in found else ("" if csv else "\\N"),
                        quote=found.pop("quote", None) or '"')
    copy = CopyOut(query, layout,
                   header=header is None or header.lower() in ("true", "on", "1", "header"))
    found.pop("encoding", None)  # the gateway speaks UTF8 only
    if "escape" in found and not csv:
        raise PgError(FEATURE_NOT_SUPPORTED, "COPY escape available only in CSV mode")
    if found.get("escape", layout.quote) == layout.quote:  # the default: the quote doubled
        found.pop("escape", None)
    if found:
        raise PgError(FEATURE_NOT_SUPPORTED, f'COPY option "{next(iter(found))}" is not supported')
    _check_layout(layout)
    return copy


def _check_layout(layout: TextLayout) -> None:
    """PostgreSQL's checks of the options together (ProcessCopyOptions): each names a
    layout whose lines could not be read back."""
    if len(layout.delimiter.encode()) != 1:
        raise PgError(FEATURE_NOT_SUPPORTED, "COPY delimiter must be a single one-byte character")
    if layout.delimiter in "\r\n":
        raise PgError(INVALID_PARAMETER_VALUE, "COPY delimiter cannot be newline or carriage return")
    if "\r" in layout.null or "\n" in layout.null:
        raise PgError(INVALID_PARAMETER_VALUE,
                      "COPY null representation cannot use newline or carriage return")
    if not layout.csv and layout.delimiter in "\\.abcdefghijklmnopqrstuvwxyz0123456789":
        raise PgError(INVALID_PARAMETER_VALUE, f'COPY delimiter cannot be "{layout.delimiter}"')
    if layout.csv and len(layout.quote.encode()) != 1:
        raise PgError(FEATURE_NOT_SUPPORTED, "COPY quote must be a single one-byte character")
    if layout.csv and layout.delimiter == layout.quote:
        raise PgError(INVALID_PARAMETER_VALUE, "COPY delimiter and quote must be different")
    if layout.delimiter in layout.null:
        raise PgError(FEATURE_NOT_SUPPORTED, "COPY delimiter must not appear in the NULL specification")
    if layout.csv and layout.quote in layout.null:
        raise PgError(FEATURE_NOT_SUPPORTED, "CSV quote character must not appear in the NULL specification")


async def run(session: SessionCore, sql: str) -> None:
    """Answer one COPY statement on `session`: CopyOutResponse, CopyData..., CopyDone,
    CommandComplete (the caller sends ReadyForQuery)."""
    copy = parse_copy(sql)
    plan = await session.plan_query(copy.query)
    engine = session.engine_for(plan)[0]
    await session.announce_engine_start(session.ctx.executor, plan, engine)
    stream = await session.ctx.executor.run(plan, [], engine, session.dynamic_filtering,
                                            session.statement_memory())
    try:
        session.write(encoder.copy_out_response(0, [0] * len(stream.schema)))
        if copy.header:
            session.write(encoder.copy_data(header_line(stream.schema.names, copy.layout)))
        sent = 0
        loop = asyncio.get_running_loop()
        async for batch in stream:
            lines = functools.partial(copy_data, batch, copy.layout, session.settings.timezone)
            # Off the event loop when big, as result rows are (Arrow compute frees the GIL).
            session.write(await loop.run_in_executor(None, lines) if batch.num_rows > OFFLOAD_ROWS
                          else lines())
            sent += batch.num_rows
            if session.buffered >= FLUSH_BYTES:  # bounded memory for big exports
                await session.flush()
    finally:
        await stream.aclose()
    session.write(encoder.copy_done())
    session.write(encoder.command_complete(f"COPY {sent}"))
