"""``make demo``: the ray.io/v1 API and our operator on a real local control plane.

Starts the local control plane, installs our generated CRDs, runs the operator, applies
the sample RayCluster, waits until it is ``ready`` with its pods Running on kwok nodes,
and shows what ``kubectl`` shows a user. Then a RayJob: a real Ray head
(``ray start --head``) stands in for the head pod kwok does not run, the operator
reaches it through the API server's service proxy (``--use-kubernetes-proxy``: the
API server dials the kwok head pod's IP, which the sandbox routes to this machine),
submits the entrypoint and follows it to Complete. Everything is torn down at the end.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hack import sandbox
from hack.localcluster import LocalCluster, start_for_tests
from hack.rayhead import start_ray_head
from operator_runtime.clients import DashboardPool, direct_endpoint

REPO_ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = REPO_ROOT / "operator_runtime" / "api" / "crds"
SAMPLE = REPO_ROOT / "examples" / "manifests" / "raycluster-minimal.yaml"
JOB_SAMPLE = REPO_ROOT / "examples" / "manifests" / "rayjob-local.yaml"
DASHBOARD_PORT = 8265
"""The sample's head declares no ports, so its Service has KubeRay's default 8265; the
real head listens there."""


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
             "--health-probe-bind-address=127.0.0.1:0", "--log-stdout-encoder=console",
             "--use-kubernetes-proxy"],
            stdout=output, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
        )  # fmt: skip


def _wait_for_job(cluster: LocalCluster, started: float, timeout: float = 180) -> None:
    """Poll the RayJob, printing each state it passes through, until it is finished."""
    seen = ""
    while time.monotonic() - started < timeout:
        status = cluster.get_json("rayjob/rayjob-local").get("status") or {}
        state = f"{status.get('jobDeploymentStatus', '')}/{status.get('jobStatus', '')}"
        if state != seen:
            print(f"  {time.monotonic() - started:5.1f} s  {state}", flush=True)
            seen = state
        if status.get("jobDeploymentStatus") == "Complete":
            return
        if status.get("jobDeploymentStatus") == "Failed":
            why = f"{status.get('reason')}: {status.get('message')}"
            raise RuntimeError(f"the RayJob failed: {why}")
        time.sleep(1)
    raise TimeoutError(f"the RayJob did not finish in {timeout:.0f} s (last: {seen})")


def _run_job(cluster: LocalCluster) -> None:
    print(f"\nstarting a real Ray head (dashboard on :{DASHBOARD_PORT}) ...", flush=True)
    head = start_ray_head(dashboard_port=DASHBOARD_PORT)
    try:
        print(f"Ray head up in {head.started_in:.1f} s", flush=True)
        started = time.monotonic()
        _show(cluster, "apply", "-f", str(JOB_SAMPLE))
        print("\nwaiting for the RayJob to reach `Complete` ...", flush=True)
        _wait_for_job(cluster, started)
        print(f"RayJob created -> Complete in {time.monotonic() - started:.1f} s", flush=True)
        _show(cluster, "get", "rayjobs", "-o", "wide")
        job_id = cluster.kubectl("get", "rayjob/rayjob-local", "-o",
                                 "jsonpath={.status.jobId}").stdout.strip()  # fmt: skip
        with DashboardPool() as pool:
            logs = pool.dashboard(direct_endpoint(f"127.0.0.1:{DASHBOARD_PORT}")).job_logs(job_id)
        print(f"\n$ ray job logs {job_id}\n{logs}", flush=True)
    finally:
        head.stop()


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
                try:
                    _run_job(cluster)
                except Exception:
                    log = (Path(state_dir) / "operator.log").read_text(errors="replace")
                    print("\n--- the operator's log (last 40 lines) ---", flush=True)
                    print("\n".join(log.splitlines()[-40:]), flush=True)
                    raise
            finally:
                operator.terminate()
                operator.wait(timeout=30)
        finally:
            cluster.stop()
    print("\ndemo finished; the local control plane is stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
