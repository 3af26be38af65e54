"""``python -m hack.sandbox --shell``: a shell beside a local control plane, in the sandbox.

For trying things by hand after ``make demo``: the CRDs are installed, ``KUBECONFIG`` and
a ``kubectl`` of the pinned version are set, and ``python -m operator_runtime`` or a Ray
head can be started from the shell. Everything stops when the shell exits.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hack.localcluster import start_for_tests
from hack.localcluster.cluster import format_env
from hack.sandbox import DIR_ENV

CRD_DIR = Path(__file__).resolve().parents[2] / "operator_runtime" / "api" / "crds"


def run_shell() -> int:
    cluster = start_for_tests(Path(os.environ[DIR_ENV]) / "cluster")
    try:
        cluster.kubectl("apply", "--server-side", "-f", str(CRD_DIR))
        print(
            "\nIn the pulumi-ray sandbox: kwok's pod, node and service addresses lead to this "
            "machine, nothing else is reachable.\nThe local control plane is up and our CRDs "
            f"are installed:\n{format_env(cluster)}\nExit the shell to stop everything.\n",
            flush=True,
        )
        shell = os.environ.get("SHELL") or "/bin/sh"
        env = {**cluster.env, "PS1": "(ray-sandbox) \\w \\$ "}
        return subprocess.run([shell, "-i"], env=env).returncode
    finally:
        cluster.stop()
