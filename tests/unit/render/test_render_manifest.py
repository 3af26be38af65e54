"""``render_manifest``: the one path from a plain ray.io/v1 document to rendered objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from operator_runtime.api import RayCluster
from operator_runtime.render import (
    ClusterRenderParams,
    ManifestError,
    ManifestRenderParams,
    flatten_lists,
    is_ray_object,
    render_cluster,
    render_manifest,
)

MANIFESTS = Path(__file__).resolve().parents[3] / "examples" / "manifests"


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((MANIFESTS / name).read_text())
    return document


def test_a_raycluster_renders_what_render_cluster_renders() -> None:
    document = load("raycluster-gcs-ft-redis.yaml")
    result = render_manifest(params=ManifestRenderParams(document=document))
    expected = render_cluster(params=ClusterRenderParams(RayCluster.model_validate(document)))
    assert list(result.objects) == expected and result.notes == ()
    assert result.ref == "RayCluster default/raycluster-gcs-ft"
    no_job = render_manifest(
        params=ManifestRenderParams(document=document, include_redis_cleanup_job=False)
    )
    assert [o["kind"] for o in no_job.objects] == [o["kind"] for o in expected[:-1]]


def test_a_kind_without_builders_is_validated_and_says_what_is_missing() -> None:
    result = render_manifest(params=ManifestRenderParams(document=load("raycronjob.yaml")))
    assert result.kind == "RayCronJob" and result.objects == ()
    assert len(result.notes) == 1 and "not rendered" in result.notes[0]


def test_an_invalid_object_names_itself_and_the_field() -> None:
    document = load("raycluster-minimal.yaml")
    document["spec"]["workerGroupSpecs"][0]["minReplicas"] = 9
    with pytest.raises(ManifestError, match=r"^RayCluster raycluster-minimal: .*minRep"):
        render_manifest(params=ManifestRenderParams(document=document))


def test_a_model_error_is_one_line_with_the_wire_path() -> None:
    document = load("raycluster-minimal.yaml")
    document["spec"]["workerGroupSpecs"][0]["replicas"] = "many"
    with pytest.raises(ManifestError) as caught:
        render_manifest(params=ManifestRenderParams(document=document))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("RayCluster raycluster-minimal: ")
    assert "spec.workerGroupSpecs[0].replicas: " in message


def test_lists_are_flattened_and_other_kinds_are_not_ray_objects() -> None:
    documents = [None, {"kind": "List", "items": [{"kind": "RayJob"}, {"kind": "Pod"}]}]
    flat = list(flatten_lists(documents))
    assert flat == [{"kind": "RayJob"}, {"kind": "Pod"}]
    assert [is_ray_object(d) for d in flat] == [True, False]
