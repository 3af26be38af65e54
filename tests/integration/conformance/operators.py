"""KubeRay's operator and ours side by side: each watches a namespace of its own on one
control plane, started with the same extra flags, so the same manifests go to both."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hack import kuberay
from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_port
from tests.kubeclient import delete_namespace

REPO_ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Pair:
    """The two namespaces, the operators' logs, and our process (to notice it exiting)."""

    ours: str
    theirs: str
    logs: Path
    our_process: subprocess.Popen[bytes]

    def our_failure(self) -> str | None:
        """Our operator's exit and last log lines if it has exited, else None: a test
        waiting on it should fail at once, not at its deadline."""
        code = self.our_process.poll()
        if code is None:
            return None
        tail = (self.logs / "ours.log").read_text(errors="replace").splitlines()[-30:]
        return f"our operator exited {code}:\n" + "\n".join(tail)


@contextlib.contextmanager
def running(cluster: LocalCluster, logs: Path, *flags: str) -> Iterator[Pair]:
    """Both operators with ``flags`` added, each on a fresh namespace; both stopped and
    the namespaces deleted (not waited for) when the block ends."""
    suffix = uuid.uuid4().hex[:6]
    ours, theirs = f"ours-{suffix}", f"kuberay-{suffix}"
    for namespace in (ours, theirs):
        cluster.kubectl("create", "namespace", namespace)
    kuberay_process = kuberay.start_operator(
        kubeconfig=cluster.kubeconfig, watch_namespace=theirs,
        log_path=logs / "kuberay.log", metrics_port=free_port(), probe_port=free_port(),
        extra=flags,
    )  # fmt: skip
    with (logs / "ours.log").open("wb") as our_log:
        our_process = subprocess.Popen(
            [sys.executable, "-m", "operator_runtime", f"--kubeconfig={cluster.kubeconfig}",
             f"--watch-namespace={ours}", "--enable-leader-election=false",
             f"--metrics-addr=127.0.0.1:{free_port()}",
             f"--health-probe-bind-address=127.0.0.1:{free_port()}", *flags],
            stdout=our_log, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
        )  # fmt: skip
    try:
        yield Pair(ours=ours, theirs=theirs, logs=logs, our_process=our_process)
    finally:
        for process in (our_process, kuberay_process):
            process.terminate()
            process.wait(timeout=30)
        for namespace in (ours, theirs):
            delete_namespace(cluster, namespace)
