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
