"""Apache Spark (PySpark) as the residual engine, for work that outgrows one process.

One SparkSession per gateway process, started on first use (a JVM start costs seconds)
and reused: `local[*]` by default, a cluster through `spark_master`, or Spark Connect
through `spark_remote` (connectors.engines.spark_session keeps it: starts, drops a session
that lost its cluster, stops it when idle, and runs every Spark call off the event loop).
Each query runs in its own child session (`newSession()`), so the fragment views of
concurrent queries never collide, and carries a tag so a cancel interrupts exactly its
jobs: a SparkContext job tag on a classic session, a session tag on Connect. A cancel
(CancelRequest, statement_timeout, a client gone, shutdown, `spark_job_timeout_s`) also
cancels the PostgreSQL queries of the statement's JDBC reads, and answers at once: the
job winds down on its own thread. Results come back as Arrow batches.

Fragments reach Spark in one of two ways. The executor first asks `reads_directly`: a
fragment Spark reads itself (PostgreSQL/MySQL through JDBC, partitioned on a key range;
Parquet/CSV through `spark.read`; see connectors.engines.spark_jdbc) arrives as a
`DirectRead` description and never passes through the gateway; any other fragment is
started by the gateway and arrives as Arrow, which becomes a DataFrame (a big one, on a
local Spark, through a per-query Parquet file: see connectors.engines.spark_handover).
Under the default `spark_reads_sources = "auto"` a local Spark reads big files and MySQL
fragments itself but takes PostgreSQL ones from the gateway, whose parallel COPY reads
beat JDBC on the same machine; a cluster reads every fragment it can.
Describing a statement only analyzes it: no Spark job runs.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

from connectors.base import BatchStream, Source, TableStream
from connectors.dialects.spark import DIALECT
from connectors.query_scope import STATEMENT_LABEL
from connectors.engines.spark_errors import lost_cluster, lost_during, scrub, source_error, spark_error
from connectors.engines.spark_handover import PLAN_SHARE_OF_DRIVER, Handover, jvm_memory_bytes, sparkable
from connectors.engines.spark_jdbc import (DRIVERS, JARS, DirectRead, ReadSettings, SourceCatalog,
                                           cancel_postgres_reads, plan_read)
from connectors.engines.spark_session import (SessionKeeper, bound_retries, in_thread, reach_warnings,
                                              unavailable)
from connectors.engines.spark_watch import ClusterLost, ClusterWatch
from connectors.engines.spark_writes import StageInto, stage_refusal, write_stage
from pgwire.errors import QUERY_CANCELED, PgError

log = logging.getLogger("fedgate.spark")
_tags = itertools.count(1)
_PROCESS = secrets.token_hex(4)  # keeps this process's tags (its reads' names) apart from others'
DEFAULT_CONF = {
    "spark.sql.ansi.enabled": "true",  # division by zero raises, as in PostgreSQL
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    # The console progress bar is a thread redrawing stderr (the gateway's log) every
    # 200 ms while a job runs.
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    # Handed-over fragments become DataFrames in the driver: Spark's 1g default runs out
    # of heap on a few million rows (TPC-H SF 1). Only a ceiling: the JVM grows to it.
    "spark.driver.memory": "4g",
}
# On a standalone (or other) cluster the application holds its executors for as long as
# the session lives: bounded, so the gateway leaves room for other applications.
# spark_conf overrides each.
CLUSTER_CONF = {
    "spark.cores.max": "4",
    "spark.executor.memory": "2g",
}


class _Job:
    """One statement's Spark work: its tag, and the session that tagged it (the only
    session whose interruptTag reaches its jobs)."""

    def __init__(self, tag: str, label: str | None) -> None:
        self.tag = tag
        # What the cluster's UI shows for the statement's jobs: who ran which statement.
        self.description = f"fedgate {tag}" + (f" ({label})" if label else "")
        self.session: Any = None
        self.cancelled = False
        self.writes_to: str | None = None  # the DSN its executors write a stage into


class SparkEngine:
    name = "spark"
    dialect = DIALECT

    def __init__(self, master: str = "local[*]", remote: str | None = None, *,
                 reads: ReadSettings | None = None, dsns: Mapping[str, str] | None = None,
                 conf: Mapping[str, Any] | None = None, connect_timeout_s: float = 30.0,
                 job_timeout_s: float = 3600.0, idle_stop_s: float = 600.0,
                 stall_timeout_s: float = 60.0) -> None:
        self.master = master
        self.remote = remote
        cluster = remote is not None or not master.startswith("local")
        given = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (conf or {}).items()}
        if remote is not None:
            # A Connect session takes only runtime (SQL) settings; the server's own start
            # fixed the rest. Ours are for a driver of our own, which Connect has not.
            defaults = {k: v for k, v in DEFAULT_CONF.items() if k.startswith("spark.sql.")}
            server_only = sorted(k for k in given if not k.startswith("spark.sql."))
            if server_only:
                log.warning("spark_remote is set: spark_conf settings %s are the Spark Connect "
                            "server's to make at its start (spark-submit --conf); not applied",
                            ", ".join(server_only))
                given = {k: v for k, v in given.items() if k not in server_only}
        else:
            defaults = {**DEFAULT_CONF, **(CLUSTER_CONF if cluster else {})}
        if not cluster:
            # One shuffle partition per core: the inputs a local Spark gets are at most a
            # few million rows, and more partitions than cores are only more tasks to
            # schedule (AQE coalesces small ones afterwards, but each still costs).
            defaults["spark.sql.shuffle.partitions"] = str(_local_cores(master))
            # Nothing outside this machine talks to a local Spark: it listens on loopback
            # (left alone, it binds the address the host name resolves to).
            defaults["spark.driver.host"] = defaults["spark.driver.bindAddress"] = "127.0.0.1"
        self.conf = {**defaults, **given}
        self.job_timeout_s = job_timeout_s
        # The LocalRelations of handed-over fragments live in the driver's heap (a Connect
        # server's driver is its own: its default is the guess the gateway has).
        self._plan_bytes = jvm_memory_bytes(self.conf.get("spark.driver.memory", "1g")) \
            // PLAN_SHARE_OF_DRIVER
        self.reads = reads or ReadSettings(cluster=cluster)
        self._dsns = dict(dsns or {})  # source name -> DSN, for JDBC reads
        # Passwords are scrubbed from any error text that reaches a client.
        self._secrets = {p for p in (_password(d) for d in self._dsns.values()) if p}
        self._catalog = SourceCatalog()
        self._sessions = SessionKeeper(master, remote, self.conf, list(JARS.values()),
                                       connect_timeout_s, idle_stop_s)
        self._jobs: dict[str, _Job] = {}
        self._watch = ClusterWatch(master, remote, stall_timeout_s)

    @classmethod
    def from_config(cls, config: Any) -> SparkEngine:
        """The engine of a gateway `Config`: its [engine] options and its sources' DSNs."""
        engine = config.engine
        cluster = engine.spark_remote is not None or not engine.spark_master.startswith("local")
        reads = ReadSettings(engine.spark_reads_sources, engine.spark_read_threshold_rows,
                             engine.spark_partition_rows, cluster)
        dsns = {s.name: s.options["dsn"] for s in config.sources
                if isinstance(s.options.get("dsn"), str)}
        if cluster and engine.spark_reads_sources != "never":
            described = [(s.name, s.kind, dsns.get(s.name), _text(s.options.get("path")))
                         for s in config.sources]
            for warning in reach_warnings(engine.spark_remote or engine.spark_master, described):
                log.warning("Spark cluster: %s", warning)
        return cls(engine.spark_master, engine.spark_remote, reads=reads, dsns=dsns,
                   conf=engine.spark_conf, connect_timeout_s=engine.spark_connect_timeout_s,
                   job_timeout_s=engine.spark_job_timeout_s, idle_stop_s=engine.spark_idle_stop_s,
                   stall_timeout_s=engine.spark_stall_timeout_s)

    @property
    def start_pending(self) -> str | None:
        """Why a statement run now would first wait (a cold or stopped session); cheap."""
        return self._sessions.start_pending

    def _child(self, root: Any) -> Any:
        """A session of its own for one statement (its temp views collide with no other)."""
        session = root.newSession()
        if self.remote:
            # A new Connect session starts from the server's defaults, not from its parent.
            bound_retries(session, self._sessions.connect_timeout_s)
            try:
                for key, value in self._sessions.session_conf.items():
                    session.conf.set(key, value)
            except Exception:
                # Closed now, with one quick try to release it: an unclosed Connect client
                # retries its clean-up against the (lost) server when the gateway exits.
                bound_retries(session, 0)
                session.stop()
                raise
        return session

    def _release(self, session: Any) -> None:
        if self.remote:  # a Connect session holds a channel and state on the server
            session.stop()

    def _parallelism(self, root: Any) -> int:
        if self.remote:
            return 8  # Spark Connect does not expose the cluster's core count
        return max(1, int(root.sparkContext.defaultParallelism))

    async def reads_directly(self, fragment: Any, source: Source, sql: str,
                             params: Sequence[Any]) -> DirectRead | str:
        """A `DirectRead` when Spark reads `fragment` (as `sql` with `params`) itself;
        otherwise why the gateway should hand it over as Arrow."""
        if self.reads.mode == "never":
            return "spark_reads_sources = never"
        dsn = self._dsns.get(source.name) or getattr(source, "dsn", None)
        if isinstance(dsn, str) and _password(dsn):
            self._secrets.add(_password(dsn) or "")
        root = await self._sessions.get(self.job_timeout_s)
        parallelism = await in_thread(self._parallelism, root)
        return await plan_read(fragment.name, source, sql, params, dsn, self.reads,
                               self._catalog, parallelism)

    def _views(self, session: Any, tables: Mapping[str, pa.Table | DirectRead],
               handover: Handover, label: str | None = None) -> None:
        """Each input as a temp view of `session`."""
        # A plan may hold one fragment twice (the executor then reads it once): Spark
        # gets one DataFrame for both names, so it reads and converts the rows once.
        made: list[tuple[pa.Table | DirectRead, Any]] = []
        for name, table in tables.items():
            frame = next((f for seen, f in made if _same_input(seen, table)), None)
            if frame is None:
                frame = table.dataframe(session, label) if isinstance(table, DirectRead) else \
                    handover.dataframe(session, sparkable(table), name)
                made.append((table, frame))
            frame.createOrReplaceTempView(name)

    def _run(self, root: Any, job: _Job, sql: str, tables: Mapping[str, pa.Table | DirectRead],
             params: Sequence[Any], into: StageInto | None = None) -> pa.Table:
        session = job.session = self._child(root)
        if self.remote:
            session.addTag(job.tag)  # the server matches it within this session, from any thread
            # Connect has no job descriptions to set: the description is a tag too (no commas).
            session.addTag(job.description.replace(",", ""))
        else:
            # A classic session's tag is this thread's alone (Spark adds the thread's id to
            # it), so interruptTag from the cancelling thread would miss the job; a
            # SparkContext job tag is the same string from every thread.
            context = session.sparkContext
            context.addJobTag(job.tag)
            # Cancelling the job also interrupts its tasks' threads (a JDBC read among them).
            context.setInterruptOnCancel(True)
            context.setJobDescription(job.description)
        handover = Handover(local=not self.reads.cluster, parts=_local_cores(self.master),
                            plan_bytes=self._plan_bytes)
        try:
            started = time.perf_counter()
            self._views(session, tables, handover, job.tag)
            planned = time.perf_counter()
            args = {f"p{i}": value for i, value in enumerate(params, 1)}
            frame = session.sql(sql, args=args) if args else session.sql(sql)
            if job.cancelled:  # cancelled while the inputs became views: start no job
                raise PgError(QUERY_CANCELED, "canceling statement due to user request")
            if into is not None:  # the executors write the rows; none come back
                write_stage(frame, into, self._dsns[into.source], self._parallelism(root), job.tag)
                return self._arrow_schema(session, frame).empty_table()
            result = frame.toArrow()
            log.debug("%s: inputs as DataFrames in %.3f s, query in %.3f s, %d rows", job.tag,
                      planned - started, time.perf_counter() - planned, result.num_rows)
            return result
        except Exception as exc:  # a source's own error, read while Java can still be asked
            found = source_error(exc)
            if found is None:
                raise
            raise found from exc
        finally:
            handover.close()  # the query's scratch files go with it: nothing can go stale
            try:
                if self.remote:
                    session.clearTags()
                else:
                    session.sparkContext.removeJobTag(job.tag)
                    session.sparkContext.setJobDescription(None)
                self._release(session)
            except Exception as exc:  # the answer (or its error) stands; the session is spent
                log.debug("%s: releasing the statement's Spark session failed: %s", job.tag, exc)

    def _schema(self, root: Any, sql: str, inputs: Mapping[str, pa.Schema],
                params: Sequence[Any]) -> pa.Schema:
        """The result schema from Spark's analysis alone: nothing is planned or run."""
        session = self._child(root)
        try:
            self._views(session, {name: schema.empty_table() for name, schema in inputs.items()},
                        Handover(local=False))
            args = {f"p{i}": value for i, value in enumerate(params, 1)}
            frame = session.sql(sql, args=args) if args else session.sql(sql)
            return self._arrow_schema(session, frame)
        finally:
            self._release(session)

    @staticmethod
    def _arrow_schema(session: Any, frame: Any) -> pa.Schema:
        """The schema DataFrame.toArrow() gives `frame`'s rows (it casts to this very one)."""
        from pyspark.sql.pandas.types import to_arrow_schema  # a heavy import

        large = session.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false") == "true"
        return to_arrow_schema(frame.schema, error_on_duplicated_field_names_in_struct=True,
                               timezone="UTC", prefers_large_types=large)

    @property
    def cluster(self) -> bool:
        """Spark is a cluster (standalone, or Spark Connect), not `local[...]`."""
        return self.reads.cluster

    def writes_stage(self, source: str) -> str | None:
        """None when the executors can write a move's rows into a stage in PostgreSQL
        source `source` (connectors.engines.spark_writes); otherwise why not."""
        return stage_refusal(self._dsns.get(source))

    async def execute(self, sql: str, inputs: Mapping[str, pa.Table | pa.RecordBatchReader | DirectRead],
                      params: Sequence[Any] = (), into: StageInto | None = None) -> BatchStream:
        """The statement's rows; with `into`, written by the executors into that stage
        instead, and an empty stream of their schema comes back."""
        job = _Job(f"fedgate-{_PROCESS}-{next(_tags)}", STATEMENT_LABEL.get())
        job.writes_to = None if into is None else self._dsns[into.source]
        # Handed-over fragments are read whole before Spark starts: Spark plans over
        # complete inputs. All at once: each fragment's feed is bounded, so reading them
        # one after another would stall every other fragment's source meanwhile. A
        # DirectRead is read by Spark itself, inside the query.
        names = list(inputs)
        waited = time.perf_counter()
        read = await asyncio.gather(*(
            asyncio.to_thread(data.read_all) if isinstance(data, pa.RecordBatchReader) else _ready(data)
            for data in inputs.values()))
        tables: dict[str, pa.Table | DirectRead] = dict(zip(names, read))
        log.debug("%s: inputs read whole in %.3f s", job.tag, time.perf_counter() - waited)
        root = await self._sessions.get(self.job_timeout_s)
        stranded = await self._watch.stranded(root)
        if stranded is not None:
            self._discard(root, stranded)
            root = await self._sessions.get(self.job_timeout_s)
        self._sessions.begin()
        self._jobs[job.tag] = job
        running = in_thread(self._run, root, job, sql, tables, params, into)
        running.add_done_callback(_consume)
        try:
            result = await self._watch.outcome(root, running, self.job_timeout_s or None)
        except asyncio.CancelledError:
            # Answer at once: the job stops on the cluster meanwhile, on its own thread.
            self._interrupt(job, tables)
            raise
        except TimeoutError:
            self._interrupt(job, tables)
            message = ("canceling statement: its Spark job ran longer than "
                       f"spark_job_timeout_s ({self.job_timeout_s:g} s)")
            lost = self._watch.looked_lost(root)
            if lost is not None:  # the stall timeout had not run out yet: the same ending
                self._discard(root, lost)
                message += f"; its Spark application looked lost ({lost}) and was dropped"
            raise PgError(QUERY_CANCELED, message) from None
        except ClusterLost as lost:
            self._interrupt(job, tables)
            self._discard(root, str(lost))
            raise lost_during(self._sessions.url, str(lost)) from None
        except Exception as exc:
            # Lost after the statement reached its cluster (it has a session there): 08006.
            raise self._failure(root, exc, during=job.session is not None) from exc
        finally:
            self._jobs.pop(job.tag, None)
            self._sessions.end()
        return TableStream(result)

    def _interrupt(self, job: _Job, tables: Mapping[str, pa.Table | DirectRead]) -> None:
        """Cancel `job`'s Spark jobs on the session that tagged them, and the JDBC queries
        its reads started on PostgreSQL; nothing here waits."""
        job.cancelled = True
        loop = asyncio.get_running_loop()

        postgres = {self._dsns[t.source] for t in tables.values()
                    if isinstance(t, DirectRead) and t.kind == "jdbc" and t.source in self._dsns
                    and t.options.get("driver") == DRIVERS["postgres"]}
        postgres |= {job.writes_to} if job.writes_to is not None else set()

        def interrupt() -> None:
            if job.session is not None:
                cancel = job.session.interruptTag if self.remote else \
                    job.session.sparkContext.cancelJobsWithTag
                in_thread(cancel, job.tag).add_done_callback(_consume)
            for dsn in postgres:
                loop.create_task(cancel_postgres_reads(dsn, job.tag)).add_done_callback(_consume)

        interrupt()
        # The statement may have been between its views and its first job or read: once more.
        loop.call_later(1.0, interrupt)

    def _discard(self, root: Any, reason: str) -> None:
        self._watch.forget(root)
        self._sessions.discard(root, reason)

    def _failure(self, root: Any, exc: Exception, during: bool = False) -> PgError:
        """The client's error for a failed statement; a session that lost its cluster is
        dropped, so the next statement starts a new one."""
        if isinstance(exc, PgError):
            return exc
        if lost_cluster(exc):
            reason = scrub(str(exc).split("\n")[0], self._secrets)
            self._discard(root, reason)
            return (lost_during if during else unavailable)(self._sessions.url, reason)
        return spark_error(exc, self._secrets)

    async def describe(self, sql: str, inputs: Mapping[str, pa.Schema],
                       params: Sequence[Any] = ()) -> pa.Schema:
        root = await self._sessions.get(self.job_timeout_s)
        try:
            return await in_thread(self._schema, root, sql, inputs, params)
        except Exception as exc:
            raise self._failure(root, exc) from exc

    async def close(self) -> None:
        """Stop the statements' jobs and the session, waiting for neither for long."""
        for job in list(self._jobs.values()):
            self._interrupt(job, {})
            if self.remote and job.session is not None:
                # Its clean-up at exit gets one quick try: the server may be gone.
                bound_retries(job.session, 0)
        await self._sessions.close()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _local_cores(master: str) -> int:
    """The cores of a `local`, `local[N]` or `local[*]` master (at least 2)."""
    threads = master[master.find("[") + 1:master.find("]")].split(",")[0] if "[" in master else "1"
    if threads == "*":
        return max(2, os.cpu_count() or 2)
    return max(2, int(threads)) if threads.isdigit() else 2


async def _ready(data: pa.Table | DirectRead) -> pa.Table | DirectRead:
    return data


def _same_input(a: pa.Table | DirectRead, b: pa.Table | DirectRead) -> bool:
    if isinstance(a, DirectRead) or isinstance(b, DirectRead):
        return (isinstance(a, DirectRead) and isinstance(b, DirectRead) and a.kind == b.kind
                and a.options == b.options and a.views == b.views and a.sql == b.sql
                and a.drop == b.drop)
    return a is b or (a.num_rows == b.num_rows and a.schema == b.schema and a.equals(b))


def _password(dsn: str) -> str | None:
    try:
        password = urlparse(dsn).password
    except ValueError:
        return None
    return unquote(password) if password else None


def _consume(future: asyncio.Future[Any]) -> None:
    """Collect the outcome of Spark work nobody waits for any more (a cancelled statement's
    thread, an interrupt), so it is logged instead of reported as never retrieved."""
    if not future.cancelled() and future.exception() is not None:
        log.debug("abandoned Spark call ended with: %s", future.exception())
