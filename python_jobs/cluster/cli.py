"""cdc-cluster up|down|status: a Spark standalone cluster on this machine for the `cluster` profile
target: the Iceberg catalog's PostgreSQL, a master, two workers and a Thrift server, bound to the
loopback address on free ports, with logs, pids and the chosen ports in one folder.

    cdc-cluster up [--folder cluster]    # writes <folder>/cluster.env for the profile
    source cluster/cluster.env && dbt run --target cluster
    cdc-cluster down
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from python_jobs.cluster import catalog_database, processes, spark_conf
from python_jobs.cluster.processes import LOOPBACK, ClusterError
from python_jobs.landing.io import parsers_jar
from python_jobs.landing.io.errors import LandingError
from python_jobs.landing.io.session import require_java

STATE_FILE = "cluster.json"
ENV_FILE = "cluster.env"
MASTER, THRIFT, NAMESPACE = "master", "thrift-server", "default-namespace"
COMPONENTS_IN_STOP_ORDER = (THRIFT, "worker-2", "worker-1", MASTER, catalog_database.NAME)


@dataclass
class ClusterState:
    """What `up` started, as recorded in <folder>/cluster.json."""

    folder: str
    master_url: str
    master_webui_port: int
    thrift_port: int
    catalog_port: int
    catalog_uri: str
    catalog_user: str
    warehouse: str
    worker_cores: int
    worker_memory: str
    pids: dict[str, int] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        """The variables the `cluster` target of profiles/profiles.yml reads."""
        return {
            "CDC_MERGE_THRIFT_HOST": LOOPBACK,
            "CDC_MERGE_THRIFT_PORT": str(self.thrift_port),
            "CDC_MERGE_SPARK_MASTER_URL": self.master_url,
            "CDC_MERGE_CATALOG_URI": self.catalog_uri,
            "CDC_MERGE_CATALOG_USER": self.catalog_user,
            "CDC_MERGE_CLUSTER_WAREHOUSE": self.warehouse,
            "CDC_MERGE_CLUSTER_JARS": ",".join(self.jars()),
            # The workers run on this machine: the executors take the jars from these paths, unshipped.
            "CDC_MERGE_CLUSTER_EXECUTOR_CLASS_PATH": os.pathsep.join(self.jars()),
            # One executor per landing, of a worker's cores (spark_conf.application_conf).
            "CDC_MERGE_EXECUTOR_CORES": str(self.worker_cores),
            "CDC_MERGE_CORES_MAX": str(self.worker_cores),
        }

    @staticmethod
    def jars() -> list[str]:
        return [*spark_conf.cluster_jars(), parsers_jar()]


def default_folder() -> Path:
    return Path(os.environ.get("CDC_MERGE_CLUSTER_DIR", "cluster")).resolve()


def load_state(folder: Path) -> ClusterState | None:
    path = folder / STATE_FILE
    if not path.exists():
        return None
    return ClusterState(**json.loads(path.read_text()))


def up(folder: Path, warehouse: Path, ports: dict[str, int], worker_cores: int, worker_memory: str,
       driver_memory: str, executor_memory: str, say=print) -> ClusterState:
    """Starts every component (stopping those already started if one fails); returns the state."""
    try:
        require_java()
    except LandingError as error:
        raise ClusterError(f"{error}; install openjdk-17-jre-headless (make check-java)") from None
    running = load_state(folder)
    if running is not None and any(processes.alive(pid) for pid in running.pids.values()):
        raise ClusterError(f"a cluster is already running from {folder} (cdc-cluster status); stop it with cdc-cluster down")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conf").mkdir(exist_ok=True)
    warehouse.mkdir(parents=True, exist_ok=True)
    chosen = {
        "catalog": processes.require_free_port(ports["catalog"], "catalog PostgreSQL", "--catalog-port"),
        "master": processes.require_free_port(ports["master"], "Spark master", "--master-port"),
        "master_webui": processes.require_free_port(ports["master_webui"], "Spark master web UI", "--master-webui-port"),
        "thrift": processes.require_free_port(ports["thrift"], "Thrift server", "--thrift-port"),
    }
    state = ClusterState(
        folder=str(folder), master_url=f"spark://{LOOPBACK}:{chosen['master']}",
        master_webui_port=chosen["master_webui"], thrift_port=chosen["thrift"], catalog_port=chosen["catalog"],
        catalog_uri=catalog_database.jdbc_uri(chosen["catalog"]), catalog_user=catalog_database.USER,
        warehouse=str(warehouse), worker_cores=worker_cores, worker_memory=worker_memory,
    )
    try:
        _start_all(state, driver_memory, executor_memory, say)
    except BaseException:
        say("cdc-cluster: stopping what was started")
        down(folder, say=lambda _: None)
        raise
    return state


def _start_all(state: ClusterState, driver_memory: str, executor_memory: str, say) -> None:
    folder = Path(state.folder)
    env = spark_conf.spark_env(folder)
    # The master's and workers' own heaps; applications get theirs from --driver/--executor-memory.
    env["SPARK_DAEMON_MEMORY"] = "512m"
    spark_class = str(spark_conf.spark_home() / "bin" / "spark-class")

    def record(name: str, pid: int) -> None:
        state.pids[name] = pid
        _write_state(state)

    say(f"cdc-cluster: catalog PostgreSQL on {LOOPBACK}:{state.catalog_port}")
    record(catalog_database.NAME, catalog_database.start(folder, state.catalog_port))

    catalog = spark_conf.jdbc_catalog_conf(state.catalog_uri, state.catalog_user, state.warehouse)
    jars = spark_conf.cluster_jars()
    app = spark_conf.application_conf(state.master_url, executor_memory, cores=state.worker_cores)
    spark_submit = str(spark_conf.spark_home() / "bin" / "spark-submit")
    # Every Thrift session starts with `use default`: the catalog must have that namespace. Made by a
    # local application of its own while the master and workers start: up in 31-32 s instead of
    # 37-40 s at a load average of 10.
    with open(folder / f"{NAMESPACE}.log", "wb") as log:
        namespace = subprocess.Popen(
            [spark_submit, "--master", "local[1]", "--driver-memory", "512m", "--jars", ",".join(jars),
             *_conf_args(catalog), "--conf", "spark.ui.enabled=false",
             str(Path(__file__).with_name("default_namespace.py"))],
            env=env, cwd=folder, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        _start_master_and_workers(state, env, spark_class, record, say)
    except BaseException:
        namespace.kill()
        namespace.wait()
        raise

    namespace.wait()
    if namespace.returncode:
        raise ClusterError(f"creating the catalog's default namespace failed; {processes.log_end(folder, NAMESPACE)}")

    say(f"cdc-cluster: Thrift server on {LOOPBACK}:{state.thrift_port}")
    thrift_dir = folder / THRIFT
    thrift_dir.mkdir(exist_ok=True)
    pid = processes.start(THRIFT, [
        spark_submit, "--class", spark_conf.THRIFT_SERVER_CLASS, "--name", "cdc_merge_thrift_server",
        "--driver-memory", driver_memory,
        # The Iceberg classes on the driver's own class path; its executors take the jars from the same
        # paths on this machine instead of fetching them (47 MB) from the driver at their first task.
        "--driver-class-path", ":".join(jars),
        *_conf_args({**app, **spark_conf.thrift_server_catalog_conf(catalog),
                     "spark.executor.extraClassPath": ":".join(jars),
                     "spark.sql.warehouse.dir": str(thrift_dir / "spark-warehouse")}),
        "--hiveconf", f"hive.server2.thrift.port={state.thrift_port}",
        "--hiveconf", f"hive.server2.thrift.bind.host={LOOPBACK}",
        "spark-internal",
    ], folder, env, cwd=thrift_dir)
    record(THRIFT, pid)
    processes.wait_until(lambda: processes.accepts_connections(state.thrift_port), pid, THRIFT, folder, timeout=180)
    _write_env(state)
    say(f"cdc-cluster: up; `source {folder / ENV_FILE}` sets the `cluster` profile target's variables")


def _start_master_and_workers(state: ClusterState, env: dict[str, str], spark_class: str, record, say) -> None:
    folder = Path(state.folder)
    master_port = int(state.master_url.rsplit(":", 1)[1])
    say(f"cdc-cluster: Spark master {state.master_url} (web UI http://{LOOPBACK}:{state.master_webui_port})")
    pid = processes.start(MASTER, [spark_class, spark_conf.MASTER_CLASS, "--host", LOOPBACK, "--port", str(master_port),
                                   "--webui-port", str(state.master_webui_port)], folder, env)
    record(MASTER, pid)
    processes.wait_until(lambda: processes.accepts_connections(master_port), pid, MASTER, folder, timeout=60)

    for number in (1, 2):
        name = f"worker-{number}"
        work_dir = folder / name
        work_dir.mkdir(exist_ok=True)
        pid = processes.start(name, [
            spark_class, spark_conf.WORKER_CLASS, "--host", LOOPBACK, "--cores", str(state.worker_cores),
            "--memory", state.worker_memory, "--webui-port", str(processes.free_port()),
            "--work-dir", str(work_dir), state.master_url,
        ], folder, env)
        record(name, pid)
    processes.wait_until(lambda: _alive_workers(state) >= 2, state.pids["worker-2"], "worker-2", folder, timeout=90)
    say(f"cdc-cluster: 2 workers registered ({state.worker_cores} cores, {state.worker_memory} each)")


def _conf_args(conf: dict[str, str]) -> list[str]:
    return [argument for name, value in conf.items() for argument in ("--conf", f"{name}={value}")]


def _alive_workers(state: ClusterState) -> int:
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{state.master_webui_port}/json/", timeout=2) as response:
            workers = json.load(response)["workers"]
    except (OSError, ValueError, KeyError):
        return 0
    return sum(1 for worker in workers if worker.get("state") == "ALIVE")


def _write_state(state: ClusterState) -> None:
    (Path(state.folder) / STATE_FILE).write_text(json.dumps(asdict(state), indent=2) + "\n")


def _write_env(state: ClusterState) -> None:
    lines = [f"export {name}={shlex.quote(value)}" for name, value in state.env().items()]
    (Path(state.folder) / ENV_FILE).write_text("\n".join(lines) + "\n")


def down(folder: Path, say=print) -> list[str]:
    """Stops every component recorded in folder, the Thrift server first; the names that were running."""
    stopped = [name for name in COMPONENTS_IN_STOP_ORDER if processes.stop(folder, name)]
    (folder / ENV_FILE).unlink(missing_ok=True)
    state = load_state(folder)
    if state is not None:
        state.pids = {}
        _write_state(state)
    say(f"cdc-cluster: stopped {', '.join(stopped) if stopped else 'nothing (no component was running)'}")
    return stopped


def status(folder: Path) -> dict[str, bool]:
    return {name: (pid := processes.read_pid(folder, name)) is not None and processes.alive(pid)
            for name in reversed(COMPONENTS_IN_STOP_ORDER)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cdc-cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--folder", type=Path, default=None,
                        help="logs, pids, ports and the catalog database (default $CDC_MERGE_CLUSTER_DIR or ./cluster)")
    parser.add_argument("--warehouse", type=Path, default=None,
                        help="the Iceberg warehouse folder every worker reads (default <folder>/warehouse)")
    for name in ("catalog", "master", "master-webui", "thrift"):
        parser.add_argument(f"--{name}-port", type=int, default=0, help="default: a free port")
    parser.add_argument("--worker-cores", type=int, default=2)
    parser.add_argument("--worker-memory", default="2g")
    parser.add_argument("--driver-memory", default=os.environ.get("CDC_MERGE_DRIVER_MEMORY", "2g"),
                        help="the Thrift server's driver heap")
    parser.add_argument("--executor-memory", default="1g")
    args = parser.parse_args(argv)
    folder = (args.folder or default_folder()).resolve()
    try:
        if args.command == "up":
            ports = {"catalog": args.catalog_port, "master": args.master_port,
                     "master_webui": args.master_webui_port, "thrift": args.thrift_port}
            started = time.monotonic()
            up(folder, (args.warehouse or folder / "warehouse").resolve(), ports, args.worker_cores,
               args.worker_memory, args.driver_memory, args.executor_memory)
            print(f"cdc-cluster: started in {time.monotonic() - started:.0f} s")
        elif args.command == "down":
            down(folder)
        else:
            running = status(folder)
            state = load_state(folder)
            for name, is_alive in running.items():
                print(f"{name:18} {'running' if is_alive else 'stopped'}")
            if state is not None and any(running.values()):
                for name, value in state.env().items():
                    print(f"{name}={value}")
            return 0 if all(running.values()) else 1
    except ClusterError as error:
        print(f"cdc-cluster: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
