"""Reduce the pods and services two operators created to what must be equal.

What differs between two runs for reasons unrelated to the operator is removed: server
assigned identity (uid, resourceVersion, timestamps), random name suffixes, the namespace,
scheduling results (node, IPs), and what admission adds (the projected service-account
token volume, default tolerations). Everything else stays, so a difference in labels,
annotations, commands, env order, probes, ports or selectors shows up.
"""

from __future__ import annotations

import copy
import re
from typing import Any

Obj = dict[str, Any]

_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
)
_SCHEDULING = ("nodeName", "tolerations", "enableServiceLinks", "preemptionPolicy", "priority")
_REPLICA_NAME = "ray.io/worker-group-replica-name"
_SERVICE_ACCOUNT_VOLUME = re.compile(r"^kube-api-access-[a-z0-9]{5}$")


def _replace_namespace(value: Any, namespace: str) -> Any:
    if isinstance(value, str):
        return value.replace(f".{namespace}.", ".<ns>.")
    if isinstance(value, list):
        return [_replace_namespace(item, namespace) for item in value]
    if isinstance(value, dict):
        return {key: _replace_namespace(item, namespace) for key, item in value.items()}
    return value


def _metadata(obj: Obj) -> Obj:
    metadata = {k: v for k, v in obj["metadata"].items() if k not in _SERVER_METADATA}
    metadata.pop("namespace", None)
    if "generateName" in metadata:
        metadata.pop("name", None)
    metadata["ownerReferences"] = [
        {k: v for k, v in reference.items() if k != "uid"}
        for reference in metadata.get("ownerReferences", [])
    ]
    return metadata


def _pod_spec(spec: Obj) -> Obj:
    spec = {k: v for k, v in spec.items() if k not in _SCHEDULING}
    spec["volumes"] = [
        volume
        for volume in spec.get("volumes", [])
        if not _SERVICE_ACCOUNT_VOLUME.match(volume["name"])
    ]
    for containers in ("initContainers", "containers"):
        for container in spec.get(containers, []):
            container["volumeMounts"] = [
                mount
                for mount in container.get("volumeMounts", [])
                if not _SERVICE_ACCOUNT_VOLUME.match(mount["name"])
            ]
    return spec


def pod(obj: Obj) -> Obj:
    """A pod as its operator meant it."""
    namespace = obj["metadata"]["namespace"]
    normalized = {"metadata": _metadata(obj), "spec": _pod_spec(copy.deepcopy(obj["spec"]))}
    labels = normalized["metadata"].get("labels", {})
    if _REPLICA_NAME in labels:  # <group>-<5 random characters>
        labels[_REPLICA_NAME] = labels[_REPLICA_NAME][:-5] + "<rand5>"
    result: Obj = _replace_namespace(normalized, namespace)
    return result


def service(obj: Obj) -> Obj:
    """A service as its operator meant it (without the allocated cluster IPs)."""
    namespace = obj["metadata"]["namespace"]
    spec = {
        k: v
        for k, v in obj["spec"].items()
        if k not in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy")
    }
    if obj["spec"].get("clusterIP") == "None":
        spec["clusterIP"] = "None"
    result: Obj = _replace_namespace({"metadata": _metadata(obj), "spec": spec}, namespace)
    return result


_JOB_CONTROLLER_LABELS = (
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
    "controller-uid",
    "job-name",
)
"""What the Job API defaults into a Job's selector and pod template: its uid and name."""


def resource(obj: Obj, *, status: bool = False) -> Obj:
    """A custom resource (a PodGroup, a RayJob's RayCluster) as its operator meant it:
    metadata and spec, and the status where the creator writes it (a Volcano PodGroup
    has no status subresource, so KubeRay's ``phase: Pending`` is stored at creation)."""
    namespace = obj["metadata"]["namespace"]
    normalized = {"metadata": _metadata(obj), "spec": copy.deepcopy(obj.get("spec", {}))}
    if status:
        normalized["status"] = copy.deepcopy(obj.get("status"))
    result: Obj = _replace_namespace(normalized, namespace)
    return result


def job(obj: Obj) -> Obj:
    """A submitter Job as its operator meant it: without what the Job API derives from
    its uid (selector, controller labels), its pod template reduced like a pod's."""
    namespace = obj["metadata"]["namespace"]
    spec = copy.deepcopy(obj["spec"])
    spec.pop("selector", None)
    template = spec["template"]
    template["spec"] = _pod_spec(template["spec"])
    metadata = _metadata(obj)
    for labels in (metadata.get("labels", {}), template["metadata"].get("labels", {})):
        for key in _JOB_CONTROLLER_LABELS:
            labels.pop(key, None)
    result: Obj = _replace_namespace({"metadata": metadata, "spec": spec}, namespace)
    return result


def rename(value: Any, old: str, new: str) -> Any:
    """``value`` with every occurrence of a generated name (a RayJob's cluster,
    ``<job>-<5 random characters>``) replaced by a placeholder, keys included."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [rename(item, old, new) for item in value]
    if isinstance(value, dict):
        return {rename(key, old, new): rename(item, old, new) for key, item in value.items()}
    return value


def role(obj: Obj) -> str:
    """A stable name for an object among its siblings: kind, node type and group."""
    labels = obj["metadata"].get("labels", {})
    return "/".join(
        [
            obj.get("kind", "?"),
            labels.get("ray.io/node-type", "-"),
            labels.get("ray.io/group", "-"),
            obj["metadata"].get("name", "") if obj.get("kind") == "Service" else "",
        ]
    )


def differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Every leaf where two normalized objects differ, as ``path: ours != theirs``."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found: list[str] = []
        for key in sorted(set(ours) | set(theirs)):
            found += differences(ours.get(key), theirs.get(key), f"{path}.{key}")
        return found
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        found = []
        for index, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
            found += differences(mine, other, f"{path}[{index}]")
        return found
    if ours == theirs or (ours in (None, [], {}) and theirs in (None, [], {})):
        return []
    return [f"{path}: ours={ours!r} kuberay={theirs!r}"]


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
        r"\.env\[\d+\]\.value: ours='kuberay_version=v1\.7\.0;kuberay_crd=(RayCluster|RayJob)' "
        r"kuberay='kuberay_version=v1\.6\.2;kuberay_crd=\1'",
        "usage-stats tag carries each operator's version",
    ),
)


_V1_7_ULIMIT = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; "


def as_kuberay_v1_6(pod: Obj) -> Obj:
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


def unexplained(found: list[str]) -> list[str]:
    """The lines of ``found`` no entry of ``KNOWN_DIFFERENCES`` explains."""
    return [
        line
        for line in found
        if not any(re.search(pattern, line) for pattern, _ in KNOWN_DIFFERENCES)
    ]
