"""A container runtime for the pods a test wants run for real (a RayJob's submitter).

kwok makes every pod Running and Ready but runs nothing, and completes a Job's pods with
exit code 0 at once. A pod labelled ``RUN_FOR_REAL_LABEL: "true"`` is left Running by
kwok (``hack/localcluster/podstages.py``); a ``PodRunner`` watching its namespace then
does what a kubelet would:

- runs the pod's single container's ``command + args`` as a subprocess of this machine
  (inside the sandbox, so it reaches what the pod would reach), once, as with
  ``restartPolicy: Never``, in a session of its own, stdout and stderr to a per-pod log;
- with this process's environment, ``PATH`` led by this Python's ``bin`` (where ``ray``
  is), and the container's literal ``env`` values on top, ``$(VAR)`` references
  expanded in env, command and args as the kubelet does. ``valueFrom`` entries (Secrets,
  ConfigMaps, the downward API) are ignored, and so are ``envFrom``, ``image``, volumes
  and ``workingDir`` (it runs in a scratch directory of its own);
- when the process exits, writes the pod's terminal status through the status
  subresource: phase Succeeded or Failed, Ready and ContainersReady False, and
  ``containerStatuses[0].state.terminated`` with the real exit code, reason Completed or
  Error, startedAt and finishedAt. The Job controller counts it as it would a real pod.

A pod deleted while its process runs (the Job was deleted, or hit its deadline) has the
process killed. Stopping the runner kills every process it started.

    with PodRunner(client_or_kubeconfig, namespace) as runner:
        ...
        code = runner.wait(pod_name, timeout=60)
        text = runner.log(pod_name)
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hack import sandbox
from hack.localcluster.podstages import RUN_FOR_REAL_LABEL
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import ApiError, NotFound, TransportError
from operator_runtime.runtime.kinds import POD, Object
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.transport import UrllibTransport, load_configuration
from tests.scratch import scratch_dir

__all__ = ["RUN_FOR_REAL_LABEL", "PodRunner", "expand"]

_REFERENCE = re.compile(r"\$(\$|\(([^)]*)\))")


def expand(text: str, variables: Mapping[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion: a defined variable is replaced, an undefined
    reference is kept as written, ``$$`` is one ``$``, and any other ``$`` stays."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1) == "$":
            return "$"
        return variables.get(match.group(2), match.group(0))

    return _REFERENCE.sub(replace, text)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Run:
    name: str
    process: subprocess.Popen[bytes]
    started_at: str
    deleted: bool = False


class PodRunner:
    """Runs the labelled pods of one namespace; use as a context manager."""

    def __init__(
        self,
        client: KubeClient | str | os.PathLike[str],
        namespace: str,
        *,
        log_dir: Path | None = None,
    ) -> None:
        sandbox.require_inside("a pod runner (its processes dial kwok's addresses)")
        if not isinstance(client, KubeClient):
            transport = UrllibTransport(load_configuration(os.fspath(client)))
            client = KubeClient(transport, limiter=TokenBucket(1000, 2000))
        self.client = client
        self.namespace = namespace
        self._scratch = scratch_dir(f"podrunner-{namespace}-")
        self.log_dir = log_dir or self._scratch / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._runs: dict[str, _Run] = {}
        """pod uid -> its process, for every pod this runner started."""
        self._exits: dict[str, int] = {}
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._stream: Any = None
        self._threads: list[threading.Thread] = []
        self._watcher = threading.Thread(target=self._watch, name="podrunner", daemon=True)
        self.errors: list[BaseException] = []
        """Failures of the runner itself (a status it could not write); a test checks."""

    # -- what a test uses -----------------------------------------------------------------

    @property
    def exits(self) -> dict[str, int]:
        """pod name -> exit code, for every process that ended on its own."""
        with self._lock:
            return dict(self._exits)

    @property
    def started(self) -> list[str]:
        """Names of the pods whose command was started, in order."""
        with self._lock:
            return [run.name for run in self._runs.values()]

    def log_path(self, pod_name: str) -> Path:
        return self.log_dir / f"{pod_name}.log"

    def log(self, pod_name: str) -> str:
        """What the pod's process wrote to stdout and stderr so far ("" before it ran)."""
        path = self.log_path(pod_name)
        return path.read_text(errors="replace") if path.exists() else ""

    def wait(self, pod_name: str, timeout: float = 120) -> int:
        """The exit code of ``pod_name``'s process once it ended and its status is written."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while pod_name not in self._exits:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"pod {self.namespace}/{pod_name} did not finish in {timeout:.0f}s; "
                        f"started: {self.started}; log: {self.log(pod_name)[-2000:]!r}"
                    )
                self._lock.wait(min(remaining, 0.5))
            return self._exits[pod_name]

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> PodRunner:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        self._watcher.start()

    def stop(self) -> None:
        """Stop watching and kill every process this runner started (and its children)."""
        self._stopping.set()
        stream = self._stream
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            _kill(run.process)
        self._watcher.join(timeout=30)
        for thread in self._threads:
            thread.join(timeout=30)
        shutil.rmtree(self._scratch / "pods", ignore_errors=True)  # the logs stay

    # -- the watch ------------------------------------------------------------------------

    def _watch(self) -> None:
        selector = f"{RUN_FOR_REAL_LABEL}=true"
        while not self._stopping.is_set():
            try:
                pods, version = self.client.list_all(POD, self.namespace, label_selector=selector)
                for pod in pods:
                    self._observe("ADDED", pod)
                self._stream = self.client.watch(
                    POD, self.namespace, resource_version=version, label_selector=selector,
                    timeout_seconds=60,
                )  # fmt: skip
                for event in self._stream:
                    if self._stopping.is_set() or event["type"] == "ERROR":
                        break
                    if event["type"] != "BOOKMARK":
                        self._observe(event["type"], event["object"])
            except (ApiError, TransportError, ValueError, OSError):
                if not self._stopping.is_set():
                    time.sleep(0.2)  # relist and watch again
            finally:
                stream, self._stream = self._stream, None
                if stream is not None:
                    with contextlib.suppress(Exception):
                        stream.close()

    def _observe(self, event_type: str, pod: Object) -> None:
        metadata = pod["metadata"]
        uid = metadata["uid"]
        with self._lock:
            run = self._runs.get(uid)
        if event_type == "DELETED" or metadata.get("deletionTimestamp"):
            if run is not None and run.process.poll() is None:
                run.deleted = True
                _kill(run.process)
            return
        if run is None and (pod.get("status") or {}).get("phase") == "Running":
            self._start(pod)

    def _start(self, pod: Object) -> None:
        name = pod["metadata"]["name"]
        container = pod["spec"]["containers"][0]
        declared: dict[str, str] = {}  # what $(VAR) may name, as for the kubelet
        for variable in container.get("env") or []:
            if "valueFrom" not in variable:
                declared[variable["name"]] = expand(variable.get("value", ""), declared)
        argv = [expand(part, declared) for part in
                [*(container.get("command") or []), *(container.get("args") or [])]]  # fmt: skip
        bin_dir = str(Path(sys.executable).parent)
        path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        environment = {**os.environ, "PATH": path, **declared}
        workdir = self._scratch / "pods" / pod["metadata"]["uid"]
        workdir.mkdir(parents=True, exist_ok=True)
        started_at = _now()
        with self.log_path(name).open("ab") as log:
            try:
                process = subprocess.Popen(
                    argv, cwd=workdir, env=environment, stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
            except (OSError, IndexError, ValueError) as exc:
                # No command (the image's entrypoint is unknown here) or none found: the
                # container fails, with the shell's code for "command not found".
                log.write(f"podrunner: cannot run {argv!r}: {exc}\n".encode())
                process = subprocess.Popen(
                    ["sh", "-c", "exit 127"], stdin=subprocess.DEVNULL, start_new_session=True
                )
        run = _Run(name, process, started_at)
        with self._lock:
            self._runs[pod["metadata"]["uid"]] = run
        thread = threading.Thread(target=self._finish, args=(pod, run), daemon=True)
        self._threads.append(thread)
        thread.start()

    def _finish(self, pod: Object, run: _Run) -> None:
        code = run.process.wait()
        if run.deleted or self._stopping.is_set():
            return
        try:
            self.client.patch(POD, run.name, self.namespace, _terminal_status(pod, run, code),
                              subresource="status")  # fmt: skip
        except NotFound:
            return
        except (ApiError, TransportError) as exc:
            self.errors.append(exc)
            return
        with self._lock:
            self._exits[run.name] = code
            self._lock.notify_all()


def _terminal_status(pod: Object, run: _Run, code: int) -> Object:
    """A merge patch of the status subresource: lists are replaced whole, so the
    conditions are the pod's own with Ready and ContainersReady turned False."""
    now = _now()
    container = pod["spec"]["containers"][0]
    conditions = []
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition["type"] in ("Ready", "ContainersReady"):
            condition = {**condition, "status": "False", "reason": "PodCompleted",
                         "lastTransitionTime": now}  # fmt: skip
        conditions.append(condition)
    exit_code = code if code >= 0 else 128 - code  # killed by signal N: 128 + N
    terminated = {
        "exitCode": exit_code,
        "reason": "Completed" if exit_code == 0 else "Error",
        "startedAt": run.started_at,
        "finishedAt": now,
    }
    return {
        "status": {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "conditions": conditions,
            "containerStatuses": [
                {
                    "name": container["name"],
                    "image": container.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {"terminated": terminated},
                }
            ],
        }
    }


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
