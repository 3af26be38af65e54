"""``make demo``: the ray.io/v1 API and our operator on a real local control plane.

Starts the local control plane, installs our generated CRDs, runs the operator, applies
the sample RayCluster, waits until it is ``ready`` with its pods Running on kwok nodes,
shows what ``kubectl`` shows a user, and tears everything down again.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from hack import sandbox
from hack.localcluster import LocalCluster, start_for_tests

REPO_ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = REPO_ROOT / "operator_runtime" / "api" / "crds"
SAMPLE = REPO_ROOT / "examples" / "manifests" / "raycluster-minimal.yaml"


def _show(cluster: LocalCluster, *args: str) -> None:
    print(f"\n$ kubectl {' '.join(args)}", flush=True)
    print(cluster.kubectl(*args).stdout, flush=True)


def _start_operator(cluster: LocalCluster, state_dir: Path) -> subprocess.Popen[bytes]:
    log = state_dir / "operator.log"
    print(f"\n$ python -m operator_runtime --kubeconfig ... (log: {log})", flush=True)
    with log.open("wb") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "operator_runtime", f"--kubeconfig={cluster.kubeconfig}",
             "--enable-leader-election=false", "--metrics-addr=127.0.0.1:0",
             "--health-probe-bind-address=127.0.0.1:0", "--log-stdout-encoder=console"],
            stdout=output, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
        )  # fmt: skip


def main() -> int:
    sandbox.exit_unless_inside("the demo")
    with tempfile.TemporaryDirectory(prefix="pulumi-ray-demo-") as state_dir:
        cluster = start_for_tests(Path(state_dir))
        try:
            # Server-side apply: the CRDs are too large for the last-applied annotation.
            _show(cluster, "apply", "--server-side", "-f", str(CRD_DIR))
            _show(cluster, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
            operator = _start_operator(cluster, Path(state_dir))
            try:
                _show(cluster, "apply", "-f", str(SAMPLE))
                print("\nwaiting for the operator to bring the RayCluster to `ready` ...")
                _show(cluster, "wait", "raycluster/raycluster-minimal",
                      "--for=jsonpath={.status.state}=ready", "--timeout=120s")  # fmt: skip
                _show(cluster, "get", "rayclusters", "-o", "wide")
                _show(cluster, "get", "pods,services", "-o", "wide")
                _show(cluster, "explain", "raycluster.spec.headGroupSpec")
            finally:
                operator.terminate()
                operator.wait(timeout=30)
        finally:
            cluster.stop()
    print("\ndemo finished; the local control plane is stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
