"""Side by side with KubeRay: the same manifests, two operators, one control plane.

KubeRay's ray-operator (built from its Go module) watches one namespace and ours another;
each sample RayCluster goes to both, and the pods and services each operator creates are
compared after normalization. Every difference must be listed in
``normalize.KNOWN_DIFFERENCES`` with its reason (mirrored in docs/conformance.md); anything
else fails the test.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack.localcluster import LocalCluster
from operator_runtime.runtime.kinds import POD, SERVICE
from tests.integration.conformance import normalize
from tests.integration.conformance import operators as operators_pair
from tests.kubeclient import shared_client

REPO_ROOT = Path(__file__).resolve().parents[3]
SAMPLES = [
    "raycluster-minimal",
    "raycluster-autoscaler",
    "raycluster-gpu",
    "raycluster-gcs-ft-redis",
    "raycluster-multihost",
]


@pytest.fixture(scope="module")
def operators(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
    tuple[str, str]
]:  # fmt: skip
    """(our namespace, KubeRay's namespace), each watched by one operator."""
    local_cluster.apply_crds(REPO_ROOT / "operator_runtime/api/crds")
    local_cluster.wait_for_crds()
    with operators_pair.running(local_cluster, tmp_path_factory.mktemp("conformance")) as pair:
        yield pair.ours, pair.theirs


def _children(cluster: LocalCluster, namespace: str, name: str) -> dict[str, list[Any]]:
    kube = shared_client(cluster)
    pods = kube.list(POD, namespace, label_selector=f"ray.io/cluster={name}")["items"]
    services = [
        item
        for item in kube.list(SERVICE, namespace)["items"]
        if any(ref.get("name") == name for ref in item["metadata"].get("ownerReferences", []))
    ]
    grouped: dict[str, list[Any]] = {}
    for pod in pods:
        normalized = normalize.pod(pod)
        if namespace.startswith("ours-"):
            normalized = normalize.as_kuberay_v1_6(normalized)
        grouped.setdefault(normalize.role({**pod, "kind": "Pod"}), []).append(normalized)
    for svc in services:
        key = normalize.role({**svc, "kind": "Service"})
        grouped.setdefault(key, []).append(normalize.service(svc))
    for items in grouped.values():
        items.sort(key=lambda item: json.dumps(item, sort_keys=True))
    return grouped


def _expected_pods(manifest: dict[str, Any]) -> int:
    groups = manifest["spec"].get("workerGroupSpecs", [])
    return 1 + sum(g.get("replicas", 0) * g.get("numOfHosts", 1) for g in groups)


@pytest.mark.parametrize("sample", SAMPLES)
def test_pods_and_services_match_kuberay(
    local_cluster: LocalCluster, operators: tuple[str, str], sample: str
) -> None:
    ours, theirs = operators
    manifest = yaml.safe_load((REPO_ROOT / "examples" / "manifests" / f"{sample}.yaml").read_text())
    name = manifest["metadata"]["name"]
    expected = _expected_pods(manifest)
    for namespace in (ours, theirs):
        local_cluster.kubectl("-n", namespace, "apply", "-f", "-", input=yaml.safe_dump(manifest))

    deadline = time.monotonic() + 90
    while True:
        mine, kuberay_objects = (_children(local_cluster, ns, name) for ns in (ours, theirs))
        counts = [sum(len(v) for k, v in side.items() if k.startswith("Pod/"))
                  for side in (mine, kuberay_objects)]  # fmt: skip
        if counts == [expected, expected] and set(mine) == set(kuberay_objects):
            break
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{sample}: expected {expected} pods from each operator, got ours={counts[0]} "
                f"kuberay={counts[1]}; roles ours={sorted(mine)} kuberay={sorted(kuberay_objects)}"
            )
        time.sleep(0.5)

    found = [
        f"{role}[{index}]{line}"
        for role in sorted(mine)
        for index, (a, b) in enumerate(zip(mine[role], kuberay_objects[role], strict=True))
        for line in normalize.differences(a, b)
    ]
    assert normalize.unexplained(found) == [], "\n".join(normalize.unexplained(found))
