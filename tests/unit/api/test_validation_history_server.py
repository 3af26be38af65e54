"""The history-server rules, case for case after KubeRay v1.7.0's
``TestValidateCollectorOptions`` and ``TestValidateRayClusterSpec_HistoryServerRequiresFeatureGate``
(utils/validation_test.go), and the same rules on the clusters of the other three kinds."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from operator_runtime.api import FeatureGates, InvalidObjectError, RayCluster, validate

HISTORY = FeatureGates(ray_cluster_history_server=True)
IMAGE = "quay.io/kuberay/collector:latest"
GCS = [{"name": "STORAGE_BACKEND", "value": "GCS"}, {"name": "GCS_BUCKET", "value": "my-bucket"}]
ENV_PATH = "spec.historyServerOptions.collectorOptions.env"
MANAGED = "RAYCLUSTER_COLLECTOR_MANAGED_ENV"
STORAGE = "RAYCLUSTER_COLLECTOR_STORAGE_ENV"


def env(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in pairs]


# (id, collectorOptions or None, container name clash ("head"/"worker"/None),
#  expected (code, path, words the detail must contain) or None for valid)
# fmt: off
CASES: list[tuple[str, dict[str, Any] | None, str | None, tuple[str, str, str] | None]] = [
    ("nil collector options", None, None,
     ("RAYCLUSTER_HISTORY_SERVER_NO_COLLECTOR", "spec.historyServerOptions.collectorOptions",
      "collectorOptions")),
    ("missing image", {"env": GCS}, None,
     ("RAYCLUSTER_COLLECTOR_NO_IMAGE", "spec.historyServerOptions.collectorOptions.image",
      "image")),
    ("missing STORAGE_BACKEND", {"image": IMAGE}, None, (STORAGE, ENV_PATH, "STORAGE_BACKEND")),
    ("valid GCS", {"image": IMAGE, "env": GCS}, None, None),
    ("valid GCS with ValueFrom secret", {"image": IMAGE, "env": [
        {"name": "STORAGE_BACKEND", "value": "GCS"},
        {"name": "GCS_BUCKET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "bucket"}}},
    ]}, None, None),
    ("missing GCS_BUCKET", {"image": IMAGE, "env": env(("STORAGE_BACKEND", "GCS"))}, None,
     (STORAGE, ENV_PATH, "GCS_BUCKET must be set when STORAGE_BACKEND is GCS")),
    ("valid S3 with all fields", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "S3"), ("S3_BUCKET", "my-bucket"),
        ("S3_ENDPOINT", "s3.us-west-2.amazonaws.com"), ("S3_REGION", "us-west-2"))}, None, None),
    ("missing S3_REGION", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "S3"), ("S3_BUCKET", "my-bucket"),
        ("S3_ENDPOINT", "s3.us-west-2.amazonaws.com"))}, None,
     (STORAGE, ENV_PATH, "S3_REGION must be set when STORAGE_BACKEND is S3")),
    ("valid AZUREBLOB with connection string mode", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "AZUREBLOB"), ("AZURE_STORAGE_AUTH_MODE", "connection_string"),
        ("AZURE_STORAGE_CONNECTION_STRING", "connection-string"))}, None, None),
    ("valid AZUREBLOB with workload identity mode", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "AZUREBLOB"), ("AZURE_STORAGE_AUTH_MODE", "workload_identity"),
        ("AZURE_STORAGE_ACCOUNT_URL", "https://myaccount.blob.core.windows.net"))}, None, None),
    ("missing connection string in connection_string auth mode", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "AZUREBLOB"), ("AZURE_STORAGE_AUTH_MODE", "connection_string"))},
     None, (STORAGE, ENV_PATH, "AZURE_STORAGE_CONNECTION_STRING must be set")),
    ("missing account url in default auth mode", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "azureblob"), ("AZURE_STORAGE_AUTH_MODE", " Default "))},
     None, (STORAGE, ENV_PATH, "AZURE_STORAGE_ACCOUNT_URL must be set")),
    ("missing credentials in auto-detect auth mode", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "AZUREBLOB"))}, None,
     (STORAGE, ENV_PATH, "AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL")),
    ("valid ALIYUNOSS", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "ALIYUNOSS"), ("OSS_BUCKET", "my-bucket"),
        ("OSS_ENDPOINT", "oss-cn-hangzhou.aliyuncs.com"), ("OSS_REGION", "cn-hangzhou"))},
     None, None),
    ("missing OSS_REGION", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "ALIYUNOSS"), ("OSS_BUCKET", "my-bucket"),
        ("OSS_ENDPOINT", "oss-cn-hangzhou.aliyuncs.com"))}, None,
     (STORAGE, ENV_PATH, "OSS_REGION must be set when STORAGE_BACKEND is ALIYUNOSS")),
    ("missing OSS_BUCKET is named first", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "ALIYUNOSS"))}, None, (STORAGE, ENV_PATH, "OSS_BUCKET must be set")),
    ("unknown storage backend (skips validation)", {"image": IMAGE, "env": env(
        ("STORAGE_BACKEND", "CUSTOM_BACKEND"))}, None, None),
    ("STORAGE_BACKEND from a secret is not a literal", {"image": IMAGE, "env": [
        {"name": "STORAGE_BACKEND", "valueFrom": {"secretKeyRef": {"name": "s", "key": "b"}}},
    ]}, None, (STORAGE, ENV_PATH, "STORAGE_BACKEND is not set to a literal value")),
    ("manually defined ray-history-collector container in head template",
     {"image": IMAGE, "env": GCS}, "head",
     ("RAYCLUSTER_COLLECTOR_CONTAINER_CLASH",
      "spec.headGroupSpec.template.spec.containers[1].name", "ray-history-collector")),
    ("manually defined ray-history-collector container in worker template",
     {"image": IMAGE, "env": GCS}, "worker",
     ("RAYCLUSTER_COLLECTOR_CONTAINER_CLASH",
      "spec.workerGroupSpecs[0].template.spec.containers[1].name", "ray-history-collector")),
    ("manually defined POD_IP in collector env",
     {"image": IMAGE, "env": [*GCS, {"name": "POD_IP", "value": "10.244.0.5"}]}, None,
     (MANAGED, ENV_PATH, "POD_IP")),
    ("manually defined EVENTS_PORT in collector env",
     {"image": IMAGE, "env": [*GCS, {"name": "EVENTS_PORT", "value": "9000"}]}, None,
     (MANAGED, ENV_PATH, "EVENTS_PORT")),
    # A managed name is refused before a missing backend, as in KubeRay.
    ("a managed name before the storage check",
     {"image": IMAGE, "env": env(("OWNER_NAME", "x"))}, None, (MANAGED, ENV_PATH, "OWNER_NAME")),
    # RAY_DASHBOARD_ADDRESS is not managed: the user's value replaces the head's default.
    ("RAY_DASHBOARD_ADDRESS may be set",
     {"image": IMAGE, "env": [*GCS, {"name": "RAY_DASHBOARD_ADDRESS", "value": "http://d"}]},
     None, None),
]
# fmt: on


def cluster(collector: dict[str, Any] | None, clash: str | None, api: Any) -> dict[str, Any]:
    obj: dict[str, Any] = api.base("RayCluster")
    options = {} if collector is None else {"collectorOptions": copy.deepcopy(collector)}
    obj["spec"]["historyServerOptions"] = options
    if clash == "head":
        target = obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
        target.append({"name": "ray-history-collector", "image": "user-image"})
    elif clash == "worker":
        target = obj["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"]
        target.append({"name": "ray-history-collector", "image": "user-image"})
    return obj


@pytest.mark.parametrize(("collector", "clash", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_collector_options(
    api: Any,
    collector: dict[str, Any] | None,
    clash: str | None,
    expected: tuple[str, str, str] | None,
) -> None:
    obj = cluster(collector, clash, api)
    if expected is None:
        api.check_valid(obj, HISTORY)
        return
    code, path, words = expected
    error = api.check_invalid(obj, code, path, "Spec", HISTORY)
    assert words in str(error)
    assert "RayCluster default/demo" in str(error)


def test_the_gate_off_refuses_history_server_options(api: Any) -> None:
    obj = cluster({"image": IMAGE, "env": GCS}, None, api)
    error = api.check_invalid(
        obj, "RAYCLUSTER_HISTORY_SERVER_GATE_DISABLED", "spec.historyServerOptions", "Spec"
    )
    assert "RayClusterHistoryServer" in str(error)
    # Also when the options are empty: KubeRay checks the gate first.
    obj["spec"]["historyServerOptions"] = {}
    api.check_invalid(
        obj, "RAYCLUSTER_HISTORY_SERVER_GATE_DISABLED", "spec.historyServerOptions", "Spec"
    )


@pytest.mark.parametrize(
    ("kind", "prefix"),
    [
        ("RayJob", "spec.rayClusterSpec"),
        ("RayService", "spec.rayClusterConfig"),
        ("RayCronJob", "spec.jobTemplate.rayClusterSpec"),
    ],
)
def test_the_other_kinds_check_their_cluster(api: Any, kind: str, prefix: str) -> None:
    obj = api.base(kind)
    spec = api.cluster_spec(obj)
    spec["historyServerOptions"] = {"collectorOptions": {"image": IMAGE, "env": GCS}}
    api.check_valid(obj, FeatureGates(ray_cluster_history_server=True, ray_cron_job=True))
    with pytest.raises(InvalidObjectError) as off:
        validate(api.parse(obj), FeatureGates(ray_cron_job=True))
    assert off.value.path == f"{prefix}.historyServerOptions"
    assert off.value.code.value == "RAYCLUSTER_HISTORY_SERVER_GATE_DISABLED"
    spec["historyServerOptions"]["collectorOptions"]["env"] = env(("STORAGE_BACKEND", "S3"))
    with pytest.raises(InvalidObjectError) as bad:
        validate(api.parse(obj), FeatureGates(ray_cluster_history_server=True, ray_cron_job=True))
    assert bad.value.path == f"{prefix}.historyServerOptions.collectorOptions.env"
    assert "S3_REGION" in str(bad.value)


def test_a_golden_case_is_valid() -> None:
    # The sample KubeRay ships (config/samples/ray-cluster.historyserver.yaml), trimmed.
    sample = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "raycluster-historyserver", "namespace": "default"},
        "spec": {
            "rayVersion": "2.52.0",
            "historyServerOptions": {
                "collectorOptions": {
                    "image": "quay.io/kuberay/collector:nightly",
                    "imagePullPolicy": "IfNotPresent",
                    "env": env(("STORAGE_BACKEND", "GCS"), ("GCS_BUCKET", "my-gcs-bucket")),
                }
            },
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-head", "image": "r"}]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "workergroup",
                    "replicas": 1,
                    "minReplicas": 1,
                    "maxReplicas": 5,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "ray-worker", "image": "r"}]}},
                }
            ],
        },
    }
    validate(RayCluster.model_validate(sample), HISTORY)
