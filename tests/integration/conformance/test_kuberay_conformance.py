"""Side by side with KubeRay: the same manifests, two operators, one control plane.

KubeRay's ray-operator (built from its Go module) watches one namespace and ours another;
each sample RayCluster goes to both, and the pods and services each operator creates are
compared after normalization. Every difference must be listed in ``KNOWN_DIFFERENCES``
with its reason (mirrored in docs/conformance.md); anything else fails the test.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack import kuberay
from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_port
from tests.integration.conformance import normalize

REPO_ROOT = Path(__file__).resolve().parents[3]
SAMPLES = [
    "raycluster-minimal",
    "raycluster-autoscaler",
    "raycluster-gpu",
    "raycluster-gcs-ft-redis",
    "raycluster-multihost",
]

KNOWN_DIFFERENCES: tuple[tuple[str, str], ...] = (
    (
        r"\.annotations\.ray\.io/kuberay-version: ours='v1\.7\.0' kuberay='v1\.6\.2'",
        "each operator stamps its own version",
    ),
    (
        r"\.annotations\.ray\.io/upgrade-strategy-recreate-hash: ours='[0-9A-V]{32}' "
        r"kuberay='[0-9A-V]{32}'",
        "the spec hash only has to be self-consistent: a head pod stamped by another operator "
        "version is restamped, never recreated",
    ),
    (
        r"\.env\[\d+\]\.value: ours='kuberay_version=v1\.7\.0;kuberay_crd=RayCluster' "
        r"kuberay='kuberay_version=v1\.6\.2;kuberay_crd=RayCluster'",
        "usage-stats tag carries each operator's version",
    ),
)


_V1_7_ULIMIT = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; "


def as_kuberay_v1_6(pod: dict[str, Any]) -> dict[str, Any]:
    """Undo, on one of our normalized pods, what KubeRay v1.7.0 added over v1.6.2:
    the overridable open-files limit and the autoscaler's KUBERAY_GEN_AUTOSCALER_START_CMD
    (docs/conformance.md). The comparison then holds us to everything else."""
    for container in pod["spec"].get("containers", []):
        container["args"] = [
            arg.replace(_V1_7_ULIMIT, "ulimit -n 65536; ") for arg in container.get("args", [])
        ]
        container["env"] = [
            env
            for env in container.get("env", [])
            if env["name"] != "KUBERAY_GEN_AUTOSCALER_START_CMD"
        ]
    return pod


@pytest.fixture(scope="module")
def operators(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
    tuple[str, str]
]:  # fmt: skip
    """(our namespace, KubeRay's namespace), each watched by one operator."""
    local_cluster.kubectl(
        "apply", "--server-side", "-f", str(REPO_ROOT / "operator_runtime/api/crds")
    )
    local_cluster.wait_for_crds()
    suffix = uuid.uuid4().hex[:6]
    ours, theirs = f"ours-{suffix}", f"kuberay-{suffix}"
    for namespace in (ours, theirs):
        local_cluster.kubectl("create", "namespace", namespace)
    logs = tmp_path_factory.mktemp("conformance")
    kuberay_process = kuberay.start_operator(
        kubeconfig=local_cluster.kubeconfig, watch_namespace=theirs,
        log_path=logs / "kuberay.log", metrics_port=free_port(), probe_port=free_port(),
    )  # fmt: skip
    with (logs / "ours.log").open("wb") as our_log:
        our_process = subprocess.Popen(
            [sys.executable, "-m", "operator_runtime", f"--kubeconfig={local_cluster.kubeconfig}",
             f"--watch-namespace={ours}", "--enable-leader-election=false",
             f"--metrics-addr=127.0.0.1:{free_port()}",
             f"--health-probe-bind-address=127.0.0.1:{free_port()}"],
            stdout=our_log, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
        )  # fmt: skip
    try:
        yield ours, theirs
    finally:
        for process in (our_process, kuberay_process):
            process.terminate()
            process.wait(timeout=30)
        for namespace in (ours, theirs):
            local_cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def _children(cluster: LocalCluster, namespace: str, name: str) -> dict[str, list[Any]]:
    selector = f"ray.io/cluster={name}"
    pods = cluster.get_json("-n", namespace, "pods", "-l", selector)["items"]
    services = [
        item
        for item in cluster.get_json("-n", namespace, "services")["items"]
        if any(ref.get("name") == name for ref in item["metadata"].get("ownerReferences", []))
    ]
    grouped: dict[str, list[Any]] = {}
    for pod in pods:
        normalized = normalize.pod(pod)
        if namespace.startswith("ours-"):
            normalized = as_kuberay_v1_6(normalized)
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


def _unexplained(found: list[str]) -> list[str]:
    return [
        line
        for line in found
        if not any(re.search(pattern, line) for pattern, _ in KNOWN_DIFFERENCES)
    ]


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
    assert _unexplained(found) == [], "\n".join(_unexplained(found))
