"""How Spark reads a remote fragment itself instead of receiving it from the gateway.

On a cluster the rows of a big fragment should not funnel through the gateway process:
Spark reads them in parallel. This module turns one fragment (its SQL in the source's
dialect, with parameters bound as literals) plus its source's connection settings into a
`DirectRead`, a description Spark turns into a DataFrame on its own thread:

- PostgreSQL / MySQL (MariaDB): Spark's JDBC source with the fragment SQL as the query.
  When the fragment is estimated large and its biggest table has an integer primary key
  (its first column), the read is partitioned on that key (`partitionColumn`,
  `lowerBound`, `upperBound`, `numPartitions`; the bounds from a min/max query on the
  table, which its index answers at once). The fragment passes the key through, or gains
  it as one more column that Spark drops again. Spark then sends
  `SELECT … FROM (fragment) q WHERE key >= a AND key < b` per partition, and the source
  pushes that range into the fragment.
- Parquet / CSV: `spark.read` over each file or folder the fragment names, and the
  fragment itself (DuckDB dialect, transpiled by sqlglot) as Spark SQL over them, so its
  projection and filters are applied in Spark's scan.

Which fragments Spark reads this way is the `[engine] spark_reads_sources` setting
(`ReadSettings`). Under "auto", a cluster reads every fragment it can; a local Spark
(`local[...]`) reads big Parquet/CSV and MySQL fragments itself but never PostgreSQL ones.
Its JDBC reads would pass through this same machine anyway, only slower than the
gateway's own: JDBC converts rows one at a time in the JVM; each partition query scans the
table again whenever PostgreSQL answers a wide key range with a sequential scan (Q3 at
SF 1: two partitions, two full scans of lineitem); and a plan that reads one fragment
twice (Q18's lineitem, for the join and for the IN subquery) runs every scan again. The
gateway reads the fragment once, narrowed by the dynamic filters, split into ctid ranges
over several connections (connectors.postgres.parallel), shared between identical copies
(gateway.executor.shared_reads), and hands Spark a Parquet file it scans as often as it likes
(connectors.engines.spark_handover).

A PostgreSQL read starts (`sessionInitStatement`) as the gateway's own reads run: read-only,
in UTC, then under the session's `source_roles` role and with the settings it forwards
(`connectors.postgres.roles.session_as_now`).

Credentials travel only in the JDBC options, never in the URL, the description EXPLAIN
ANALYZE prints, or errors.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlparse

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from connectors.base import Source, TableInfo
from connectors.engines.spark_literals import Unbindable, bind
from connectors.postgres.roles import session_as_now
from connectors.postgres.tls import ssl_parameters
from connectors.table_stats import SourceCatalog

# Debian's drivers (libpostgresql-jdbc-java, libmariadb-java), given to a local Spark.
JARS = {"postgres": "/usr/share/java/postgresql.jar",
        "mysql": "/usr/share/java/mariadb-java-client.jar"}
DRIVERS = {"postgres": "org.postgresql.Driver", "mysql": "org.mariadb.jdbc.Driver"}
FETCH_ROWS = 10_000
# PostgreSQL-like session settings for the JDBC connections (the gateway's own
# connections use the same): UTC, standard strings (the shipped SQL is written for them,
# whatever the database's default), and read-only since a fragment only reads.
PG_SESSION = ("SET TIME ZONE 'UTC'; SET extra_float_digits = 3; "
              "SET standard_conforming_strings = on; "
              "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
MYSQL_SESSION = "SET time_zone = '+00:00', NAMES utf8mb4 COLLATE {collation}"
APPLICATION = "fedgate-spark"


def reads_name(label: str) -> str:
    """The application_name of the JDBC connections one statement's reads open."""
    return f"{APPLICATION}-{label}"


def labelled_url(url: str, label: str) -> str:
    """A PostgreSQL JDBC URL whose connections carry statement `label` in their
    application_name (`reads_name`), so a cancel can find them."""
    return url.replace(f"ApplicationName={APPLICATION}", f"ApplicationName={reads_name(label)}")


async def cancel_postgres_reads(dsn: str, label: str) -> int:
    """Cancel the queries the JDBC reads (and a move's writes, connectors.engines.
    spark_writes) of statement `label` run on PostgreSQL: a read blocked in the driver's
    socket does not notice its Spark task being killed. Returns how many backends were
    told to cancel."""
    import asyncpg  # the gateway's own PostgreSQL driver

    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        return await conn.fetchval(
            "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = $1 AND pid <> pg_backend_pid()", reads_name(label), timeout=5)
    finally:
        await conn.close()


@dataclass(frozen=True)
class ReadSettings:
    mode: str = "auto"  # "auto" | "always" | "never"
    threshold_rows: int = 1_000_000  # auto: fragments estimated at this many rows or more
    partition_rows: int = 500_000  # about this many rows per JDBC partition
    cluster: bool = False  # auto reads every fragment it can when Spark is a cluster


# "auto" on a local Spark: source kinds the gateway reads faster than Spark itself would
# (see the module docstring); they are always handed over there.
LOCAL_HANDOVER_KINDS = frozenset({"postgres"})


@dataclass(frozen=True)
class DirectRead:
    """What Spark needs to read one fragment itself (credentials kept out of repr)."""

    fragment: str  # frag_0, ...
    source: str
    kind: str  # "jdbc" or "files"
    summary: str  # for EXPLAIN ANALYZE: how it is read, without secrets
    options: Mapping[str, str] = field(default_factory=dict)  # jdbc
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)
    views: tuple[tuple[str, str, str, str | None], ...] = ()  # files: (view, path, format, ddl)
    sql: str = ""  # files: the fragment as Spark SQL over `views`
    drop: tuple[str, ...] = ()  # columns added only to partition on

    def dataframe(self, session: Any, label: str | None = None) -> Any:
        """The read as a DataFrame of `session`; on PostgreSQL its connections carry
        `label` in their application_name, so a cancel can find them."""
        if self.kind == "jdbc":
            options = dict(self.options)
            if label is not None and options.get("driver") == DRIVERS["postgres"]:
                options["url"] = labelled_url(options["url"], label)
            frame = session.read.format("jdbc").options(**options, **self.credentials).load()
            return frame.drop(*self.drop) if self.drop else frame
        for view, path, fmt, ddl in self.views:
            reader = session.read.format(fmt)
            if fmt == "csv":
                reader = reader.option("header", "true").schema(ddl)
            reader.load(path).createOrReplaceTempView(view)
        return session.sql(self.sql)


@dataclass(frozen=True)
class _Shape:
    """What partitioning needs to know about a fragment's SQL."""

    tables: dict[str, exp.Table]  # alias (or name) -> table
    outputs: dict[str, tuple[str | None, str]]  # output name -> (qualifier, column) if a bare column
    grouped: set[tuple[str | None, str]] | None  # GROUP BY columns, None when not aggregated
    splittable: bool  # no LIMIT, window or set operation at the top
    distinct: bool


def _shape(tree: exp.Expression) -> _Shape:
    if not isinstance(tree, exp.Select):
        return _Shape({}, {}, None, False, False)
    tables: dict[str, exp.Table] = {}
    sources = [tree.args.get("from_") or tree.args.get("from")] + list(tree.args.get("joins") or [])
    for node in sources:
        if node is not None and isinstance(node.this, exp.Table):
            tables[node.this.alias_or_name] = node.this
    outputs = {}
    for e in tree.expressions:
        inner = e.unalias()
        if isinstance(inner, exp.Column):
            outputs[e.alias_or_name] = (inner.table or None, inner.name)
    group = tree.args.get("group")
    aggregated = group is not None or any(e.find(exp.AggFunc) for e in tree.expressions)
    grouped = None
    if aggregated:
        grouped = {(c.table or None, c.name) for c in (group.expressions if group else ())
                   if isinstance(c, exp.Column)}
    splittable = not tree.args.get("limit") and tree.find(exp.Window) is None
    return _Shape(tables, outputs, grouped, splittable, bool(tree.args.get("distinct")))


def source_kind(source: Source) -> str | None:
    """"postgres", "mysql", "files", or None for a kind Spark does not read itself."""
    name = source.dialect.name
    if name == "postgres":
        return "postgres"
    if name == "mysql":
        return "mysql"
    if name == "duckdb-over-files" and hasattr(source, "datasets"):
        return "files"
    return None


def _pg_jdbc_query(dsn_query: str) -> str:
    """pgJDBC's URL parameters for a libpq DSN's: its TLS settings (the DSN's, else the
    PGSSL* environment variables, as the gateway's own connections read them) with
    `ssl=true` when TLS is required, and `options`; every value URL-encoded."""
    given = dict(parse_qsl(dsn_query))
    # sslmode=prefer when nobody chose one: pgJDBC's default too, so the URL stays quiet.
    tls = {k: v for k, v in ssl_parameters(given).items()
           if k != "sslmode" or "sslmode" in given or os.environ.get("PGSSLMODE")}
    parameters = [("ApplicationName", APPLICATION)]
    if tls.get("sslmode") in ("require", "verify-ca", "verify-full"):
        parameters.append(("ssl", "true"))
    parameters += [(k, tls[k]) for k in ("sslmode", "sslrootcert", "sslcert", "sslkey") if k in tls]
    if "options" in given:
        parameters.append(("options", given["options"]))
    return "&".join(f"{k}={quote(v, safe='/:')}" for k, v in parameters)


def jdbc_target(kind: str, dsn: str) -> tuple[str, dict[str, str]]:
    """A JDBC URL (no credentials in it) and the user/password properties for a DSN."""
    url = urlparse(dsn)
    if kind == "postgres" and url.scheme not in ("postgresql", "postgres"):
        raise ValueError("the PostgreSQL dsn is not a postgresql:// URL")
    if kind == "mysql" and url.scheme not in ("mysql", "mariadb"):
        raise ValueError("the MySQL dsn is not a mysql:// URL")
    if not url.hostname or url.hostname.startswith("/"):
        raise ValueError("the dsn names no TCP host (JDBC cannot use a Unix socket)")
    host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
    database = unquote(url.path.strip("/"))
    credentials = {"user": unquote(url.username or ("postgres" if kind == "postgres" else "root"))}
    if url.password:
        credentials["password"] = unquote(url.password)
    if kind == "postgres":
        return f"jdbc:postgresql://{host}:{url.port or 5432}/{database}?{_pg_jdbc_query(url.query)}", credentials
    # Spark picks its MySQL dialect (backquoted names) by the jdbc:mysql: prefix; the
    # MariaDB driver accepts that prefix.
    return f"jdbc:mysql://{host}:{url.port or 3306}/{database}?permitMysqlScheme", credentials


async def plan_read(name: str, source: Source, sql: str, params: Sequence[Any], dsn: str | None,
                    settings: ReadSettings, catalog: SourceCatalog,
                    parallelism: int) -> DirectRead | str:
    """How Spark reads fragment `name` itself, or why the gateway hands it over instead."""
    kind = source_kind(source)
    if settings.mode == "never":
        return "spark_reads_sources = never"
    if kind is None:
        return f"Spark does not read {source.dialect.name} sources itself"
    # A file source whose files Spark cannot name by a path of its own (object storage
    # read with the gateway's credentials, a Delta version's files) says why.
    cannot = getattr(source, "spark_cannot_read", None)
    if cannot is not None:
        return cannot
    if settings.mode == "auto" and not settings.cluster and kind in LOCAL_HANDOVER_KINDS:
        return ("Spark runs locally: the gateway's own reads (parallel COPY, shared, narrowed) "
                "beat its JDBC reads")
    dialect = source.dialect.sqlglot
    try:
        bound = bind(sql, params, dialect)
        tree = sqlglot.parse_one(bound, read=dialect)
    except (Unbindable, SqlglotError) as exc:
        return f"its SQL cannot be sent as text: {exc}"
    shape = _shape(tree)
    infos = {alias: await catalog.table(source, table) for alias, table in shape.tables.items()}
    estimates = [i.row_estimate for i in infos.values() if i is not None and i.row_estimate is not None]
    estimate = max(estimates) if estimates else None
    key = _partition_key(shape, infos)
    if shape.grouped is not None and key is None:
        estimate = None  # an aggregate's output size is unknown (and usually small)
    if settings.mode == "auto" and not settings.cluster and (estimate or 0) < settings.threshold_rows:
        return (f"estimated {estimate} rows, under spark_read_threshold_rows"
                if estimate is not None else "no row estimate for its output")
    if kind == "files":
        return _files_read(name, source, tree)
    if dsn is None:
        return "the source's connection settings are unknown to the engine"
    try:
        url, credentials = jdbc_target(kind, dsn)
    except ValueError as exc:
        return str(exc)
    # On PostgreSQL the reads run as the gateway's own do: under the session's role
    # there (`source_roles`) and with the settings it forwards (an `app.tenant` its
    # row-level policies read), set after the read-only characteristics.
    options = {"url": url, "driver": DRIVERS[kind], "fetchsize": str(FETCH_ROWS),
               "sessionInitStatement": "; ".join([PG_SESSION, *session_as_now(source.name)])
               if kind == "postgres" else
               MYSQL_SESSION.format(collation=await catalog.mysql_collation(source))}
    summary = f"JDBC {url.split('?')[0]}"  # the URL carries no credentials
    partitions = min(parallelism, math.ceil((estimate or 0) / max(1, settings.partition_rows)))
    query, drop = bound, ()
    if key is None and shape.splittable and partitions >= 2:
        added = _added_key(bound, shape, infos, dialect)
        if added is not None:
            (query, key), drop = added, ("fedgate_key",)
    if key is not None and shape.splittable and partitions >= 2:
        output, alias, column = key
        low, high = await catalog.bounds(source, shape.tables[alias], column)
        if isinstance(low, int) and isinstance(high, int) and high > low:
            options.update(dbtable=f"({query}) AS fedgate_q", partitionColumn=output,
                           lowerBound=str(low), upperBound=str(high + 1),
                           numPartitions=str(partitions))
            summary += (f", {partitions} partitions on {shape.tables[alias].name}.{column} "
                        f"in [{low}, {high}] (about {estimate} rows)")
            return DirectRead(name, source.name, "jdbc", summary, options, credentials, drop=drop)
    options["query"] = bound
    summary += f", 1 partition (about {estimate} rows)" if estimate is not None else ", 1 partition"
    return DirectRead(name, source.name, "jdbc", summary, options, credentials)


def _integer_key(info: TableInfo) -> str | None:
    """The table's first primary-key column, when it is an integer."""
    if not info.primary_key:
        return None
    column = info.primary_key[0]
    index = info.schema.get_field_index(column)
    return column if index >= 0 and pa.types.is_integer(info.schema.field(index).type) else None


def _partition_key(shape: _Shape, infos: Mapping[str, TableInfo | None]) -> tuple[str, str, str] | None:
    """(output name, table alias, column): the integer first primary-key column of the
    largest table whose rows the fragment passes through (and groups by, if grouped)."""
    ranked = sorted(((i.row_estimate or 0, alias, i) for alias, i in infos.items() if i is not None),
                    key=lambda t: -t[0])
    for _, alias, info in ranked:
        column = _integer_key(info)
        if column is None:
            continue
        for output, (qualifier, name) in shape.outputs.items():
            if name != column or (qualifier or (alias if len(infos) == 1 else None)) != alias:
                continue
            if shape.grouped is not None and (qualifier, name) not in shape.grouped:
                continue
            return output, alias, column
    return None


def _added_key(bound: str, shape: _Shape, infos: Mapping[str, TableInfo | None],
               dialect: str) -> tuple[str, tuple[str, str, str]] | None:
    """A plain (not grouped, not DISTINCT) fragment that does not output its largest
    table's key gets it as one more column, `fedgate_key`, to partition on; Spark drops
    it again. The column is rendered by sqlglot and put right after the SELECT keyword
    of the SQL we generated ourselves."""
    if shape.grouped is not None or shape.distinct or bound[:7].upper() != "SELECT ":
        return None
    ranked = sorted(((i.row_estimate or 0, alias, i) for alias, i in infos.items() if i is not None),
                    key=lambda t: -t[0])
    for _, alias, info in ranked[:1]:
        column = _integer_key(info)
        if column is None or "fedgate_key" in shape.outputs:
            return None
        key = exp.alias_(exp.column(column, table=alias, quoted=True), "fedgate_key", quoted=True)
        return f"SELECT {key.sql(dialect)}, {bound[7:]}", ("fedgate_key", alias, column)
    return None


def _files_read(name: str, source: Any, tree: exp.Expression) -> DirectRead | str:
    """The fragment as Spark SQL over `spark.read` views of the files it names."""
    views = []
    tree = tree.copy()
    for table in list(tree.find_all(exp.Table)):
        dataset = source.datasets.get(table.name)
        if dataset is None or table.db:
            return f"table {table.sql()} is not one of the source's files"
        path = _table_path(source, table.name)
        view = f"fedgate_{name}_{table.name}"
        ddl = _ddl(dataset.schema) if source.file_format == "csv" else None
        views.append((view, str(path), source.file_format, ddl))
        alias = table.alias_or_name
        table.set("this", exp.to_identifier(view))
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
    try:
        sql = tree.sql("spark", unsupported_level=sqlglot.ErrorLevel.RAISE)
    except SqlglotError as exc:
        return f"its SQL has no Spark form: {exc}"
    where = ", ".join(sorted({Path(v[1]).name for v in views}))
    return DirectRead(name, source.name, "files", f"spark.read.{source.file_format} of {where}",
                      views=tuple(dict.fromkeys(views)), sql=sql)


def _table_path(source: Any, table: str) -> Path:
    root = Path(source.path)
    if root.is_file():
        return root
    single = root / f"{table}.{source.file_format}"
    return single if single.is_file() else root / table


_DDL = [(pa.types.is_boolean, "BOOLEAN"), (pa.types.is_int8, "TINYINT"), (pa.types.is_int16, "SMALLINT"),
        (pa.types.is_int32, "INT"), (pa.types.is_int64, "BIGINT"), (pa.types.is_float32, "FLOAT"),
        (pa.types.is_float64, "DOUBLE"), (pa.types.is_date, "DATE"), (pa.types.is_timestamp, "TIMESTAMP")]


def _ddl(schema: pa.Schema) -> str:
    """A Spark schema string for a CSV table, from the types pyarrow inferred for it."""
    columns = []
    for f in schema:
        spark = next((name for test, name in _DDL if test(f.type)), None)
        if spark is None and pa.types.is_decimal(f.type):
            spark = f"DECIMAL({f.type.precision}, {f.type.scale})"
        columns.append(f"`{f.name.replace('`', '``')}` {spark or 'STRING'}")
    return ", ".join(columns)
