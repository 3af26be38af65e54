"""Side by side with KubeRay under each batch scheduler: KubeRay's ray-operator (v1.6.2,
``hack/kuberay``) and ours, both started with the same ``--batch-scheduler``, each given
the same RayCluster, must create the same pods and the same PodGroup.

No scheduler runs here (the pods stay Pending): what is compared is what the operators
write. The cluster carries every scheduler's input label at once (Volcano's queue, the
priority class, ``ray.io/gang-scheduling-enabled``, YuniKorn's application and queue,
KAI's queue), so each scheduler picks what it reads from one manifest. The PodGroup CRDs
(Volcano's, scheduler-plugins') come from the schedulers' cached builds (``hack/gang``):
KubeRay's Volcano plugin watches PodGroups and needs the CRD to start.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack import gang, kuberay
from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_port
from tests.integration.conformance import normalize
from tests.integration.conformance.test_kuberay_conformance import (
    REPO_ROOT,
    _children,
    _unexplained,
)

LABELS = {
    "volcano.sh/queue-name": "research",
    "ray.io/priority-class-name": "high",
    "ray.io/gang-scheduling-enabled": "true",
    "yunikorn.apache.org/app-id": "app-1",
    "yunikorn.apache.org/queue": "root.research",
    "kai.scheduler/queue": "team-a",
}
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
"""KubeRay copies all of the owner's annotations onto its Volcano PodGroup, kubectl's
record of the applied RayCluster included; our caches drop that annotation (its size, and
no controller reads it), so our PodGroup lacks it (docs/conformance.md)."""
POD_GROUPS = {
    "volcano": "podgroups.scheduling.volcano.sh",
    "scheduler-plugins": "podgroups.scheduling.x-k8s.io",
}


@pytest.fixture(scope="module")
def crds(local_cluster: LocalCluster) -> LocalCluster:
    local_cluster.kubectl(
        "apply", "--server-side", "-f", str(REPO_ROOT / "operator_runtime/api/crds")
    )
    for scheduler in ("volcano", "scheduler-plugins"):
        built = gang.ensure_built(scheduler)
        for crd in gang.SCHEDULERS[scheduler].crd_names:
            path = built.path(crd)
            local_cluster.kubectl("apply", "--server-side", "-f", str(path))
    local_cluster.wait_for_crds()
    return local_cluster


@pytest.fixture(params=["volcano", "scheduler-plugins", "yunikorn", "kai-scheduler"])
def operators(
    request: pytest.FixtureRequest, crds: LocalCluster, tmp_path: Path
) -> Iterator[tuple[str, str, str]]:
    """(scheduler, our namespace, KubeRay's namespace), each watched by one operator
    started with ``--batch-scheduler=<scheduler>``."""
    scheduler = str(request.param)
    flag = f"--batch-scheduler={scheduler}"
    suffix = uuid.uuid4().hex[:6]
    ours, theirs = f"ours-{suffix}", f"kuberay-{suffix}"
    for namespace in (ours, theirs):
        crds.kubectl("create", "namespace", namespace)
    kuberay_process = kuberay.start_operator(
        kubeconfig=crds.kubeconfig, watch_namespace=theirs, log_path=tmp_path / "kuberay.log",
        metrics_port=free_port(), probe_port=free_port(), extra=(flag,),
    )  # fmt: skip
    with (tmp_path / "ours.log").open("wb") as our_log:
        our_process = subprocess.Popen(
            [sys.executable, "-m", "operator_runtime", f"--kubeconfig={crds.kubeconfig}",
             f"--watch-namespace={ours}", "--enable-leader-election=false",
             f"--metrics-addr=127.0.0.1:{free_port()}",
             f"--health-probe-bind-address=127.0.0.1:{free_port()}", flag],
            stdout=our_log, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
        )  # fmt: skip
    try:
        yield scheduler, ours, theirs
    finally:
        for process in (our_process, kuberay_process):
            process.terminate()
            process.wait(timeout=30)
        for namespace in (ours, theirs):
            crds.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def pod_group(cluster: LocalCluster, resource: str, namespace: str) -> dict[str, Any] | None:
    items = cluster.get_json("-n", namespace, resource)["items"]
    if not items:
        return None
    (found,) = items
    metadata = normalize._metadata(found)
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items()
                   if k != LAST_APPLIED}  # fmt: skip
    return {"metadata": {**metadata, "annotations": annotations}, "spec": found.get("spec")}


def test_pods_and_pod_group_match_kuberay(
    crds: LocalCluster, operators: tuple[str, str, str]
) -> None:
    scheduler, ours, theirs = operators
    path = REPO_ROOT / "examples" / "manifests" / "raycluster-minimal.yaml"
    manifest = yaml.safe_load(path.read_text())
    manifest["metadata"]["labels"] = dict(LABELS)
    name = manifest["metadata"]["name"]
    for namespace in (ours, theirs):
        crds.kubectl(
            "-n", namespace, "apply", "-f", "-", input=yaml.safe_dump(copy.deepcopy(manifest))
        )
    deadline = time.monotonic() + 90
    while True:
        mine, theirs_children = (_children(crds, ns, name) for ns in (ours, theirs))
        counts = [
            sum(len(v) for k, v in side.items() if k.startswith("Pod/"))
            for side in (mine, theirs_children)
        ]
        if counts == [2, 2] and set(mine) == set(theirs_children):
            break
        assert time.monotonic() < deadline, f"{scheduler}: pods ours/kuberay {counts}"
        time.sleep(0.5)
    found = [
        f"{role}[{index}]{line}"
        for role in sorted(mine)
        for index, (a, b) in enumerate(zip(mine[role], theirs_children[role], strict=True))
        for line in normalize.differences(a, b)
    ]
    assert _unexplained(found) == [], "\n".join(_unexplained(found))
    head = next(items[0] for role, items in mine.items() if role.startswith("Pod/head"))
    print(f"\n{scheduler}: schedulerName {head['spec'].get('schedulerName')!r}, "
          f"pod labels and annotations identical to KubeRay v1.6.2's")  # fmt: skip
    resource = POD_GROUPS.get(scheduler)
    if resource is None:
        for namespace in (ours, theirs):
            for kind in POD_GROUPS.values():
                assert crds.get_json("-n", namespace, kind)["items"] == [], (scheduler, kind)
        return
    groups = [pod_group(crds, resource, ns) for ns in (ours, theirs)]
    assert groups[0] is not None and groups[1] is not None, groups
    differences = normalize.differences(groups[0], groups[1])
    assert differences == [], "\n".join(differences)
    print(f"{scheduler}: PodGroup identical: {groups[0]['spec']}")


SCHEDULING_KEYS = (
    "scheduling.k8s.io/group-name", "volcano.sh/task-spec", "volcano.sh/queue-name",
    "ray.io/priority-class-name", "applicationId", "queue", "yunikorn.apache.org/task-groups",
    "yunikorn.apache.org/task-group-name", "kai.scheduler/queue",
    "scheduling.x-k8s.io/pod-group",
)  # fmt: skip
"""The keys a scheduler adds to a child: a RayJob's cluster has a random name, so its
pods are compared on these (and ``schedulerName``) alone."""


def rayjob_status(cluster: LocalCluster, namespace: str) -> dict[str, Any]:
    return dict(cluster.get_json("-n", namespace, "rayjob", "gang").get("status") or {})


def scheduling_view(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    """What the schedulers read of a RayJob's cluster and its pods (by role)."""
    found = cluster.get_json("-n", namespace, "raycluster", name)["metadata"]
    meta = {**(found.get("labels") or {}), **(found.get("annotations") or {})}
    view: dict[str, Any] = {"cluster": {k: meta[k] for k in SCHEDULING_KEYS if k in meta}}
    for pod in cluster.get_json("-n", namespace, "pods", "-l", f"ray.io/cluster={name}")["items"]:
        pod_meta = {**pod["metadata"].get("labels", {}), **pod["metadata"].get("annotations", {})}
        view[normalize.role({**pod, "kind": "Pod"})] = {
            "schedulerName": pod["spec"].get("schedulerName"),
            **{k: pod_meta[k] for k in SCHEDULING_KEYS if k in pod_meta},
        }
    return view


def test_a_rayjobs_gang_matches_kuberay(
    crds: LocalCluster, operators: tuple[str, str, str]
) -> None:
    """A K8sJobMode RayJob: Volcano's PodGroup of the RayJob (cluster + submitter), the
    stamps on its cluster and pods; scheduler-plugins and KAI refuse such a RayJob, so
    neither operator makes a cluster and both leave it Initializing."""
    scheduler, ours, theirs = operators
    path = REPO_ROOT / "examples" / "manifests" / "raycluster-minimal.yaml"
    cluster_spec = yaml.safe_load(path.read_text())["spec"]
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "gang", "labels": dict(LABELS)},
        "spec": {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": cluster_spec},
    }
    for namespace in (ours, theirs):
        crds.kubectl("-n", namespace, "apply", "-f", "-", input=yaml.safe_dump(job))
    if scheduler in ("scheduler-plugins", "kai-scheduler"):
        time.sleep(5)  # both have had many passes at it by now (retried with backoff)
        for namespace in (ours, theirs):
            status = rayjob_status(crds, namespace)
            assert status.get("jobDeploymentStatus") == "Initializing", (namespace, status)
            assert crds.get_json("-n", namespace, "raycluster")["items"] == [], namespace
        return
    names = []
    for namespace in (ours, theirs):
        deadline = time.monotonic() + 60
        while not (name := rayjob_status(crds, namespace).get("rayClusterName")):
            assert time.monotonic() < deadline, f"{namespace}: no cluster"
            time.sleep(0.2)
        names.append(str(name))
    deadline = time.monotonic() + 90
    while True:
        views = [scheduling_view(crds, ns, n) for ns, n in zip((ours, theirs), names, strict=True)]
        if len(views[0]) == len(views[1]) == 3 and views[0] == views[1]:
            break
        assert time.monotonic() < deadline, "\n".join(normalize.differences(*views))
        time.sleep(0.5)
    print(f"\n{scheduler}: RayJob's cluster and pods stamped as KubeRay v1.6.2 does: {views[0]}")
    if scheduler == "volcano":
        groups = [pod_group(crds, POD_GROUPS["volcano"], ns) for ns in (ours, theirs)]
        assert groups[0] is not None and groups[1] is not None, groups
        assert normalize.differences(groups[0], groups[1]) == []
        print(f"volcano: the RayJob's PodGroup identical: {groups[0]['spec']}")
