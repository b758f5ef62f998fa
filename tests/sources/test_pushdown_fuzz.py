"""Generated literals and identifiers through pushdown: no escape, on any source (hypothesis).

A pushed filter or projection is SQL the gateway writes for a source with the source's
own quoting rules, from values and names the client chose. If the quoting were wrong, a
value could end the literal early and the rest of it would run as SQL. This test sends
values built to do that (quotes, backslashes, `$$`, `--`, `/*`, `E'`, unicode, numbers in
odd forms) and names built to end a quoted identifier (`"we""ird"`), and checks:
- the answer equals the one computed independently: each row inserted with a generated
  value is found when its value is asked for and no other row is (`=`, IN lists, LIKE
  patterns escaped by the test), a literal in the select list comes back unchanged, an
  alias comes back as the column name, a table or column with a generated name is read;
- the source's own statement log (tests/sources/statement_logs.py) shows the one
  statement the gateway meant to run and no other statement touching the table, and the
  table still holds what was inserted.
An escape shows as an error, a wrong answer, extra statements or a changed table.

Each source (PostgreSQL, MariaDB, SQLite) is mounted by its own gateway together with a
second PostgreSQL database whose default is `standard_conforming_strings = off` (set with
ALTER DATABASE, so the gateway's pooled connections get it): there a backslash in an
ordinary literal is an escape character, the classic way out of a quoted string.
Literals reach the gateway in the SQL text of a simple Query (quoted for PostgreSQL by the
test, in several spellings) and as bind parameters of the extended protocol (raw socket,
tests/support/rawpg.py, so exactly those messages are sent). Values are batched, hundreds
per statement; `FEDGATE_FUZZ_EXAMPLES` scales the number of batches (`make fuzz`).
"""

from __future__ import annotations

import asyncio
import random
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import asyncmy
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import rawpg
from tests.support.fuzz import fuzz_examples
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.mariadb import MariaDBServer
from tests.support.postgres import PostgresServer

# Values per statement, and batches per test by default: about 10,000 generated literals
# and 10,000 generated identifiers over the three source kinds in a default run.
BATCH = 200
ALIASES_PER_STATEMENT = 100
LITERAL_BATCHES = fuzz_examples(17, cost=BATCH)
ALIAS_BATCHES = fuzz_examples(34, cost=ALIASES_PER_STATEMENT)
KINDS = ("postgres", "mysql", "sqlite")
# Tables with generated names created in each source before the gateway starts (names
# from a seeded generator: the catalog is read once, so they cannot come per example).
WEIRD_TABLES = fuzz_examples(60, cost=200)

# --------------------------------------------------------------------------- values

# Pieces that end or change a quoted string or identifier in some SQL dialect.
NASTY = ["'", "''", "\\", "\\'", "'\\", "\\\\", '"', '""', "`", "``", "$$", "$a$", "$1",
         "--", "/*", "*/", ";", "E'", "e'", "U&'", "N'", "X'", "B'", "\n", "\r", "\t", "%",
         "_", "\\%", "\\_", "[", "]", "?", ":x", "@", "#", "{", "}", "\\x27", "\\047",
         "\\u0027", "' OR '1'='1", "'; DROP TABLE vals; --", "\\'; DELETE FROM vals; --",
         "$$; DROP TABLE vals; $$", "*/ DROP TABLE vals /*", " ", "  ", "\u00e9", "\u2603",
         "\U0001f600", "\u00a0", "\u200b", "\u2028", "\ufeff", "\u02bc", "\uff07", "\u0000"]
# Text without NUL (PostgreSQL text cannot hold it) and without lone surrogates.
CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\0")
pieces = st.one_of(st.sampled_from([p for p in NASTY if "\0" not in p]),
                   st.text(CHARS, max_size=6))
texts = st.lists(pieces, max_size=6).map("".join)
# Where random characters come from: ASCII, Latin-1, the rest of the BMP, emoji and beyond.
CHAR_RANGES = [(0x01, 0x7F), (0x01, 0x7F), (0x80, 0xFF), (0x100, 0xD7FF), (0xE000, 0xFFFF),
               (0x10000, 0x10FFFF)]
SAFE_NASTY = [p for p in NASTY if "\0" not in p]


def random_text(rng: random.Random) -> str:
    """A value like `texts` draws, from a seeded generator: hypothesis draws a few dozen
    values per batch itself (large draws make it slow) and seeds the rest."""
    parts = []
    for _ in range(rng.randint(0, 6)):
        if rng.random() < 0.5:
            parts.append(rng.choice(SAFE_NASTY))
        else:
            low, high = rng.choice(CHAR_RANGES)
            parts.append("".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 6))))
    return "".join(parts)


@st.composite
def generated_batch(draw: st.DrawFn, size: int, drawn: st.SearchStrategy[str],
                    keep: Callable[[str], bool] = lambda v: True,
                    key: Callable[[str], str] = lambda v: v) -> tuple[list[str], random.Random]:
    """`size` distinct values (by `key`): up to 20 drawn by hypothesis, the rest from a
    generator it seeds; returns the generator too, for the batch's other choices."""
    values: dict[str, str] = {}
    for value in draw(st.lists(drawn, max_size=20)):
        if keep(value):
            values.setdefault(key(value), value)
    rng = random.Random(draw(st.integers(0, 2**64 - 1)))
    while len(values) < size:
        value = random_text(rng)
        if keep(value):
            values.setdefault(key(value), value)
    return list(values.values())[:size], rng


def pg_literal(value: str, style: str) -> str:
    """`value` as a PostgreSQL string literal (standard_conforming_strings = on, as the
    gateway reports): plain, E'' with backslash escapes, or dollar-quoted."""
    if style == "escape":
        return "E'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if style == "dollar":
        # The string ends at the tag's first occurrence: pick one that occurs only there.
        tag = "$q$"
        while (value + tag).find(tag) != len(value):
            tag = tag[:-1] + "q$"
        return tag + value + tag
    return "'" + value.replace("'", "''") + "'"


LITERAL_STYLES = ("plain", "plain", "escape", "dollar")


def spell(value: str, rng: random.Random) -> str:
    return pg_literal(value, rng.choice(LITERAL_STYLES))


def like_pattern(value: str) -> str:
    """A LIKE pattern matching exactly `value` (backslash is LIKE's default escape)."""
    return re.sub(r"([\\%_])", r"\\\1", value)


# Integer spellings PostgreSQL 15 reads as the same number.
def odd_number(n: int, style: int) -> str:
    forms = [str(n), f"+{n}", f"-(-{n})", f"{n}.0", f"{n}.", f"{n}e0", f"{n}E+0",
             f"'{n}'", f"{n}::int", f"CAST({n} AS bigint)", f"00{n}", f"({n})",
             f"{n * 10}e-1", f"{n}.000000000000000000000", f"'  {n}  '::int",
             f"{n}::numeric(20,5)", f"({n} + 0)", f" {n} "]
    return forms[style % len(forms)]


# --------------------------------------------------------------------------- sources


@dataclass
class Source:
    """One source as the test sees it: how to reach it directly, and where it logs."""

    kind: str
    name: str  # the source's name in the gateway
    log: Path
    dsn: str = ""
    path: Path | None = None
    mariadb: MariaDBServer | None = None
    loop: asyncio.AbstractEventLoop | None = None
    weird: list[tuple[str, str, str]] = field(default_factory=list)  # table, column, column

    def run(self, statements: Sequence[str], rows: Sequence[tuple] = ()) -> list[tuple]:
        """Run statements directly on the source (the last with `rows` as its parameter
        sets, if any); returns the last statement's rows."""
        if self.kind == "postgres":
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                result: list[tuple] = []
                for i, sql in enumerate(statements):
                    if rows and i == len(statements) - 1:
                        conn.cursor().executemany(sql.replace("?", "%s"), rows)
                    else:
                        cur = conn.execute(sql)
                        result = cur.fetchall() if cur.description else []
                return result
        if self.kind == "sqlite":
            con = sqlite3.connect(self.path)
            try:
                result = []
                for i, sql in enumerate(statements):
                    if rows and i == len(statements) - 1:
                        con.executemany(sql, rows)
                    else:
                        result = con.execute(sql).fetchall()
                con.commit()
                return result
            finally:
                con.close()
        assert self.loop is not None and self.mariadb is not None
        return self.loop.run_until_complete(self._mysql(statements, rows))

    async def _mysql(self, statements: Sequence[str], rows: Sequence[tuple]) -> list[tuple]:
        assert self.mariadb is not None
        conn = await asyncmy.connect(host=self.mariadb.host, port=self.mariadb.port,
                                     user="root", database="fuzz", autocommit=True,
                                     charset="utf8mb4")
        try:
            async with conn.cursor() as cur:
                result: list[tuple] = []
                for i, sql in enumerate(statements):
                    if rows and i == len(statements) - 1:
                        await cur.executemany(sql.replace("?", "%s"), rows)
                    else:
                        await cur.execute(sql)
                        result = list(await cur.fetchall() or [])
                return result
        finally:
            conn.close()

    def literal(self, value: str) -> str:
        """`value` as a string literal of this source, whatever its settings (the
        PostgreSQL database with standard_conforming_strings = off included)."""
        if self.kind == "postgres":
            return "E'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        if self.kind == "mysql":
            return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
        return "'" + value.replace("'", "''") + "'"

    def quote(self, name: str) -> str:
        if self.kind == "mysql":
            return "`" + name.replace("`", "``") + "`"
        return '"' + name.replace('"', '""') + '"'


def weird_names(rng: random.Random, kind: str, count: int) -> list[tuple[str, str, str]]:
    """(table, column, column) names built from NASTY pieces and random characters, within
    what each source allows: PostgreSQL 63 bytes, MariaDB 64 characters of the Basic
    Multilingual Plane without trailing white space (and column names that differ in more
    than case), SQLite anything but NUL and the sqlite_ prefix."""
    alphabet = [p for p in NASTY if "\0" not in p] + list("abcXYZ019 .-+*/")

    def one(taken: set[str]) -> str:
        while True:
            name = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
            if kind == "mysql":
                name = "".join(c for c in name if ord(c) < 0x10000)[:40].rstrip()
            if kind == "postgres":
                name = name.encode()[:60].decode(errors="ignore")
            if name and name.casefold() not in taken and not name.lower().startswith("sqlite_"):
                taken.add(name.casefold())
                return name

    tables: set[str] = {"vals", "canary"}
    out = []
    for _ in range(count):
        columns: set[str] = set()
        out.append((one(tables), one(columns), one(columns)))
    return out


VALS_DDL = {"postgres": "CREATE TABLE vals (id int PRIMARY KEY, s text)",
            "mysql": "CREATE TABLE vals (id int PRIMARY KEY, s text)",
            "sqlite": "CREATE TABLE vals (id INTEGER PRIMARY KEY, s TEXT)"}


def prepare(source: Source) -> None:
    """vals (refilled by each batch), canary (never touched) and the weird tables, whose
    text column holds the table's own name: reading it back proves the right table."""
    rng = random.Random(f"fedgate-{source.name}")
    source.weird = weird_names(rng, source.kind, WEIRD_TABLES)
    statements = [VALS_DDL[source.kind], "CREATE TABLE canary (id int)",
                  "INSERT INTO canary VALUES (42)"]
    q = source.quote
    for table, first, second in source.weird:
        statements.append(f"CREATE TABLE {q(table)} ({q(first)} int, {q(second)} text)")
        statements.append(f"INSERT INTO {q(table)} VALUES (7, {source.literal(table)})")
    source.run(statements)


@dataclass
class Federation:
    gateway: GatewayProcess
    sources: dict[str, Source]  # kind -> source; "postgres_scs_off" too


@pytest.fixture(scope="module")
def fuzz_federation(tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer,
                    mariadb_server: MariaDBServer) -> Iterator[Federation]:
    root = tmp_path_factory.mktemp("pushdown_fuzz")
    loop = asyncio.new_event_loop()
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        for database, extra in (("fuzz_pg", ""), ("fuzz_pg_scs_off", "off")):
            admin.execute(f"DROP DATABASE IF EXISTS {database}")
            admin.execute(f"CREATE DATABASE {database}")
            admin.execute(f"ALTER DATABASE {database} SET log_statement = 'all'")
            if extra:
                admin.execute(f"ALTER DATABASE {database} SET standard_conforming_strings = off")
    base = postgres_server.dsn.rsplit("/", 1)[0]
    sources = {
        "postgres": Source("postgres", "pg", postgres_server.logfile, dsn=f"{base}/fuzz_pg"),
        "postgres_scs_off": Source("postgres", "pgoff", postgres_server.logfile,
                                   dsn=f"{base}/fuzz_pg_scs_off"),
        "mysql": Source("mysql", "my", mariadb_server.general_log, mariadb=mariadb_server,
                        loop=loop),
        "sqlite": Source("sqlite", "lite", root / "sqlite.log", path=root / "fuzz.db"),
    }

    async def create_mysql_database() -> None:
        conn = await asyncmy.connect(host=mariadb_server.host, port=mariadb_server.port,
                                     user="root", autocommit=True)
        async with conn.cursor() as cur:
            await cur.execute("DROP DATABASE IF EXISTS fuzz")
            await cur.execute("CREATE DATABASE fuzz CHARACTER SET utf8mb4 "
                              "COLLATE utf8mb4_general_ci")
        conn.close()

    loop.run_until_complete(create_mysql_database())
    for source in sources.values():
        prepare(source)
    # No periodic catalog refresh: its statements (PRAGMA table_info("vals") ...) would
    # land in the statement logs in the middle of a check.
    config = f"""
[catalog]
search_path = ["pg"]
refresh_seconds = 0
[sources.pg]
kind = "postgres"
dsn = "{sources['postgres'].dsn}"
[sources.pgoff]
kind = "postgres"
dsn = "{sources['postgres_scs_off'].dsn}"
[sources.my]
kind = "mysql"
dsn = "{mariadb_server.dsn('fuzz')}"
[sources.lite]
kind = "sqlite"
path = "{sources['sqlite'].path}"
statement_log = "{sources['sqlite'].log}"
"""
    gateway = start_gateway(config, root / "gateway")
    try:
        yield Federation(gateway, sources)
    finally:
        gateway.stop()
        loop.close()


# --------------------------------------------------------------------------- the gateway


@dataclass
class Answer:
    columns: list[str]
    rows: list[list[str | None]]
    error: dict[str, str] | None


def answer_of(messages: list[rawpg.Message]) -> Answer:
    columns: list[str] = []
    for message in messages:
        if message.type == "T":
            columns = [c["name"] for c in rawpg.parse_row_description(message.payload)]
    errors = rawpg.errors(messages)
    return Answer(columns, rawpg.data_rows(messages), errors[0] if errors else None)


def simple(conn: rawpg.RawPG, sql: str) -> Answer:
    return answer_of(conn.simple(sql))


def extended(conn: rawpg.RawPG, sql: str, params: Sequence[str]) -> Answer:
    """Parse (parameters typed text), Bind (text values), Describe portal, Execute, Sync."""
    conn.send(rawpg.parse(sql, param_oids=[25] * len(params)),
              rawpg.bind(params=[p.encode() for p in params]),
              rawpg.describe("P"), rawpg.execute(), rawpg.sync())
    return answer_of(conn.read_until_ready())


@pytest.fixture(scope="module")
def client(fuzz_federation: Federation) -> Iterator[rawpg.RawPG]:
    gw = fuzz_federation.gateway
    conn = rawpg.RawPG.connect(gw.host, gw.port, timeout=60)
    yield conn
    conn.close()


# Statements that change something: none may reach a source from a read.
WRITE = re.compile(r"^\W*(INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|TRUNCATE|REPLACE|GRANT|"
                   r"ATTACH|DETACH|PRAGMA|VACUUM|COPY\s+\w)", re.I)
# The zero-row form some roads run to describe a statement before running it.
DESCRIBE = re.compile(r"LIMIT 0\b")


# Where a log entry starts. Values may hold any line break but "\n" (\r, U+2028, U+0085 ...),
# so logs are split on "\n" only, not with str.splitlines() as statement_logs.py does.
PG_ENTRY = re.compile(r"^\d{4}-\d\d-\d\d [\d:.]+ \w+ \[\d+\] ")
PG_STATEMENT = re.compile(r"LOG:\s+(?:statement|execute [^:]*):\s(.*)", re.S)
MY_ENTRY = re.compile(
    r"^(?:\d{6}\s+\d{1,2}:\d\d:\d\d)?\s+\d+\s+([A-Z][a-z]+(?: [A-Z][a-z]+)*)\t(.*)", re.S)


class SourceLog:
    """The statements a source logged since `mark` (one entry per statement)."""

    def __init__(self, source: Source) -> None:
        self.kind, self.path = source.kind, source.log
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def statements(self) -> list[str]:
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            lines = f.read().decode(errors="replace").split("\n")
        if self.kind not in ("postgres", "mysql"):
            return [line for line in lines if line]
        entry = PG_ENTRY if self.kind == "postgres" else MY_ENTRY
        entries: list[str] = []
        for line in lines:
            if entry.search(line) or not entries:
                entries.append(line)
            else:
                entries[-1] += "\n" + line
        out = []
        for text in entries:
            if self.kind == "postgres":
                found = PG_STATEMENT.search(text)
                if found:
                    out.append(found.group(1))
            else:
                found = MY_ENTRY.search(text)
                if found and found.group(1) == "Query":
                    out.append(found.group(2))
        return out

    def wait_for(self, needle: re.Pattern[str], timeout: float = 20.0) -> list[str]:
        """Logs can lag behind the answer: the server writes them, not us (seconds behind
        on a loaded machine; the wait ends as soon as the statement is there)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.statements()
            if any(needle.search(s) for s in found) or time.monotonic() > deadline:
                return found
            time.sleep(0.02)


def assert_no_writes(log: SourceLog, what: str) -> list[str]:
    logged = log.statements()
    writes = [s for s in logged if WRITE.search(s)]
    assert not writes, f"{what}: the source ran writes: {writes}"
    return logged


class Shipped:
    """What one gateway statement made the source run, from the source's own log."""

    def __init__(self, source: Source, table: str) -> None:
        # The table as a word: the planner's statistics read names pg_stats'
        # most_common_vals, which is no statement on the table.
        self.source, self.table = source, re.compile(rf"\b{re.escape(table)}\b")
        self.log = SourceLog(source)

    def check(self, what: str) -> None:
        self.log.wait_for(self.table)
        logged = assert_no_writes(self.log, what)
        ran = [s for s in logged if self.table.search(s) and not DESCRIBE.search(s)]
        assert len(ran) == 1, f"{what}: expected one statement on the source, got {ran}"


def check_unchanged(source: Source, expected_rows: int) -> None:
    assert source.run(["SELECT count(*) FROM vals"])[0][0] == expected_rows
    assert source.run(["SELECT id FROM canary"]) == [(42,)]


def refill(source: Source, values: Sequence[str]) -> None:
    source.run(["DELETE FROM vals", "INSERT INTO vals VALUES (?, ?)"],
               list(enumerate(values, start=1)))


def ids(answer: Answer, what: str) -> list[int]:
    assert answer.error is None, f"{what}: {answer.error}"
    return sorted(int(row[0]) for row in answer.rows)


def assert_found(answer: Answer, expected: list[int], values: list[str], spelled: list[str],
                 what: str) -> None:
    """The rows found are exactly `expected`; names the values (and their spelling in
    the statement) that went missing or came in extra."""
    got = ids(answer, what)
    missing = [(values[i - 1], spelled[i - 1]) for i in sorted(set(expected) - set(got))]
    extra = [(values[i - 1], spelled[i - 1]) for i in sorted(set(got) - set(expected))]
    assert not missing and not extra and len(got) == len(expected), (
        f"{what}: missing {missing}, extra {extra}")


# --------------------------------------------------------------------------- literals

LITERALS = settings(max_examples=LITERAL_BATCHES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.large_base_example])


def literal_batch(fed: Federation, conn: rawpg.RawPG, key: str, values: list[str],
                  rng: random.Random) -> None:
    """One batch of generated values through every literal road to one source."""
    source = fed.sources[key]
    table = f"{source.name}.vals"
    refill(source, values)
    every = list(range(1, len(values) + 1))
    chosen = sorted(rng.sample(every, rng.randint(1, len(values) // 2)))
    spelled = [spell(v, rng) for v in values]

    # = on each value, OR-ed (one conjunct the source evaluates whole).
    shipped = Shipped(source, "vals")
    ored = " OR ".join(f"s = {spelled[i - 1]}" for i in chosen)
    assert_found(simple(conn, f"SELECT id FROM {table} WHERE {ored}"), chosen, values, spelled,
                 "= OR")
    shipped.check("= OR")

    # IN list of all values in the SQL text, and of the chosen ones as bind parameters.
    shipped = Shipped(source, "vals")
    in_list = ", ".join(spelled)
    assert_found(simple(conn, f"SELECT id FROM {table} WHERE s IN ({in_list})"), every, values,
                 spelled, "IN")
    shipped.check("IN literal")
    shipped = Shipped(source, "vals")
    marks = ", ".join(f"${i}" for i in range(1, len(chosen) + 1))
    assert_found(extended(conn, f"SELECT id FROM {table} WHERE s IN ({marks})",
                          [values[i - 1] for i in chosen]), chosen, values, values, "IN bind")
    shipped.check("IN bind")

    # LIKE with the value escaped as a pattern: matches exactly its row (values are
    # unique), in the SQL text and as a parameter.
    few = chosen[:20]
    shipped = Shipped(source, "vals")
    likes = " OR ".join(f"s LIKE {pg_literal(like_pattern(values[i - 1]), 'plain')}"
                        for i in few)
    patterns = [pg_literal(like_pattern(v), "plain") for v in values]
    assert_found(simple(conn, f"SELECT id FROM {table} WHERE {likes}"), few, values, patterns,
                 "LIKE")
    shipped.check("LIKE")
    shipped = Shipped(source, "vals")
    likes = " OR ".join(f"s LIKE ${n}" for n in range(1, len(few) + 1))
    assert_found(extended(conn, f"SELECT id FROM {table} WHERE {likes}",
                          [like_pattern(values[i - 1]) for i in few]), few, values,
                 patterns, "LIKE bind")
    shipped.check("LIKE bind")

    # Literals in the select list of a statement the source runs whole: each comes back
    # unchanged, as its own column.
    shipped = Shipped(source, "vals")
    columns = ", ".join(f"{lit} AS c{n}" for n, lit in enumerate(spelled[:100]))
    answer = simple(conn, f"SELECT id, {columns} FROM {table} WHERE id = 1")
    assert answer.error is None, answer.error
    assert answer.rows == [["1", *values[:100]]]
    shipped.check("select list")

    # Integers in odd spellings.
    shipped = Shipped(source, "vals")
    numbers = ", ".join(odd_number(i, rng.randrange(100)) for i in chosen)
    assert ids(simple(conn, f"SELECT id FROM {table} WHERE id IN ({numbers})"),
               "numbers") == chosen
    shipped.check("numbers")
    check_unchanged(source, len(values))


@pytest.mark.parametrize("key", KINDS)
def test_generated_literals_do_not_escape(fuzz_federation: Federation, client: rawpg.RawPG,
                                          key: str) -> None:
    @LITERALS
    @given(generated_batch(BATCH, texts))
    def batch(generated: tuple[list[str], random.Random]) -> None:
        literal_batch(fuzz_federation, client, key, *generated)

    batch()


def nul_literals(client: rawpg.RawPG, table: str) -> list[tuple[str, Answer]]:
    return [("bind", extended(client, f"SELECT id FROM {table} WHERE s = $1", ["a\0b"])),
            ("E''", simple(client, f"SELECT id FROM {table} WHERE s = E'a\\000b'")),
            ("U&''", simple(client, f"SELECT id FROM {table} WHERE s = U&'a\\0000b'"))]


@pytest.mark.parametrize("key", KINDS)
def test_nul_in_a_literal_is_a_clean_error(fuzz_federation: Federation, client: rawpg.RawPG,
                                           key: str) -> None:
    """PostgreSQL text cannot hold NUL: an E'' or U&'' escape carrying one is refused with
    an error (22021 in PostgreSQL), never sent on or truncated, and the session goes on;
    so is a bind parameter carrying one."""
    table = f"{fuzz_federation.sources[key].name}.vals"
    for how, answer in nul_literals(client, table):
        assert answer.error is not None, (how, answer)
        assert answer.error["C"] != "XX000", (how, answer.error)
    assert simple(client, "SELECT 1").rows == [["1"]]


# --------------------------------------------------------------------------- identifiers

# Aliases PostgreSQL keeps whole: no NUL, at most 63 bytes (NAMEDATALEN - 1); unique even
# ignoring case, as MySQL compares column names without case.
def alias_allowed(name: str) -> bool:
    return 0 < len(name.encode()) <= 63


alias_texts = st.lists(pieces, min_size=1, max_size=4).map("".join)
alias_batches = {kind: generated_batch(ALIASES_PER_STATEMENT, alias_texts,
                                       keep=alias_allowed,
                                       key=str.casefold) for kind in KINDS}
ALIASES = settings(max_examples=ALIAS_BATCHES, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.large_base_example])


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@pytest.mark.parametrize("key", KINDS)
def test_generated_aliases_come_back_as_column_names(fuzz_federation: Federation,
                                                     client: rawpg.RawPG, key: str) -> None:
    source = fuzz_federation.sources[key]
    refill(source, ["x"])

    @ALIASES
    @given(alias_batches[key])
    def batch(generated: tuple[list[str], random.Random]) -> None:
        names = generated[0]
        shipped = Shipped(source, "vals")
        columns = ", ".join(f"{'id' if n % 2 else 's'} AS {quoted(a)}"
                            for n, a in enumerate(names))
        answer = simple(client, f"SELECT {columns} FROM {source.name}.vals WHERE id = 1")
        assert answer.error is None, answer.error
        assert answer.columns == names
        assert answer.rows == [["x" if n % 2 == 0 else "1" for n in range(len(names))]]
        shipped.check("aliases")
        check_unchanged(source, 1)

    batch()


@pytest.mark.parametrize("key", KINDS)
def test_tables_and_columns_with_generated_names(fuzz_federation: Federation,
                                                 client: rawpg.RawPG, key: str) -> None:
    """Every weird table of the source, read through the gateway by its quoted name."""
    source = fuzz_federation.sources[key]
    log = SourceLog(source)
    for table, first, second in source.weird:
        sql = (f"SELECT {quoted(first)}, {quoted(second)} "
               f"FROM {source.name}.{quoted(table)} WHERE {quoted(first)} = 7")
        answer = simple(client, sql)
        assert answer.error is None, (table, answer.error)
        assert answer.rows == [["7", table]], table
        assert answer.columns == [first, second]
    assert_no_writes(log, "weird tables")
    check_unchanged(source, source.run(["SELECT count(*) FROM vals"])[0][0])
