"""Side by side with KubeRay for the gang schedulers (issue 30): ``--batch-scheduler``.

For each scheduler KubeRay v1.6.2 accepts (volcano, scheduler-plugins, yunikorn,
kai-scheduler, and the deprecated ``--enable-batch-scheduler``), KubeRay's operator and
ours run with that flag, each on a namespace of its own, and receive the same RayClusters
and RayJobs. Every input carries the labels KubeRay's schedulers read
(``ray.io/priority-class-name``, ``ray.io/gang-scheduling-enabled``, the Volcano, YuniKorn
and KAI queue labels, Volcano's network topology) except one plain cluster, and has several worker
groups with minReplicas, a multi-host group and requests and limits, so minMember and
minResources are sums worth checking. What each operator created is compared after
normalization: pods (schedulerName, labels, annotations, all of it), services, PodGroups
(Volcano's ``scheduling.volcano.sh/v1beta1``, scheduler-plugins'
``scheduling.x-k8s.io/v1alpha1``), a RayJob's RayCluster and its submitter Job.

No scheduler runs: the PodGroup CRDs are installed (KubeRay's Volcano plugin watches
PodGroups, and both plugins read them through the cache, which needs the kind served), and
pods naming a scheduler stay Pending. For the K8sJobMode RayJob the test plays the
scheduler's part and binds the cluster's pods to the kwok node, so the cluster becomes ready
and each operator creates its submitter Job.

``_expected`` is what KubeRay v1.6.2's code says each case creates (read from its
``controllers/ray/batchscheduler``); the test first holds KubeRay to it, then us to KubeRay.
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import pytest
import yaml

from hack import gang
from hack.localcluster import LocalCluster
from operator_runtime.runtime.kinds import JOB, POD, RAY_CLUSTER, RAY_JOB, SERVICE, ResourceKind
from tests.integration.conformance import normalize
from tests.integration.conformance import operators as operators_pair
from tests.integration.conformance.operators import REPO_ROOT, Pair
from tests.kubeclient import shared_client

Obj = dict[str, Any]

SCHEDULERS: Final = ("volcano", "scheduler-plugins", "yunikorn", "kai-scheduler")
RUNS: Final = {
    **{name: (f"--batch-scheduler={name}", name) for name in SCHEDULERS},
    "enable-batch-scheduler": ("--enable-batch-scheduler=true", "volcano"),
}
"""Each run of both operators: its flag and the plugin it selects (KubeRay's deprecated
``--enable-batch-scheduler`` means Volcano)."""

POD_GROUP_KINDS: Final = {
    "volcano": ResourceKind("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups"),
    "scheduler-plugins": ResourceKind("scheduling.x-k8s.io/v1alpha1", "PodGroup", "podgroups"),
}
"""The PodGroup kind each scheduler's plugin writes, by ``--batch-scheduler`` name."""

SCHEDULING_LABELS: Final = {
    "ray.io/gang-scheduling-enabled": "true",
    "ray.io/priority-class-name": "team-high",
    "volcano.sh/queue-name": "team-a",
    "yunikorn.apache.org/app-id": "team-a-app",
    "yunikorn.apache.org/queue": "root.team-a",
    "kai.scheduler/queue": "team-a",
    "volcano.sh/network-topology-mode": "hard",
    "volcano.sh/network-topology-highest-tier-allowed": "2",
}
"""Every label KubeRay v1.6.2's four plugins read from a RayCluster or RayJob."""

ANNOTATIONS: Final = {"example.com/owner": "team-a"}
"""A user's annotation on every input: Volcano's PodGroup copies its owner's annotations.
(The inputs are created, not applied, so kubectl's last-applied-configuration, which our
caches drop, is not among them: docs/conformance.md.)"""
JOB_STATUS_FIELDS: Final = ("jobDeploymentStatus", "jobStatus", "reason", "message")
"""A RayJob's status fields compared (the rest are times, ids and the cluster's status)."""
IMAGE: Final = "rayproject/ray:2.52.0"
WAIT: Final = 120.0
"""Seconds both operators have to create what a case expects: each creates a pod within
one reconcile of seeing its cluster, which takes a few seconds; the rest is a loaded
machine (two cores, other sessions' control planes)."""


def _container(requests: dict[str, str], limits: dict[str, str]) -> Obj:
    resources = {key: value for key, value in (("requests", requests), ("limits", limits)) if value}
    return {"name": "ray", "image": IMAGE, "resources": resources}


def _worker(name: str, replicas: int, low: int, high: int, container: Obj, hosts: int = 1) -> Obj:
    group: Obj = {
        "groupName": name,
        "replicas": replicas,
        "minReplicas": low,
        "maxReplicas": high,
        "rayStartParams": {},
        "template": {"spec": {"containers": [container]}},
    }
    if hosts > 1:
        group["numOfHosts"] = hosts
    return group


def _cluster_spec(*workers: Obj, autoscaling: bool = False) -> Obj:
    """A head of 1 CPU/2Gi requested (2 CPU limit) and ``workers``."""
    head = _container({"cpu": "1", "memory": "2Gi"}, {"cpu": "2", "memory": "2Gi"})
    spec: Obj = {
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}},
        "workerGroupSpecs": list(workers),
    }
    if autoscaling:
        spec["enableInTreeAutoscaling"] = True
    return spec


# A worker with a request map that lacks a limited resource (memory): KubeRay v1.6.2's
# resource sum writes the limit into that map (see KNOWN_DIFFERENCES below).
SMALL: Final = _container({"cpu": "500m"}, {"cpu": "1", "memory": "1Gi"})
# Limits only: the sums take the limits as requests.
GPU: Final = _container({}, {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"})


PLACEMENT: Final = {
    "tolerations": [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "team", "operator": "Equal", "value": "a", "effect": "NoExecute"},
    ],
    "affinity": {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {
                        "matchExpressions": [
                            {"key": "accelerator", "operator": "In", "values": ["a100", "h100"]}
                        ]
                    },
                }
            ]
        }
    },
}
"""Placement on the GPU group, which YuniKorn's task groups repeat. Only a preference and
tolerations: the K8sJobMode case binds pods itself, and a required selector the kwok node
does not match would make that binding a lie."""


def _static_workers() -> list[Obj]:
    gpu = _worker("gpu", 1, 1, 2, GPU, hosts=2)
    gpu["template"]["spec"].update(copy.deepcopy(PLACEMENT))
    return [_worker("small", 3, 1, 5, SMALL), gpu]


def _manifest(kind: str, name: str, spec: Obj, labels: dict[str, str]) -> Obj:
    return {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "metadata": {"name": name, "labels": dict(labels), "annotations": dict(ANNOTATIONS)},
        "spec": spec,
    }


def _job(name: str, mode: str) -> Obj:
    spec: Obj = {
        "entrypoint": "python -c 'print(42)'",
        "submissionMode": mode,
        "shutdownAfterJobFinishes": False,
        "rayClusterSpec": _cluster_spec(*_static_workers()),
    }
    return _manifest("RayJob", name, spec, SCHEDULING_LABELS)


INPUTS: Final = {
    # Autoscaling off: minMember and minResources come from replicas (clamped to min/max).
    "cluster-gang": _manifest(
        "RayCluster", "gang", _cluster_spec(*_static_workers()), SCHEDULING_LABELS
    ),
    # Autoscaling on: they come from minReplicas; the head gets the autoscaler sidecar.
    "cluster-autoscaling": _manifest(
        "RayCluster",
        "elastic",
        _cluster_spec(
            _worker("small", 3, 2, 5, SMALL), _worker("idle", 0, 0, 3, GPU), autoscaling=True
        ),
        SCHEDULING_LABELS,
    ),
    # No scheduling label: what each plugin does for a cluster that asks for nothing.
    "cluster-plain": _manifest(
        "RayCluster", "plain", _cluster_spec(_worker("small", 1, 1, 1, SMALL)), {}
    ),
    "job-k8s": _job("batch", "K8sJobMode"),
    "job-sidecar": _job("sidecar", "SidecarMode"),
}


@dataclass(frozen=True)
class Expected:
    """What KubeRay v1.6.2 creates for one input under one scheduler."""

    pods: int
    """Head and worker pods (0: the RayJob never gets a cluster)."""
    pod_groups: int
    submitter: bool = False
    """A K8sJobMode submitter Job, once the cluster is ready."""


_STATIC_PODS: Final = 1 + 3 + 1 * 2
_CASE_PODS: Final = {
    "cluster-gang": _STATIC_PODS,
    "cluster-autoscaling": 1 + 3,
    "cluster-plain": 2,
    "job-k8s": _STATIC_PODS,
    "job-sidecar": _STATIC_PODS,
}


def _expected(scheduler: str, case: str) -> Expected:
    """KubeRay v1.6.2, from its plugins' code:

    - volcano: one PodGroup per RayCluster (gang label or not), or per RayJob
      (``ray-<job>-pg``) whose cluster then creates none;
    - scheduler-plugins: a PodGroup only for a RayCluster with the gang label, and a RayJob
      is refused ("currently only RayCluster is supported") before its cluster is created;
    - yunikorn: no object, only pod labels and annotations;
    - kai-scheduler: no object; a K8sJobMode RayJob is refused before its cluster exists.
    """
    pods = _CASE_PODS[case]
    refused = (scheduler == "scheduler-plugins" and case.startswith("job-")) or (
        scheduler == "kai-scheduler" and case == "job-k8s"
    )
    if refused:
        return Expected(pods=0, pod_groups=0)
    groups = {
        "volcano": 1,
        "scheduler-plugins": int(case != "cluster-plain"),
    }.get(scheduler, 0)
    return Expected(pods=pods, pod_groups=groups, submitter=case == "job-k8s")


@pytest.fixture(scope="module")
def gang_crds(local_cluster: LocalCluster) -> LocalCluster:
    """Our CRDs and both PodGroup CRDs, as ``hack/gang`` copied them from the schedulers'
    modules (cached by ``make gang-schedulers``)."""
    local_cluster.apply_crds(REPO_ROOT / "operator_runtime/api/crds")
    for scheduler, kind in POD_GROUP_KINDS.items():
        group = kind.api_version.split("/", 1)[0]
        path = gang.ensure_built(scheduler).path(f"{group}_podgroups.yaml")
        local_cluster.apply_crds(path)
    local_cluster.wait_for_crds()
    return local_cluster


@pytest.fixture(scope="module")
def pair(
    request: pytest.FixtureRequest,
    gang_crds: LocalCluster,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Pair]:
    """Both operators with the flag of ``RUNS[<param>]`` (parametrized indirectly, so
    pytest runs one scheduler's cases together on one pair of operators)."""
    run: str = request.param
    logs = tmp_path_factory.mktemp(f"gangconf-{run}")
    with operators_pair.running(gang_crds, logs, RUNS[run][0]) as running:
        yield running


def _owned_by(item: Obj, names: set[str]) -> bool:
    return any(ref.get("name") in names for ref in item["metadata"].get("ownerReferences", []))


def _snapshot(cluster: LocalCluster, namespace: str, manifest: Obj) -> dict[str, Obj]:
    """Everything the operator created for ``manifest``, normalized, by a stable key.

    A RayJob's cluster is named ``<job>-<5 random characters>``, and so is its job id:
    they are replaced by ``<cluster>`` and ``<job-id>`` everywhere (pod labels,
    generateName, service selectors, env, the submit command).

    Read with the kept-alive client: polled every half second for both operators, this
    was some sixteen ``kubectl`` processes a poll."""
    kube = shared_client(cluster)
    name = manifest["metadata"]["name"]
    clusters = [name]
    found: dict[str, Obj] = {}
    if manifest["kind"] == "RayJob":
        status = kube.get(RAY_JOB, name, namespace).get("status") or {}
        job_id = status.get("jobId")
        found["RayJob/status"] = {key: status.get(key) for key in JOB_STATUS_FIELDS}
        owned = [
            item for item in kube.list(RAY_CLUSTER, namespace)["items"] if _owned_by(item, {name})
        ]
        clusters = [item["metadata"]["name"] for item in owned]
        for item in owned:
            found[f"RayCluster/{item['metadata']['name']}"] = normalize.resource(item)
        for item in kube.list(JOB, namespace)["items"]:
            if _owned_by(item, {name}):
                found[f"Job/{item['metadata']['name']}"] = normalize.job(item)
    pods: dict[str, list[Obj]] = {}
    for cluster_name in clusters:
        for item in kube.list(POD, namespace, label_selector=f"ray.io/cluster={cluster_name}")[
            "items"
        ]:
            pod = normalize.pod(item)
            if namespace.startswith("ours-"):
                pod = normalize.as_kuberay_v1_6(pod)
            pods.setdefault(normalize.role({**item, "kind": "Pod"}), []).append(pod)
    for role, items in pods.items():
        items.sort(key=lambda item: json.dumps(item, sort_keys=True))
        for index, item in enumerate(items):
            found[f"{role}[{index}]"] = item
    for item in kube.list(SERVICE, namespace)["items"]:
        if _owned_by(item, {name, *clusters}):
            found[normalize.role({**item, "kind": "Service"})] = normalize.service(item)
    for scheduler, kind in POD_GROUP_KINDS.items():
        for item in kube.list(kind, namespace)["items"]:
            if not _owned_by(item, {name, *clusters}):
                continue  # another case's
            key = f"PodGroup.{scheduler}/{item['metadata']['name']}"
            found[key] = normalize.resource(item, status=True)
    for cluster_name in clusters:
        if cluster_name != name:
            found = normalize.rename(found, cluster_name, "<cluster>")
    if manifest["kind"] == "RayJob" and job_id:  # <job>-<5 random characters> too
        found = normalize.rename(found, job_id, "<job-id>")
    return found


def _counts(snapshot: dict[str, Obj]) -> Expected:
    return Expected(
        pods=sum(key.startswith("Pod/") for key in snapshot),
        pod_groups=sum(key.startswith("PodGroup.") for key in snapshot),
        submitter=any(key.startswith("Job/") for key in snapshot),
    )


def _bind_pods(cluster: LocalCluster, namespace: str, job: str) -> None:
    """Play the scheduler for the RayJob ``job``'s cluster: bind each of its pods not yet
    bound to the first kwok node (which then runs them Ready)."""
    node = cluster.get_json("nodes")["items"][0]["metadata"]["name"]
    name = cluster.get_json("-n", namespace, "rayjobs.ray.io", job)["status"]["rayClusterName"]
    for pod in cluster.get_json("-n", namespace, "pods", "-l", f"ray.io/cluster={name}")["items"]:
        if pod["spec"].get("nodeName"):
            continue
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod["metadata"]["name"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        cluster.kubectl(
            "create", "--raw",
            f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}/binding",
            "-f", "-", input=json.dumps(binding),
        )  # fmt: skip


def _job_status(cluster: LocalCluster, namespace: str, name: str) -> Obj:
    status = shared_client(cluster).get(RAY_JOB, name, namespace).get("status") or {}
    return {key: status.get(key) for key in JOB_STATUS_FIELDS}


@dataclass
class Sides:
    """The latest snapshot of both namespaces."""

    ours: dict[str, Obj]
    theirs: dict[str, Obj]


def _wait(
    cluster: LocalCluster,
    pair: Pair,
    manifest: Obj,
    done: Callable[[Sides], bool],
    what: str,
    timeout: float = WAIT,
    explain: Callable[[Sides], str] | None = None,
) -> Sides:
    """Snapshot both sides until ``done(sides)``; fail at once if our operator exits, and
    at the deadline with ``explain(sides)`` (by default what each side has)."""
    deadline = time.monotonic() + timeout
    while True:
        sides = Sides(*(_snapshot(cluster, ns, manifest) for ns in (pair.ours, pair.theirs)))
        if done(sides):
            return sides
        if failure := pair.our_failure():
            raise AssertionError(failure)
        if time.monotonic() > deadline:
            seen = explain(sides) if explain is not None else (
                f"ours={_counts(sides.ours)} {sorted(sides.ours)}; "
                f"kuberay={_counts(sides.theirs)} {sorted(sides.theirs)}"
            )  # fmt: skip
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}: {seen}")
        time.sleep(0.5)


def as_kuberay_v1_6_volcano_job_cluster(cluster: Obj) -> Obj:
    """Redo, on the RayCluster our operator built for a RayJob under Volcano, what KubeRay
    v1.6.2 does to it by accident (docs/conformance.md): its Volcano plugin sums the
    RayJob's resources with ``CalculatePodResource``, which writes every limit a
    container's requests lack into that requests map (when the map exists), on the
    RayJob's cached spec the cluster is then copied from. v1.7.0 sums a copy. Pods are
    unaffected: the API server defaults a missing request to its limit anyway."""
    spec = cluster["spec"]
    templates = [spec["headGroupSpec"]["template"]]
    templates += [group["template"] for group in spec.get("workerGroupSpecs", [])]
    for template in templates:
        for container in template["spec"].get("containers", []):
            resources = container.get("resources", {})
            if "requests" in resources:
                for name, quantity in resources.get("limits", {}).items():
                    resources["requests"].setdefault(name, quantity)
    return cluster


_V1_7_SUBMITTER_LABELS: Final = (
    "app.kubernetes.io/created-by",
    "ray.io/originated-from-cr-name",
    "ray.io/originated-from-crd",
)
_V1_7_K8S_JOB_WAIT = re.compile(r"^until .*? ; done ; ")


def as_kuberay_v1_6_submitter_job(job: Obj) -> Obj:
    """Undo, on our K8sJobMode submitter Job, what KubeRay v1.7.0 added over v1.6.2
    (docs/conformance.md): the Job's three labels repeated on its pod template, and the
    wait for the dashboard's GCS health before ``ray job submit`` (v1.6.2 waited only
    in SidecarMode)."""
    template = job["spec"]["template"]
    labels = template["metadata"].get("labels", {})
    for key in _V1_7_SUBMITTER_LABELS:
        labels.pop(key, None)
    for container in template["spec"].get("containers", []):
        if container.get("name") == "ray-job-submitter":
            container["args"] = [
                _V1_7_K8S_JOB_WAIT.sub("", arg, count=1) for arg in container.get("args", [])
            ]
    return job


def as_kuberay_v1_6_pod_group(pod_group: Obj) -> Obj:
    """Undo, on one of our PodGroups, how KubeRay v1.7.0 sums minResources
    (docs/conformance.md): it multiplies a group's pod resources by its pod count, so a
    group of zero pods adds each of its resources as ``"0"``; v1.6.2 appended the pod's
    resources once per pod, so such a group added no key at all. Only a zero count gives
    a zero sum here (every input's quantities are positive)."""
    resources = pod_group["spec"].get("minResources") or {}
    for name in [name for name, quantity in resources.items() if quantity == "0"]:
        del resources[name]
    return pod_group


def _differences(sides: Sides) -> list[str]:
    found = []
    for key in sorted(set(sides.ours) | set(sides.theirs)):
        if key not in sides.ours or key not in sides.theirs:
            side = "ours" if key in sides.ours else "kuberay"
            found.append(f"{key}: only {side} created it")
            continue
        found += [f"{key}{line}" for line in normalize.differences(*(
            side[key] for side in (sides.ours, sides.theirs)
        ))]  # fmt: skip
    return found


# ``pair`` has a parametrize of its own: in one with ``case``, each (run, case) was a
# param of its own, and pytest started a pair of operators for each of the 30 tests.
@pytest.mark.parametrize("case", INPUTS)
@pytest.mark.parametrize("pair", RUNS, indirect=True)
def test_gang_scheduler_objects_match_kuberay(
    local_cluster: LocalCluster, pair: Pair, case: str, request: pytest.FixtureRequest
) -> None:
    scheduler = RUNS[request.node.callspec.params["pair"]][1]
    manifest = copy.deepcopy(INPUTS[case])
    name = manifest["metadata"]["name"]
    expected = _expected(scheduler, case)
    for namespace in (pair.ours, pair.theirs):
        local_cluster.kubectl("-n", namespace, "create", "-f", "-", input=yaml.safe_dump(manifest))

    if expected.pods == 0:
        # Refused before any cluster exists: both must say so the same way and create
        # nothing. KubeRay marks the RayJob Initializing first, then fails each pass at
        # the batch hook; three of its 3 s requeues pass before we look again.
        _wait(
            local_cluster, pair, manifest,
            lambda _: all(
                _job_status(local_cluster, ns, name)["jobDeploymentStatus"] == "Initializing"
                for ns in (pair.ours, pair.theirs)
            ),
            "both RayJobs Initializing",
        )  # fmt: skip
        time.sleep(10)
    else:
        shape = Expected(pods=expected.pods, pod_groups=expected.pod_groups)
        _wait(
            local_cluster, pair, manifest,
            lambda s: _counts(s.theirs) == shape and _counts(s.ours) == shape
            and set(s.ours) == set(s.theirs),
            f"{shape} from each operator",
        )  # fmt: skip
        if expected.submitter:
            for namespace in (pair.ours, pair.theirs):
                _bind_pods(local_cluster, namespace, name)
    _converge(local_cluster, pair, manifest, scheduler, expected)


TASK_GROUPS: Final = "yunikorn.apache.org/task-groups"


def _parse_task_groups(value: Any) -> Any:
    """Every YuniKorn task-groups annotation in ``value`` parsed from its JSON: ours
    writes an affinity's keys sorted, Go in its struct's order, and the value is the same
    (docs/conformance.md, "Gang schedulers"). Parsed, the groups, their order and every
    field are still compared."""
    if isinstance(value, list):
        return [_parse_task_groups(item) for item in value]
    if isinstance(value, dict):
        return {
            key: json.loads(item) if key == TASK_GROUPS and isinstance(item, str)
            else _parse_task_groups(item)
            for key, item in value.items()
        }  # fmt: skip
    return value


def _mismatches(scheduler: str, sides: Sides) -> list[str]:
    """The differences no normalization explains, after our objects are taken back to
    KubeRay v1.6.2's (the ``as_kuberay_v1_6_*`` functions)."""
    ours = copy.deepcopy(sides.ours)
    for key in ours:
        if key.startswith("PodGroup."):
            as_kuberay_v1_6_pod_group(ours[key])
        if key.startswith("Job/"):
            as_kuberay_v1_6_submitter_job(ours[key])
    if scheduler == "volcano" and "RayCluster/<cluster>" in ours:
        as_kuberay_v1_6_volcano_job_cluster(ours["RayCluster/<cluster>"])
    return normalize.unexplained(
        _differences(Sides(_parse_task_groups(ours), _parse_task_groups(sides.theirs)))
    )


def _converge(
    cluster: LocalCluster, pair: Pair, manifest: Obj, scheduler: str, expected: Expected
) -> None:
    """Wait until both sides have what ``expected`` says and no difference is left. Each
    operator is level-based and takes its steps in its own order (a PodGroup resized
    before or after the new pods), so the two are compared until they agree, and at the
    deadline the last differences are the failure."""
    last: list[str] = []

    def agree(sides: Sides) -> bool:
        nonlocal last
        shaped = _counts(sides.theirs) == expected and _counts(sides.ours) == expected
        last = _mismatches(scheduler, sides) if shaped else []
        return shaped and not last

    def explain(sides: Sides) -> str:
        if last:
            return "unexplained differences:\n" + "\n".join(last)
        return f"ours={_counts(sides.ours)} kuberay={_counts(sides.theirs)}"

    _wait(cluster, pair, manifest, agree, f"{expected} alike from each operator", explain=explain)


SCALED: Final = _manifest(
    "RayCluster",
    "scaled",
    _cluster_spec(_worker("small", 1, 1, 5, SMALL), _worker("gpu", 1, 1, 2, GPU, hosts=2)),
    SCHEDULING_LABELS,
)
SCALE_UP: Final = [
    {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 3},
    {"op": "replace", "path": "/spec/workerGroupSpecs/0/minReplicas", "value": 2},
]


@pytest.mark.parametrize("pair", RUNS, indirect=True)
def test_a_scaled_cluster_matches_kuberay(
    local_cluster: LocalCluster, pair: Pair, request: pytest.FixtureRequest
) -> None:
    """A group scaled from 1 to 3 replicas (minReplicas 1 to 2) after both operators
    created the cluster. KubeRay v1.6.2: Volcano's PodGroup is resized on the next pass
    (minMember, minResources); scheduler-plugins' is created once and never updated;
    YuniKorn's task groups are computed per pod at its creation, so the new pods carry
    the new minMember and the old pod keeps the old one."""
    scheduler = RUNS[request.node.callspec.params["pair"]][1]
    manifest = copy.deepcopy(SCALED)
    for namespace in (pair.ours, pair.theirs):
        local_cluster.kubectl("-n", namespace, "create", "-f", "-", input=yaml.safe_dump(manifest))
    groups = int(scheduler in POD_GROUP_KINDS)
    _converge(local_cluster, pair, manifest, scheduler, Expected(pods=1 + 1 + 2, pod_groups=groups))
    for namespace in (pair.ours, pair.theirs):
        local_cluster.kubectl(
            "-n", namespace, "patch", "rayclusters.ray.io", "scaled", "--type=json",
            f"--patch={json.dumps(SCALE_UP)}",
        )  # fmt: skip
    _converge(local_cluster, pair, manifest, scheduler, Expected(pods=1 + 3 + 2, pod_groups=groups))
