"""The models: sample manifests round-trip, both spellings parse, unknown and out-of-range
fields are refused, defaults and wire names match KubeRay's CRDs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from operator_runtime.api import (
    FeatureGates,
    HeadInfo,
    RayCluster,
    RayClusterSpec,
    RayClusterStatus,
    RayJob,
    RayJobSpec,
    RayJobStatus,
    RayService,
    RayServiceSpec,
    WorkerGroupSpec,
    validate,
)
from tests.wire import contains

SAMPLES = sorted((Path(__file__).parents[3] / "examples" / "manifests").glob("*.yaml"))


def test_there_are_samples_for_every_kind() -> None:
    kinds = {yaml.safe_load(p.read_text())["kind"] for p in SAMPLES}
    assert kinds == {"RayCluster", "RayJob", "RayService", "RayCronJob"}
    assert len(SAMPLES) >= 8


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_parses_validates_and_round_trips(api: Any, path: Path) -> None:
    raw = yaml.safe_load(path.read_text())
    model = api.parse(raw)
    validate(model, FeatureGates(ray_cron_job=True))
    wire = model.to_dict()
    again = type(model).model_validate(wire)
    assert again == model
    assert again.to_dict() == wire
    # Nothing the user wrote is lost: the wire form is the input plus CRD defaults.
    assert contains(wire, raw), f"{path.name} lost fields on the way through the model"


def test_crd_defaults_are_filled(api: Any) -> None:
    obj = api.base("RayCluster")
    group = obj["spec"]["workerGroupSpecs"][0]
    for key in ("replicas", "minReplicas", "maxReplicas"):
        del group[key]
    wire = api.parse(obj).to_dict()["spec"]["workerGroupSpecs"][0]
    assert (wire["replicas"], wire["minReplicas"], wire["maxReplicas"]) == (0, 0, 2**31 - 1)
    assert (wire["numOfHosts"], wire["priority"]) == (1, 0)
    job = RayJobSpec.model_validate({"entrypoint": "x"})
    assert (job.submission_mode, job.backoff_limit, job.ttl_seconds_after_finished) == (
        "K8sJobMode",
        0,
        0,
    )
    assert RayJobStatus().to_dict() == {"succeeded": 0, "failed": 0}


def test_snake_case_and_camel_case_are_both_accepted() -> None:
    template = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}
    camel = RayClusterSpec.model_validate(
        {
            "headGroupSpec": {"template": template, "rayStartParams": {}},
            "enableInTreeAutoscaling": True,
            "workerGroupSpecs": [{"groupName": "g", "template": template, "numOfHosts": 2}],
        }
    )
    snake = RayClusterSpec(
        head_group_spec={"template": template, "ray_start_params": {}},  # type: ignore[arg-type]
        enable_in_tree_autoscaling=True,
        worker_group_specs=[WorkerGroupSpec(group_name="g", template=template, num_of_hosts=2)],
    )
    assert camel == snake
    assert snake.to_dict()["workerGroupSpecs"][0]["numOfHosts"] == 2


@pytest.mark.parametrize(
    ("model", "data", "bad_key"),
    [
        (RayClusterSpec, {"headGroupSpec": {"tempalte": {}}}, "tempalte"),
        (RayJobSpec, {"entrypoint": "x", "shutdownAfterJobFinish": True}, "shutdownAfterJobFinish"),
        (
            RayServiceSpec,
            {"rayClusterConfig": {"headGroupSpec": {"template": {}}}, "serveConfig": "x"},
            "serveConfig",
        ),
    ],
)
def test_unknown_fields_are_refused_by_name(model: Any, data: dict[str, Any], bad_key: str) -> None:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    assert bad_key in str(caught.value)
    assert any(err["type"] == "extra_forbidden" for err in caught.value.errors())


@pytest.mark.parametrize(
    ("model", "data", "field"),
    [
        (
            RayClusterSpec,
            {"headGroupSpec": {"template": {}}, "upgradeStrategy": {"type": "Blue"}},
            "type",
        ),
        (RayJobSpec, {"preRunningDeadlineSeconds": 0}, "preRunningDeadlineSeconds"),
        (RayJobSpec, {"submissionMode": "CronMode"}, "submissionMode"),
        (RayJobSpec, {"deletionStrategy": {"deletionRules": []}}, "deletionRules"),
        (
            RayJobSpec,
            {
                "deletionStrategy": {
                    "deletionRules": [
                        {
                            "policy": "DeleteSelf",
                            "condition": {"jobStatus": "FAILED", "ttlSeconds": -1},
                        }
                    ]
                }
            },
            "ttlSeconds",
        ),
        (
            RayJobSpec,
            {
                "deletionStrategy": {
                    "deletionRules": [
                        {"policy": "DeleteSelf", "condition": {"jobStatus": "RUNNING"}}
                    ]
                }
            },
            "jobStatus",
        ),
        (
            RayServiceSpec,
            {
                "rayClusterConfig": {"headGroupSpec": {"template": {}}},
                "rayClusterDeletionDelaySeconds": -1,
            },
            "rayClusterDeletionDelaySeconds",
        ),
        (
            RayClusterSpec,
            {"headGroupSpec": {"template": {}}, "gcsFaultToleranceOptions": {"backend": "etcd"}},
            "backend",
        ),
    ],
)
def test_schema_constraints_are_enforced(model: Any, data: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    assert field in str(caught.value)


def test_wire_names_that_to_camel_gets_wrong() -> None:
    status = RayClusterStatus.model_validate(
        {
            "desiredCPU": "2",
            "desiredGPU": "1",
            "desiredTPU": "0",
            "desiredMemory": "4Gi",
            "head": {"podIP": "10.0.0.1", "serviceIP": "10.0.0.2"},
        }
    )
    assert status.head == HeadInfo(pod_ip="10.0.0.1", service_ip="10.0.0.2")
    assert set(status.to_dict()) == {
        "desiredCPU",
        "desiredGPU",
        "desiredTPU",
        "desiredMemory",
        "head",
    }
    job = RayJob.model_validate(
        {"spec": {"runtimeEnvYAML": "a: 1"}, "status": {"dashboardURL": "h:8265", "rayJobInfo": {}}}
    )
    assert set(job.to_dict()["status"]) >= {"dashboardURL", "rayJobInfo"}
    assert job.to_dict()["spec"]["runtimeEnvYAML"] == "a: 1"
    schema = RayClusterSpec.model_json_schema(by_alias=True)
    assert "enableK8sTokenAuth" in schema["$defs"]["AuthOptions"]["properties"]
    service = RayService.model_validate(
        {
            "spec": {"serveConfigV2": "x", "rayClusterConfig": {"headGroupSpec": {"template": {}}}},
            "status": {
                "activeServiceStatus": {
                    "applicationStatuses": {
                        "app": {"serveDeploymentStatuses": {"d": {"status": "HEALTHY"}}}
                    }
                }
            },
        }
    )
    assert "serveDeploymentStatuses" in str(service.to_dict())


def test_timestamps_round_trip_in_rfc3339() -> None:
    raw = {
        "metadata": {"name": "c", "creationTimestamp": "2025-03-01T12:00:00Z"},
        "spec": {"headGroupSpec": {"template": {}}},
        "status": {
            "lastUpdateTime": "2025-03-01T12:05:00Z",
            "stateTransitionTimes": {"ready": "2025-03-01T12:04:00Z"},
        },
    }
    wire = RayCluster.model_validate(raw).to_dict()
    assert wire["metadata"]["creationTimestamp"] == "2025-03-01T12:00:00Z"
    assert wire["status"]["stateTransitionTimes"] == {"ready": "2025-03-01T12:04:00Z"}


def test_object_read_back_from_a_server_parses() -> None:
    meta = {
        "name": "c",
        "namespace": "ns",
        "uid": "8f0c",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2025-01-01T00:00:00Z",
        "deletionTimestamp": "2025-01-02T00:00:00Z",
        "deletionGracePeriodSeconds": 0,
        "finalizers": ["ray.io/gcs-ft-redis-cleanup-finalizer"],
        "labels": {"a": "b"},
        "annotations": {"c": "d"},
        "ownerReferences": [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayService",
                "name": "s",
                "uid": "1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}}],
    }
    cluster = RayCluster.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": meta,
            "spec": {"headGroupSpec": {"template": {}}},
        }
    )
    assert cluster.metadata.to_dict() == meta


def test_cel_rules_and_list_maps_are_in_the_schema() -> None:
    text = str(RayJob.model_json_schema(by_alias=True))
    assert "the managedBy field is immutable" in text
    assert "gcsFaultToleranceOptions.backend is immutable" in text
    assert "has(self.jobStatus) || has(self.jobDeploymentStatus)" in text
    assert "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))" in text
    status = str(RayClusterStatus.model_json_schema(by_alias=True))
    assert "x-kubernetes-list-map-keys" in status and "io.k8s.apimachinery" in status


def test_every_field_has_a_description() -> None:
    missing = []
    for model in (RayCluster, RayJob, RayService):
        schema = model.model_json_schema(by_alias=True)
        for name, definition in [("root", schema), *schema.get("$defs", {}).items()]:
            for field, prop in definition.get("properties", {}).items():
                if not prop.get("description"):
                    missing.append(f"{name}.{field}")
    assert missing == []


def test_models_are_frozen(api: Any) -> None:
    cluster = api.parse(api.base("RayCluster"))
    with pytest.raises(ValidationError):
        cluster.spec.ray_version = "2.0.0"


@pytest.mark.parametrize(
    ("model", "data", "path"),
    [
        (RayJobSpec, {"entrypoint": "x", "activeDeadlineSeconds": 100_000_000_000_000},
         ("activeDeadlineSeconds",)),
        (RayJobSpec, {"entrypoint": "x", "ttlSecondsAfterFinished": 2**31},
         ("ttlSecondsAfterFinished",)),
        (RayJobSpec, {"entrypoint": "x", "backoffLimit": -(2**31) - 1}, ("backoffLimit",)),
        (RayClusterSpec,
         {"headGroupSpec": {"template": {}},
          "workerGroupSpecs": [{"groupName": "g", "template": {}, "replicas": 2**31}]},
         ("workerGroupSpecs", 0, "replicas")),
        (RayServiceSpec,
         {"rayClusterConfig": {"headGroupSpec": {"template": {}}},
          "serviceUnhealthySecondThreshold": 2**40},
         ("serviceUnhealthySecondThreshold",)),
    ],
    ids=["activeDeadlineSeconds", "ttlSecondsAfterFinished", "backoffLimit", "replicas",
         "serviceUnhealthySecondThreshold"],
)  # fmt: skip
def test_int32_fields_refuse_what_go_cannot_hold(
    model: Any, data: dict[str, Any], path: tuple[object, ...]
) -> None:
    """The API server does not enforce ``format: int32``; the models (and the CRDs'
    minimum/maximum) do, and say which field."""
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    (error,) = caught.value.errors()
    assert error["loc"] == path and error["type"] in ("less_than_equal", "greater_than_equal")


def _integers(schema: dict[str, Any], defs: dict[str, Any], path: str) -> Any:
    """(path, node) of every integer in a model's JSON schema, Kubernetes types aside."""
    ref = schema.get("$ref")
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if name != "JSONValue" and f"<{name}>" not in path:
            yield from _integers(defs[name], defs, f"{path}<{name}>")
        return
    if "x-k8s-definition" in schema:
        return
    if schema.get("type") == "integer":
        yield path, schema
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key, ()):
            yield from _integers(option, defs, path)
    for name, child in (schema.get("properties") or {}).items():
        yield from _integers(child, defs, f"{path}.{name}")
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(schema.get(key), dict):
            yield from _integers(schema[key], defs, path + suffix)


@pytest.mark.parametrize("kind", [RayCluster, RayJob, RayService], ids=lambda k: k.__name__)
def test_every_int32_of_ours_is_bounded_and_every_bound_is_exact(kind: Any) -> None:
    schema = kind.model_json_schema(by_alias=True)
    found = list(_integers(schema, schema.get("$defs", {}), kind.__name__))
    assert found
    int32 = [(path, node) for path, node in found if node.get("format") == "int32"]
    assert int32
    unbounded = [path for path, node in int32
                 if node.get("maximum") != 2**31 - 1 or "minimum" not in node]  # fmt: skip
    assert unbounded == []
    # The API server reads a schema's bounds as float64: only exact ones are safe (an
    # int64 maximum of 2^63 - 1 became -2^63 there and refused every status write).
    inexact = [path for path, node in found
               for key in ("minimum", "maximum") if abs(node.get(key, 0)) > 2**53]  # fmt: skip
    assert inexact == []
