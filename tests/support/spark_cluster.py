"""A real, small Spark cluster on loopback for tests: standalone master + worker, and a
Spark Connect server that runs its applications on that master.

Everything comes from the installed PySpark (its folder is SPARK_HOME): `spark-class`
starts the master and the worker, `spark-submit` the Connect server (its jar ships with
PySpark), with the JDBC drivers given through `--jars` so executors can read PostgreSQL
and MariaDB. The worker offers 2 cores and 2 GB; each application (the gateway's own
driver, the Connect server) takes one core and 1 GB, so both fit at once.

Each process runs in a process group of its own: stopping the worker's group stops the
executors it forked too, as a lost machine would. `stop()` always reaps everything.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from tests.support.system import free_port, wait_listening

SPARK_HOME = Path(pyspark.__file__).resolve().parent
JDBC_JARS = [path for path in ("/usr/share/java/postgresql.jar", "/usr/share/java/mariadb-java-client.jar")
             if Path(path).is_file()]
APP_CORES = 1
APP_MEMORY = "1g"
START_TIMEOUT_S = 120.0
PR_SET_PDEATHSIG = 1


def _env(workdir: Path, daemon: bool = True) -> dict[str, str]:
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOCAL_DIRS": str(workdir / "local"), "SPARK_LOG_DIR": str(workdir / "logs")}
    if daemon:
        # The master and worker daemons need little heap (the default is 1 GB each); the
        # launcher would give the same to spark-submit, too little for a driver.
        env["SPARK_DAEMON_MEMORY"] = "256m"
    else:
        env.pop("SPARK_DAEMON_MEMORY", None)
    return env


def _die_with_parent() -> None:
    """In the child before exec: a test run killed outright (a CI timeout) takes its Spark
    processes with it instead of leaving them running (Linux's parent-death signal)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class SparkProcess:
    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str]
    proc: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        log.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (a worker's executors die with it)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, grace: float = 15.0) -> None:
        if self.proc is None:
            return
        self.kill(signal.SIGTERM)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill(signal.SIGKILL)
            self.proc.wait(10)
        self.kill(signal.SIGKILL)  # children that outlived their parent (executors)
        self.proc = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class SparkCluster:
    workdir: Path
    master_port: int = field(default_factory=free_port)
    master_ui_port: int = field(default_factory=free_port)
    worker_ui_port: int = field(default_factory=free_port)
    connect_port: int = field(default_factory=free_port)
    connect_ui_port: int = field(default_factory=free_port)
    worker_cores: int = 2
    worker_memory: str = "2g"
    # What each application (the gateway's driver, the Connect server) takes of the worker.
    app_cores: int = APP_CORES
    app_memory: str = APP_MEMORY
    master: SparkProcess | None = None
    worker: SparkProcess | None = None
    connect: SparkProcess | None = None

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def remote_url(self) -> str:
        return f"sc://127.0.0.1:{self.connect_port}"

    @property
    def master_json_url(self) -> str:
        return f"http://127.0.0.1:{self.master_ui_port}/json/"

    def app_ids(self) -> list[str]:
        """The applications the master runs now."""
        return [app["id"] for app in self.master_state().get("activeapps", [])]

    def master_state(self) -> dict:
        with urllib.request.urlopen(self.master_json_url, timeout=5) as response:
            return json.load(response)

    def alive_workers(self) -> int:
        return sum(1 for w in self.master_state().get("workers", []) if w.get("state") == "ALIVE")

    # ------------------------------------------------------------------ processes

    def _master(self) -> SparkProcess:
        return SparkProcess("master", [
            str(SPARK_HOME / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.master_port),
            "--webui-port", str(self.master_ui_port)],
            self.workdir / "master.log", _env(self.workdir))

    def _worker(self) -> SparkProcess:
        return SparkProcess("worker", [
            str(SPARK_HOME / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
            self.master_url, "--host", "127.0.0.1", "--cores", str(self.worker_cores),
            "--memory", self.worker_memory,
            "--webui-port", str(self.worker_ui_port), "--work-dir", str(self.workdir / "work")],
            self.workdir / "worker.log", _env(self.workdir))

    def _connect(self) -> SparkProcess:
        argv = [str(SPARK_HOME / "bin" / "spark-submit"),
                "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                "--master", self.master_url, "--name", "fedgate-test-connect",
                "--driver-memory", "1g",
                "--conf", f"spark.connect.grpc.binding.port={self.connect_port}",
                "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
                "--conf", f"spark.ui.port={self.connect_ui_port}",
                "--conf", f"spark.cores.max={self.app_cores}", "--conf", f"spark.executor.memory={self.app_memory}",
                "--conf", "spark.sql.ansi.enabled=true", "--conf", "spark.sql.session.timeZone=UTC"]
        if JDBC_JARS:
            argv += ["--jars", ",".join(JDBC_JARS)]
        return SparkProcess("connect", [*argv, "spark-internal"], self.workdir / "connect.log",
                            _env(self.workdir, daemon=False))

    def start_master(self) -> None:
        self.master = self._master()
        self.master.start()
        self._wait(self.master, self.master_port)
        self._wait(self.master, self.master_ui_port)

    def start_worker(self) -> None:
        self.launch_worker()
        self.wait_worker()

    def launch_worker(self) -> None:
        self.worker = self._worker()
        self.worker.start()

    def wait_worker(self) -> None:
        """Until the master counts the worker alive."""
        assert self.worker is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if not self.worker.alive():
                raise RuntimeError(f"Spark worker exited:\n{self.worker.log()}")
            try:
                if self.alive_workers() >= 1:
                    return
            except (OSError, ValueError):  # not listening yet, or its JSON page still empty
                pass
            time.sleep(0.3)
        raise RuntimeError(f"Spark worker did not register within {START_TIMEOUT_S}s:\n{self.worker.log()}")

    def start_connect(self, attempts: int = 3) -> None:
        self.launch_connect()
        self.wait_connect(attempts)

    def launch_connect(self) -> None:
        self.connect = self._connect()
        self.connect.start()

    def wait_connect(self, attempts: int = 3) -> None:
        """Until the launched Connect server listens; a port taken meanwhile (Spark's own
        processes pick free ports too) is replaced by another, unless the port was chosen
        by the caller (attempts=1)."""
        for attempt in range(attempts):
            assert self.connect is not None
            try:
                self._wait(self.connect, self.connect_port)
                return
            except RuntimeError as exc:
                if "Failed to bind" not in str(exc) or attempt == attempts - 1:
                    raise
                self.connect_port, self.connect_ui_port = free_port(), free_port()
                self.launch_connect()

    def _wait(self, process: SparkProcess, port: int) -> None:
        assert process.proc is not None
        if not wait_listening(process.proc, port, START_TIMEOUT_S, interval=0.3):
            log = process.log()
            process.stop()
            raise RuntimeError(f"Spark {process.name} did not listen on {port}:\n{log[-4000:]}")

    def start(self, connect: bool = True) -> SparkCluster:
        (self.workdir / "local").mkdir(parents=True, exist_ok=True)
        (self.workdir / "work").mkdir(parents=True, exist_ok=True)
        try:
            self.start_master()
            # The worker and the Connect server (whose application waits for executors,
            # not for a worker) start side by side: two JVM starts overlap.
            self.launch_worker()
            if connect:
                self.launch_connect()
            self.wait_worker()
            if connect:
                self.wait_connect()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for process in (self.connect, self.worker, self.master):
            if process is not None:
                process.stop()

    def gateway_engine_config(self, mode: str, spark_conf: dict[str, str] | None = None,
                              **extra: object) -> str:
        """An [engine] section running Spark on this cluster, by `spark_master` ("standalone")
        or by `spark_remote` ("connect"), sized to share the worker with the other."""
        lines = ['default = "spark"']
        if mode == "connect":
            lines.append(f'spark_remote = "{self.remote_url}"')
        else:
            lines.append(f'spark_master = "{self.master_url}"')
        for key, value in extra.items():
            lines.append(f"{key} = {json.dumps(value) if isinstance(value, str) else value}")
        text = "[engine]\n" + "\n".join(lines) + "\n"
        conf = dict(spark_conf or {})
        if mode != "connect":
            conf = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                    "spark.cores.max": str(self.app_cores), "spark.executor.memory": self.app_memory,
                    "spark.driver.memory": "1g", **conf}
        if conf:
            text += "[engine.spark_conf]\n" + "".join(f"{json.dumps(k)} = {json.dumps(v)}\n"
                                                      for k, v in conf.items())
        return text
