"""COPY ... TO STDOUT: any federated query (or a table) streamed in text or CSV format.

psql's `\\copy (select ...) to 'file'` sends `COPY (select ...) TO STDOUT`, and drivers'
bulk-export calls do the same. The query is planned and run like any SELECT; its rows are
formatted a column at a time with the same text encoders as DataRow values
(`pgwire.types.rows.encode_column`), then escaped for the chosen format and sent one row
per CopyData message, as PostgreSQL does (psycopg's row reader expects exactly that).
COPY FROM is a separate feature and is refused here with 0A000.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot.errors import TokenError
from sqlglot.tokens import Tokenizer, TokenType

from pgwire.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, PgError
from pgwire.types.table import pg_type_for_field
from pgwire.protocol import encoder
from pgwire.types.rows import TEXT_FORMAT, encode_column, join_pieces

if TYPE_CHECKING:
    from gateway.session.core import SessionCore

FLUSH_BYTES = 256 * 1024


@dataclass(frozen=True)
class CopyOut:
    query: str
    csv: bool = False
    header: bool = False
    delimiter: str = "\t"
    null: str = "\\N"
    quote: str = '"'


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


_WORD = re.compile(r"""\s*(?:,\s*)?('(?:[^']|'')*'|[A-Za-z0-9_]+)""")
_VALUED_OLD = {"delimiter", "null", "quote", "escape", "encoding"}


def _words(text: str) -> list[str]:
    words, pos = [], 0
    while text[pos:].strip():
        m = _WORD.match(text, pos)
        if m is None:
            raise PgError(SYNTAX_ERROR, f'syntax error in COPY options at "{text[pos:].strip()}"')
        words.append(m.group(1))
        pos = m.end()
    return words


def _value(word: str) -> str:
    return word[1:-1].replace("''", "'") if word.startswith("'") else word


def _options(rest: str, query: str) -> CopyOut:
    """Both option syntaxes: `WITH (FORMAT csv, HEADER)` and the old `WITH CSV HEADER`."""
    rest = rest.strip()
    if rest.upper().startswith("WITH"):
        rest = rest[4:].strip()
    found: dict[str, str | None] = {}
    if rest.startswith("(") and rest.endswith(")"):
        for item in rest[1:-1].split(","):
            words = _words(item)
            if words:
                found[words[0].lower()] = _value(words[1]) if len(words) > 1 else None
    else:
        words = _words(rest)
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
        raise PgError("22023", f'COPY format "{fmt}" not recognized')
    csv = fmt == "csv"
    header = found.pop("header", "false")
    copy = CopyOut(query, csv=csv,
                   header=header is None or header.lower() in ("true", "on", "1", "header"),
                   delimiter=found.pop("delimiter", None) or ("," if csv else "\t"),
                   null=found.pop("null", None) if "null" in found else ("" if csv else "\\N"),
                   quote=found.pop("quote", None) or '"')
    found.pop("encoding", None)  # the gateway speaks UTF8 only
    if found:
        raise PgError(FEATURE_NOT_SUPPORTED, f'COPY option "{next(iter(found))}" is not supported')
    if len(copy.delimiter) != 1:
        raise PgError(FEATURE_NOT_SUPPORTED, "COPY delimiter must be a single one-byte character")
    return copy


_TEXT_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                               "\b": "\\b", "\f": "\\f", "\v": "\\v"})


def _format_value(value: str | None, copy: CopyOut) -> str:
    if value is None:
        return copy.null
    if not copy.csv:
        text = value.translate(_TEXT_ESCAPES)
        return text.replace(copy.delimiter, "\\" + copy.delimiter) if copy.delimiter != "\t" else text
    needs_quotes = value == copy.null or any(c in value for c in (copy.delimiter, copy.quote, "\n", "\r"))
    if needs_quotes:
        return copy.quote + value.replace(copy.quote, copy.quote * 2) + copy.quote
    return value


def format_rows(batch: pa.RecordBatch, copy: CopyOut, timezone: str) -> list[bytes]:
    """Each row of `batch` as one COPY line (with its newline)."""
    columns = []
    for column, field in zip(batch.columns, batch.schema):
        encoded = encode_column(column, pg_type_for_field(field), TEXT_FORMAT, timezone)
        values = join_pieces(encoded, batch.num_rows).to_pylist()
        columns.append([None if v is None else v.decode("utf-8") for v in values])
    lines = []
    for row in zip(*columns) if columns else [() for _ in range(batch.num_rows)]:
        line = copy.delimiter.join(_format_value(v, copy) for v in row) + "\n"
        lines.append(line.encode("utf-8"))
    return lines


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
            names = [_format_value(f.name, copy) for f in stream.schema]
            session.write(encoder.copy_data((copy.delimiter.join(names) + "\n").encode("utf-8")))
        sent = 0
        async for batch in stream:
            for line in format_rows(batch, copy, session.settings.timezone):
                session.write(encoder.copy_data(line))
            sent += batch.num_rows
            if session.buffered >= FLUSH_BYTES:  # bounded memory for big exports
                await session.flush()
    finally:
        await stream.aclose()
    session.write(encoder.copy_done())
    session.write(encoder.command_complete(f"COPY {sent}"))
