"""``make demo``: the ray.io/v1 API on a real local control plane, start to finish.

Starts the local control plane, installs our generated CRDs, applies the sample
RayCluster, shows what ``kubectl`` shows a user, and tears everything down again.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from hack.localcluster import LocalCluster, start_for_tests

REPO_ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = REPO_ROOT / "operator_runtime" / "api" / "crds"
SAMPLE = REPO_ROOT / "examples" / "manifests" / "raycluster-minimal.yaml"


def _show(cluster: LocalCluster, *args: str) -> None:
    print(f"\n$ kubectl {' '.join(args)}", flush=True)
    print(cluster.kubectl(*args).stdout, flush=True)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pulumi-ray-demo-") as state_dir:
        cluster = start_for_tests(Path(state_dir))
        try:
            # Server-side apply: the CRDs are too large for the last-applied annotation.
            _show(cluster, "apply", "--server-side", "-f", str(CRD_DIR))
            _show(cluster, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
            _show(cluster, "apply", "-f", str(SAMPLE))
            _show(cluster, "get", "rayclusters", "-o", "wide")
            _show(cluster, "explain", "raycluster.spec.headGroupSpec")
        finally:
            cluster.stop()
    print("\ndemo finished; the local control plane is stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
