"""Worker groups are a list map keyed by ``groupName`` in every CRD that embeds a cluster.

This is the one schema difference from KubeRay that the components rely on: with an
atomic list (KubeRay's), server-side apply gives the whole ``workerGroupSpecs`` list to
one field manager, so the Ray autoscaler writing ``replicas`` and Pulumi applying the
rest of a group conflict on every update. Keyed by ``groupName``, each group's fields
have their own owners (docs/conformance.md, "Worker groups are a list map").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from operator_runtime.api import WorkerGroupSpec, crds
from operator_runtime.api._structural import KubernetesSchemas
from operator_runtime.render import desired_worker_replicas
from tests.unit.api.crdfiles import committed_schema

# Where each kind embeds a RayClusterSpec's worker groups, as property paths.
WORKER_GROUP_PATHS = {
    "RayCluster": ("spec", "workerGroupSpecs"),
    "RayJob": ("spec", "rayClusterSpec", "workerGroupSpecs"),
    "RayService": ("spec", "rayClusterConfig", "workerGroupSpecs"),
    "RayCronJob": ("spec", "jobTemplate", "rayClusterSpec", "workerGroupSpecs"),
}


def _schema(kind: str) -> dict[str, Any]:
    resource = next(r for r in crds.RESOURCES if r.kind == kind)
    return committed_schema(resource.file_name)


def _at(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for step in path:
        schema = schema["properties"][step]
    return schema


def _worker_group_nodes(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node of a property named workerGroupSpecs, anywhere in the tree."""
    if isinstance(node, dict):
        for name, child in node.get("properties", {}).items():
            if name == "workerGroupSpecs":
                yield f"{path}.{name}", child
            yield from _worker_group_nodes(child, f"{path}.{name}")
        if isinstance(node.get("items"), dict):
            yield from _worker_group_nodes(node["items"], f"{path}[]")


@pytest.mark.parametrize("kind", sorted(WORKER_GROUP_PATHS))
def test_worker_groups_are_a_list_map_keyed_by_group_name(kind: str) -> None:
    node = _at(_schema(kind), WORKER_GROUP_PATHS[kind])
    assert node["type"] == "array"
    assert node["x-kubernetes-list-type"] == "map"
    assert node["x-kubernetes-list-map-keys"] == ["groupName"]
    items = node["items"]
    # The API server refuses a list-map key that is neither required nor defaulted; a
    # default would also let two unnamed groups collide on it.
    assert "groupName" in items["required"]
    assert items["properties"]["groupName"] == {
        "description": items["properties"]["groupName"]["description"],
        "type": "string",
    }


@pytest.mark.parametrize("kind", sorted(WORKER_GROUP_PATHS))
def test_no_worker_group_list_is_left_atomic(kind: str) -> None:
    found = dict(_worker_group_nodes(_schema(kind)))
    assert sorted(found) == ["." + ".".join(WORKER_GROUP_PATHS[kind])]
    for path, node in found.items():
        assert node.get("x-kubernetes-list-type") == "map", path


def test_generated_schema_says_so_before_yaml() -> None:
    """The model metadata, not a YAML edit, carries the list type (the CRDs are
    generated; a hand edit would be lost on the next regeneration)."""
    kubernetes = KubernetesSchemas(crds.load_kubernetes_definitions())
    schema = crds.root_schema(crds.load_models()["RayCluster"], kubernetes)
    assert _at(schema, WORKER_GROUP_PATHS["RayCluster"])["x-kubernetes-list-type"] == "map"


@pytest.mark.parametrize(("minimum", "maximum", "expected"), [(0, 5, 0), (2, 5, 2), (3, 3, 3)])
def test_a_group_applied_without_replicas_runs_min_replicas(
    minimum: int, maximum: int, expected: int
) -> None:
    """The operator's half of the bargain: the components leave ``replicas`` out for
    autoscaled groups, so a new group must start at minReplicas, never at 0 below it."""
    wire = {
        "groupName": "workers",
        "minReplicas": minimum,
        "maxReplicas": maximum,
        "template": {"spec": {"containers": [{"name": "ray-worker", "image": "ray"}]}},
    }
    group = WorkerGroupSpec.model_validate(wire)
    assert desired_worker_replicas(group) == expected
    assert desired_worker_replicas(group.model_copy(update={"replicas": None})) == expected
