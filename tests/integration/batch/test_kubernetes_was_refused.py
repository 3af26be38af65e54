"""The ``KubernetesWAS`` gate needs the ``scheduling.k8s.io/v1alpha2`` Workload and
PodGroup, which Kubernetes serves from 1.36 on, and only when asked: on the session's
control plane (1.34, ``tests/conftest.py``) the operator refuses to start, with a message
that says what the API server lacks and how to turn it on, as KubeRay v1.7.0's manager
exits when no provider's API version is served. The gate at work is
``kubernetes136/test_kubernetes_was.py``."""

from __future__ import annotations

import subprocess

from hack.localcluster import LocalCluster
from hack.localcluster.versions import KUBERNETES
from tests.operatorprocess import OperatorProcess


def test_the_operator_refuses_to_start_without_the_workload_api(
    ray_crds: LocalCluster, namespace: str
) -> None:
    assert ray_crds.server_version() == KUBERNETES  # 1.34: the API does not exist here
    operator = OperatorProcess(ray_crds.kubeconfig, namespace, "--feature-gates=KubernetesWAS=true")
    done = subprocess.run(operator.arguments, env=operator.env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "KubernetesWAS" in output and "workloads of scheduling.k8s.io/v1alpha2" in output, output
    assert "--runtime-config=scheduling.k8s.io/v1alpha2=true" in output, output
    assert "Traceback" not in output, output
