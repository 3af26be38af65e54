"""The webhook that halves Ray pods' CPU requests for KubeRay's four-core e2e packages
(``tests/node/scaled_requests.py``), registered on a real API server: the pods it selects
are stored scaled, others as written, a pod it cannot answer for is refused rather than
stored unscaled, and nothing is left registered after it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from hack.localcluster.cluster import KubectlError
from tests.node.scaled_requests import NAME, cpu_requests_scaled

SELECTOR = {"pulumi-ray.invalid/scaled-requests-test": "yes"}
"""This test's own label, so the worker's other tests' pods are never selected."""


def _pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{
            "name": "ray-head", "image": "registry.invalid/ray:never-pulled",
            "resources": {"requests": {"cpu": "1", "memory": "1G"},
                          "limits": {"cpu": "2", "memory": "2G"}},
        }]},
    }  # fmt: skip


def _create(cluster: LocalCluster, namespace: str, pod: dict[str, Any]) -> dict[str, Any]:
    cluster.kubectl("-n", namespace, "create", "-f", "-", input=json.dumps(pod))
    return cluster.get_json("-n", namespace, "pod", pod["metadata"]["name"])


def test_selected_pods_are_stored_with_halved_cpu_requests_and_limits_kept(
    local_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    with cpu_requests_scaled(local_cluster, tmp_path, SELECTOR) as scaled:
        selected = _create(local_cluster, namespace, _pod("selected", SELECTOR))
        other = _create(local_cluster, namespace, _pod("other", {"app": "other"}))
    assert len(scaled) == 1
    resources = selected["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"cpu": "500m", "memory": "1G"},
                         "limits": {"cpu": "2", "memory": "2G"}}  # fmt: skip
    assert other["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"
    assert not local_cluster.kubectl("get", "mutatingwebhookconfiguration", NAME,
                                     "--ignore-not-found", "-o", "name").stdout  # fmt: skip
    after = _create(local_cluster, namespace, _pod("after", SELECTOR))
    assert after["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"


def test_a_selected_pod_is_refused_when_the_webhook_cannot_answer(
    local_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    with cpu_requests_scaled(local_cluster, tmp_path, SELECTOR):
        configuration = local_cluster.get_json("mutatingwebhookconfiguration", NAME)
        webhook = configuration["webhooks"][0]
        # Pointed at a port nothing serves: the API server's call fails.
        webhook["clientConfig"]["url"] = "https://127.0.0.1:1/mutate"
        local_cluster.kubectl("replace", "-f", "-", input=json.dumps(configuration))
        with pytest.raises(KubectlError, match=r'failed calling webhook "cpu-requests\.e2e'):
            _create(local_cluster, namespace, _pod("refused", SELECTOR))
    assert not local_cluster.kubectl("-n", namespace, "get", "pod", "refused",
                                     "--ignore-not-found", "-o", "name").stdout  # fmt: skip
