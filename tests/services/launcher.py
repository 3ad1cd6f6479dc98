"""Start, stop and inspect the local engines the AWS-backend tests run against.

OpenSearch: the Maven project in ``tests/services/opensearch`` resolves the server, the
transport-netty4, lang-painless and analysis-common modules and the k-NN plugin from Maven
Central; ``hindsight.services.Launcher`` starts one node in a JVM with those plugins on the
classpath. moto: ``moto_server`` from this virtualenv. Both run in the background; pid files and
logs live under ``.services/`` (git-ignored). Only processes started here are ever stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.services import MOTO_URL, OPENSEARCH_URL

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / ".services"
POM = Path(__file__).resolve().parent / "opensearch" / "pom.xml"
BUILD = STATE / "opensearch-build"
START_TIMEOUT_S = float(os.environ.get("HINDSIGHT_SERVICES_TIMEOUT", "120"))
STOP_TIMEOUT_S = 30.0
HEAP = os.environ.get("HINDSIGHT_OPENSEARCH_HEAP", "1g")


class ServiceError(Exception):
    """A local engine could not be built, started or stopped."""


@dataclass(frozen=True)
class Service:
    """One background engine: how to recognise, probe and log it."""

    name: str
    url: str
    probe_path: str
    marker: str  # a string in the process's command line, checked before signalling it

    @property
    def pid_file(self) -> Path:
        return STATE / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return STATE / f"{self.name}.log"


OPENSEARCH = Service(
    "opensearch",
    OPENSEARCH_URL,
    "/_cluster/health?wait_for_status=yellow&timeout=1s",
    "hindsight.services.Launcher",
)
MOTO = Service("moto", MOTO_URL, "/moto-api/", "tests.integration.moto_serialized")
SERVICES = (OPENSEARCH, MOTO)


def _say(message: str) -> None:
    print(message, flush=True)


def answers(service: Service, timeout: float = 2.0) -> bool:
    """True when the service answers its probe with a 2xx status."""
    try:
        with urllib.request.urlopen(service.url + service.probe_path, timeout=timeout) as resp:
            return 200 <= resp.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _read_pid(service: Service) -> int | None:
    try:
        return int(service.pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def _is_ours(pid: int, service: Service) -> bool:
    """The pid is alive and its command line is the one this launcher started."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    return service.marker in cmdline


def _running_pid(service: Service) -> int | None:
    pid = _read_pid(service)
    if pid is not None and _is_ours(pid, service):
        return pid
    return None


def _log_tail(service: Service, lines: int = 40) -> str:
    try:
        text = service.log_file.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text[-lines:])


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    """Serialise start/stop between concurrent callers (several test runs at once)."""
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "launcher.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --- OpenSearch ---------------------------------------------------------------------------


def _java() -> str:
    explicit = os.environ.get("HINDSIGHT_JAVA")
    if explicit:
        return explicit
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise ServiceError("java not found: install a JDK 17+ or set JAVA_HOME / HINDSIGHT_JAVA")
    return found


def _maven(args: list[str], log: Path) -> bool:
    mvn = shutil.which("mvn")
    if not mvn:
        raise ServiceError("mvn not found: install Apache Maven 3.8+")
    with log.open("a") as out:
        out.write(f"\n$ mvn {' '.join(args)}\n")
        out.flush()
        result = subprocess.run(
            [mvn, "-B", "-q", "-f", str(POM), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    return result.returncode == 0


def opensearch_classpath() -> str:
    """Build the launcher and resolve its classpath once; cached under ``.services/``."""
    cache = STATE / "opensearch-classpath.txt"
    sources = [POM, *POM.parent.joinpath("src").rglob("*.java")]
    newest = max(path.stat().st_mtime for path in sources)
    if cache.exists() and cache.stat().st_mtime > newest:
        classpath = cache.read_text().strip()
        if all(Path(entry).exists() for entry in classpath.split(os.pathsep)):
            return classpath  # else ~/.m2 or the build output was cleaned: build again
    STATE.mkdir(parents=True, exist_ok=True)
    deps = STATE / "opensearch-dependencies.txt"
    goals = [
        "package",
        "dependency:build-classpath",
        f"-Dmdep.outputFile={deps}",
        "-Dmdep.includeScope=runtime",
    ]
    log = STATE / "maven.log"
    log.write_text("")
    _say("building the OpenSearch launcher (Maven)...")
    # Offline first: after the first resolve everything is in ~/.m2.
    if not _maven(["-o", *goals], log) and not _maven(goals, log):
        raise ServiceError(f"Maven could not build the OpenSearch launcher; see {log}")
    knn_jars = sorted((BUILD / "knn").glob("*.jar"))
    if not knn_jars:
        raise ServiceError(f"the k-NN plugin zip was not unpacked into {BUILD / 'knn'}")
    parts = [str(BUILD / "classes"), deps.read_text().strip(), *map(str, knn_jars)]
    classpath = os.pathsep.join(parts)
    cache.write_text(classpath)
    return classpath


def _opensearch_command(
    home: Path = STATE / "opensearch", http_port: int = 9200, transport_port: int = 9300
) -> list[str]:
    """The node's JVM command: the shared node's by default, another home and ports for a
    node of a caller's own (bench/soak.py stops and starts one)."""
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    return [
        _java(),
        "-Xms256m",
        f"-Xmx{HEAP}",
        "-XX:+UseG1GC",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        "-Dfile.encoding=UTF-8",
        f"-Djava.io.tmpdir={home / 'tmp'}",
        "-Dlog4j2.disable.jmx=true",
        "-cp",
        opensearch_classpath(),
        "hindsight.services.Launcher",
        str(home),
        str(http_port),
        str(transport_port),
    ]


def _moto_command() -> list[str]:
    moto = Path(sys.executable).parent / "moto_server"
    if not moto.exists():
        raise ServiceError(f"{moto} not found: pip install -e '.[test]' (moto[server])")
    # one request at a time: moto undoes a failed transaction by restoring a copy of the
    # whole table, which is unsafe when requests overlap (real DynamoDB is serializable)
    return [
        sys.executable,
        "-m",
        "tests.integration.moto_serialized",
        "-H",
        "127.0.0.1",
        "-p",
        "5055",
    ]


# --- lifecycle ----------------------------------------------------------------------------


def _spawn(service: Service, command: list[str]) -> subprocess.Popen[bytes]:
    with service.log_file.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
            start_new_session=True,  # own process group: stop signals the whole group
        )
    service.pid_file.write_text(str(process.pid))
    return process


def _wait_until_ready(started: dict[Service, subprocess.Popen[bytes]], began: float) -> None:
    pending = dict(started)
    deadline = began + START_TIMEOUT_S
    while pending:
        for service, process in list(pending.items()):
            if answers(service):
                _say(f"{service.name}: ready on {service.url} in {time.monotonic() - began:.1f} s")
                del pending[service]
            elif process.poll() is not None:
                service.pid_file.unlink(missing_ok=True)
                raise ServiceError(
                    f"{service.name} exited with code {process.returncode} while starting; "
                    f"last lines of {service.log_file}:\n{_log_tail(service)}"
                )
        if pending and time.monotonic() > deadline:
            names = ", ".join(service.name for service in pending)
            tails = "\n".join(f"--- {s.log_file}:\n{_log_tail(s)}" for s in pending)
            raise ServiceError(
                f"{names} did not answer within {START_TIMEOUT_S:.0f} s (still running; "
                f"'python -m tests.services stop' stops it)\n{tails}"
            )
        if pending:
            time.sleep(0.5)


def start() -> None:
    """Start every engine that is not answering yet and wait until all answer."""
    with _lock():
        if not answers(OPENSEARCH):
            opensearch_classpath()  # build first: the start timeout counts the node alone
        began = time.monotonic()
        started: dict[Service, subprocess.Popen[bytes]] = {}
        for service in SERVICES:
            if answers(service):
                owner = "started here" if _running_pid(service) else "not started by this launcher"
                _say(f"{service.name}: already running on {service.url} ({owner})")
                continue
            if _running_pid(service):
                raise ServiceError(
                    f"{service.name} (pid {_read_pid(service)}) is running but does not answer "
                    f"on {service.url}; run 'python -m tests.services stop' first"
                )
            command = _opensearch_command() if service is OPENSEARCH else _moto_command()
            _say(f"{service.name}: starting (log {service.log_file})")
            started[service] = _spawn(service, command)
        _wait_until_ready(started, began)


def _stop_one(service: Service) -> None:
    pid = _running_pid(service)
    if pid is None:
        service.pid_file.unlink(missing_ok=True)
        note = " (something else answers there)" if answers(service, 0.5) else ""
        _say(f"{service.name}: not running from this launcher{note}")
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _is_ours(pid, service) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _is_ours(pid, service):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        _say(f"{service.name}: did not stop within {STOP_TIMEOUT_S:.0f} s; killed")
    else:
        _say(f"{service.name}: stopped (pid {pid})")
    service.pid_file.unlink(missing_ok=True)


def stop() -> None:
    """Stop the engines this launcher started and wait until they are gone."""
    with _lock():
        for service in SERVICES:
            _stop_one(service)


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def status() -> bool:
    """Print each engine's state; True when all of them answer."""
    all_up = True
    for service in SERVICES:
        pid = _running_pid(service)
        up = answers(service)
        all_up = all_up and up
        detail = f"pid {pid}" if pid else "no pid file"
        rss = _rss_mib(pid) if pid else None
        if rss is not None:
            detail += f", RSS {rss:.0f} MiB"
        if service is OPENSEARCH and up:
            detail += ", " + _opensearch_summary()
        _say(f"{service.name}: {'up' if up else 'down'} on {service.url} ({detail})")
    return all_up


def _opensearch_summary() -> str:
    try:
        with urllib.request.urlopen(OPENSEARCH_URL + "/", timeout=2) as resp:
            info = json.load(resp)
        return f"OpenSearch {info['version']['number']}"
    except (urllib.error.URLError, OSError, ValueError, KeyError):
        return "version unknown"
