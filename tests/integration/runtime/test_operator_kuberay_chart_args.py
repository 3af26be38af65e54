"""The operator started with exactly the args KubeRay's own Helm chart gives its
operator by default, against the local control plane: it runs, serves what the chart's
probes ask for, and reconciles.

The args are what ``helm-chart/kuberay-operator/templates/deployment.yaml`` renders from
``values.yaml`` with every value at its default (``configuration.enabled: false``, so
the flags, not a ConfigMap). The template is the same at both tags; the values differ
in the feature gates. Worked out by hand from those two files (no helm binary here):

- v1.6.2 = ray-project/kuberay 598eb66aa077c55ae04fa87b192238a3ec184e88
- v1.7.0 = ray-project/kuberay 59d663aeec13760646da3db9c1cf8cfe883e30b7

The chart's command is ``/manager``; ours is ``python -m operator_runtime``. The only
arg added is ``--kubeconfig`` (a flag KubeRay's operator has too): in a pod the
in-cluster config is used instead. Ports stay the chart's (:8080 metrics, :8082
probes): the sandbox is a network namespace of its own, and the one other test that binds
them (the operator run from its image) takes turns with this one (``sandbox.fixed_ports``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from hack import sandbox
from hack.localcluster import LocalCluster
from hack.localhttp import LOCAL_HTTP
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_CLUSTER, SERVICE
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    gc_probe,
    live_pods,
    make_client,
    ray_crds,
    raycluster,
)
from tests.waiting import wait_for

_COMMON = [
    "--log-stdout-encoder", "json",
    "--log-file-encoder", "json",
    "--enable-leader-election=true",
    "--enable-metrics=true",
    "--reconcile-concurrency=1",
    "--qps=100",
    "--burst=200",
]  # fmt: skip
CHART_ARGS = {
    "v1.6.2": [
        *_COMMON,
        "--feature-gates=RayClusterStatusConditions=true,RayJobDeletionPolicy=true,"
        "RayMultiHostIndexing=true,RayServiceIncrementalUpgrade=false,RayCronJob=false",
    ],
    "v1.7.0": [
        *_COMMON,
        "--feature-gates=RayClusterStatusConditions=true,RayJobDeletionPolicy=true,"
        "RayMultiHostIndexing=true,RayServiceIncrementalUpgrade=true,RayCronJob=false,"
        "RayClusterMTLS=false,RayClusterNetworkPolicy=false,RayClusterHistoryServer=false",
    ],
}


@pytest.mark.parametrize("release", sorted(CHART_ARGS))
def test_the_charts_default_args_run_and_reconcile(
    release: str,
    ray_crds: LocalCluster,  # noqa: F811
    namespace: str,
    tmp_path: Path,
) -> None:
    kube: KubeClient = make_client(ray_crds)
    log_path = tmp_path / "operator.log"
    arguments = [sys.executable, "-m", "operator_runtime", *CHART_ARGS[release],
                 f"--kubeconfig={ray_crds.kubeconfig}"]  # fmt: skip
    with sandbox.fixed_ports(8080, 8082):
        with open(log_path, "wb") as log:
            process = subprocess.Popen(arguments, stdout=log, stderr=subprocess.STDOUT)
        try:
            # The chart's liveness and readiness probes: GET /metrics on port 8080.
            wait_for("/metrics on :8080", lambda: _get("http://127.0.0.1:8080/metrics"), 60)
            assert _get("http://127.0.0.1:8082/healthz")
            kube.create(raycluster("chart", namespace, workers=1))
            wait_for(
                "the head and the worker pod",
                lambda: (
                    len(live_pods(kube, namespace, "chart", "head")) == 1
                    and len(live_pods(kube, namespace, "chart", "worker")) == 1
                ),
                60,
            )
            assert kube.get(SERVICE, "chart-head-svc", namespace)
            # RayClusterStatusConditions is on in both charts: the conditions are written.
            wait_for("the cluster's status conditions", lambda: _conditions(kube, namespace), 60)
            # --enable-metrics=true: the RayCluster metrics are on /metrics.
            wait_for(
                "kuberay_cluster_info for the cluster",
                lambda: _cluster_info(_get("http://127.0.0.1:8080/metrics") or "", namespace),
                30,
            )
            assert process.poll() is None, log_path.read_text()
        finally:
            process.terminate()
            code = process.wait(60)
        output = log_path.read_text()
        assert code == 0, output
        assert "Traceback" not in output, output
        lines = [line for line in output.splitlines() if line.strip()]
        assert all(line.startswith("{") for line in lines), lines[:5]  # --log-stdout-encoder json


def _conditions(kube: KubeClient, namespace: str) -> bool:
    status = kube.get(RAY_CLUSTER, "chart", namespace).get("status") or {}
    return bool(status.get("conditions"))


def _cluster_info(metrics: str, namespace: str) -> bool:
    return any(
        line.startswith("kuberay_cluster_info{")
        and 'name="chart"' in line
        and f'namespace="{namespace}"' in line
        for line in metrics.splitlines()
    )


def _get(url: str) -> str | None:
    try:
        response = LOCAL_HTTP.get(url, timeout=2)
    except httpx.HTTPError:
        time.sleep(0.2)
        return None
    return response.text if response.status_code == 200 else None
