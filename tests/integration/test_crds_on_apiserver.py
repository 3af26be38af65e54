"""Our generated CRDs on a real kube-apiserver: they install, explain themselves, accept
every sample manifest, and refuse what the schema and the CEL rules forbid."""

from __future__ import annotations

import copy
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack.localcluster import LocalCluster
from operator_runtime.api import RayCluster, RayCronJob, RayJob, RayService
from tests.wire import contains

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = REPO_ROOT / "operator_runtime" / "api" / "crds"
SAMPLES = sorted((REPO_ROOT / "examples" / "manifests").glob("*.yaml"))
MODELS: dict[str, type[RayCluster | RayJob | RayService | RayCronJob]] = {
    "RayCluster": RayCluster,
    "RayJob": RayJob,
    "RayService": RayService,
    "RayCronJob": RayCronJob,
}


@pytest.fixture(scope="module")
def crds(local_cluster: LocalCluster) -> LocalCluster:
    # Server-side apply: the CRDs are larger than the client-side last-applied annotation.
    local_cluster.apply_crds(CRD_DIR)
    local_cluster.wait_for_crds(
        *(f"{plural}.ray.io" for plural in ("rayclusters", "rayjobs", "rayservices", "raycronjobs"))
    )
    return local_cluster


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def _create(cluster: LocalCluster, namespace: str, manifest: dict[str, Any]) -> str:
    """``kubectl create`` with strict server-side field validation; returns stderr."""
    result = cluster.kubectl(
        "-n", namespace, "create", "--validate=strict", "-f", "-",
        input=yaml.safe_dump(manifest), check=False,
    )  # fmt: skip
    return "" if result.returncode == 0 else result.stderr


def _minimal_cluster() -> dict[str, Any]:
    return _load(REPO_ROOT / "examples" / "manifests" / "raycluster-minimal.yaml")


def _rayjob() -> dict[str, Any]:
    return _load(REPO_ROOT / "examples" / "manifests" / "rayjob.yaml")


def test_samples_cover_every_kind_and_scenario() -> None:
    names = {path.stem for path in SAMPLES}
    assert {
        "raycluster-minimal",
        "raycluster-autoscaler",
        "raycluster-gpu",
        "raycluster-gcs-ft-redis",
        "raycluster-multihost",
        "rayjob",
        "rayservice-incremental",
        "raycronjob",
    } <= names
    assert {_load(path)["kind"] for path in SAMPLES} == set(MODELS)


def test_kubectl_explain_shows_our_field_docs(crds: LocalCluster) -> None:
    explained = crds.kubectl("explain", "raycluster.spec.headGroupSpec").stdout
    head_fields = RayCluster.model_json_schema(by_alias=True)["$defs"]["HeadGroupSpec"]
    description = head_fields["properties"]["rayStartParams"]["description"]
    assert "rayStartParams" in explained
    assert " ".join(description.split()[:4]) in " ".join(explained.split())
    containers = crds.kubectl(
        "explain", "raycluster.spec.workerGroupSpecs.template.spec.containers"
    ).stdout
    assert "imagePullPolicy" in containers and "livenessProbe" in containers
    # Kubernetes' docs of the template's fields are not copied into the CRDs: the
    # template's description names the command that shows them, and it does.
    template = crds.kubectl("explain", "raycluster.spec.workerGroupSpecs.template").stdout
    command = re.search(r"`kubectl (explain [a-z.]+)`", " ".join(template.split()))
    assert command is not None, template
    pod_docs = crds.kubectl(*command.group(1).split()).stdout
    assert "spec" in pod_docs and "desired behavior of the pod" in " ".join(pod_docs.split())


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda path: path.stem)
def test_sample_is_accepted_and_round_trips_through_the_models(
    crds: LocalCluster, namespace: str, sample: Path
) -> None:
    manifest = _load(sample)
    assert _create(crds, namespace, manifest) == ""
    kind, name = manifest["kind"], manifest["metadata"]["name"]
    stored = crds.get_json("-n", namespace, f"{kind.lower()}.ray.io", name)
    model = MODELS[kind].model_validate(stored)
    assert MODELS[kind].model_validate(model.to_dict()) == model
    assert model.to_dict()["metadata"]["uid"] == stored["metadata"]["uid"]
    # What the user wrote is what the server kept (defaults may only add keys).
    assert contains(stored["spec"], MODELS[kind].model_validate(manifest).to_dict()["spec"])


def test_printer_columns_match_kuberay(crds: LocalCluster, namespace: str) -> None:
    assert _create(crds, namespace, _minimal_cluster()) == ""
    header = crds.kubectl("-n", namespace, "get", "rayclusters", "-o", "wide").stdout
    columns = header.splitlines()[0]
    for column in ("DESIRED WORKERS", "AVAILABLE WORKERS", "CPUS", "MEMORY", "GPUS", "TPUS",
                   "STATUS", "AGE", "HEAD POD IP", "HEAD SERVICE IP"):  # fmt: skip
        assert column in columns


def test_unknown_field_in_a_pod_template_is_refused(crds: LocalCluster, namespace: str) -> None:
    manifest = _minimal_cluster()
    container = manifest["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    container["imagePullPolicyy"] = "Always"
    error = _create(crds, namespace, manifest)
    assert "unknown field" in error
    assert "imagePullPolicyy" in error


def test_container_without_a_name_is_refused(crds: LocalCluster, namespace: str) -> None:
    manifest = _minimal_cluster()
    del manifest["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["name"]
    assert "name: Required value" in _create(crds, namespace, manifest)


def test_managed_by_must_be_a_known_controller(crds: LocalCluster, namespace: str) -> None:
    manifest = _minimal_cluster()
    manifest["spec"]["managedBy"] = "someone-else"
    assert "managedBy field value must be either" in _create(crds, namespace, manifest)


def _cluster_managed_by_kuberay() -> dict[str, Any]:
    manifest = _minimal_cluster()
    manifest["spec"]["managedBy"] = "ray.io/kuberay-operator"
    return manifest


def _redis_ft_cluster() -> dict[str, Any]:
    manifest = _load(REPO_ROOT / "examples" / "manifests" / "raycluster-gcs-ft-redis.yaml")
    manifest["spec"]["gcsFaultToleranceOptions"]["backend"] = "redis"
    return manifest


@pytest.mark.parametrize(
    ("manifest", "patch", "refusal"),
    [
        pytest.param(
            _cluster_managed_by_kuberay,
            '{"spec":{"managedBy":"kueue.x-k8s.io/multikueue"}}',
            "managedBy field is immutable",
            id="managed-by",
        ),
        pytest.param(
            _redis_ft_cluster,
            '{"spec":{"gcsFaultToleranceOptions":{"backend":"rocksdb"}}}',
            "backend is immutable",
            id="gcs-fault-tolerance-backend",
        ),
    ],
)
def test_immutable_field_is_refused_on_patch(
    crds: LocalCluster,
    namespace: str,
    manifest: Callable[[], dict[str, Any]],
    patch: str,
    refusal: str,
) -> None:
    created = manifest()
    assert _create(crds, namespace, created) == ""
    with pytest.raises(subprocess.CalledProcessError) as refused:
        crds.kubectl(
            "-n", namespace, "patch", "raycluster", created["metadata"]["name"], "--type=merge",
            "-p", patch,
        )  # fmt: skip
    assert refusal in refused.value.stderr


def test_upgrade_strategy_type_is_an_enum(crds: LocalCluster, namespace: str) -> None:
    manifest = _minimal_cluster()
    manifest["spec"]["upgradeStrategy"] = {"type": "Rolling"}
    error = _create(crds, namespace, manifest)
    assert "spec.upgradeStrategy.type" in error and "Unsupported value" in error


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        (
            {"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteNone"},
             "deletionRules": [{"policy": "DeleteCluster",
                                "condition": {"jobStatus": "SUCCEEDED"}}]},
            "cannot be used together within the same deletionStrategy",
        ),
        (
            {"onSuccess": {"policy": "DeleteCluster"}},
            "requires either BOTH onSuccess and onFailure",
        ),
        (
            {"deletionRules": [{"policy": "DeleteCluster",
                                "condition": {"jobStatus": "FAILED",
                                              "jobDeploymentStatus": "Failed"}}]},
            "cannot be used together within the same deletion condition",
        ),
        (
            {"deletionRules": [{"policy": "DeleteCluster", "condition": {"ttlSeconds": 10}}]},
            "requires either the JobStatus or the JobDeploymentStatus",
        ),
    ],
    ids=["legacy-and-rules", "legacy-incomplete", "condition-both", "condition-neither"],
)  # fmt: skip
def test_deletion_strategy_rules_are_enforced_by_the_api_server(
    crds: LocalCluster, namespace: str, strategy: dict[str, Any], message: str
) -> None:
    manifest = copy.deepcopy(_rayjob())
    manifest["spec"]["deletionStrategy"] = strategy
    manifest["spec"].pop("shutdownAfterJobFinishes", None)
    assert message in _create(crds, namespace, manifest)


def test_pre_running_deadline_must_be_positive(crds: LocalCluster, namespace: str) -> None:
    manifest = _rayjob()
    manifest["spec"]["preRunningDeadlineSeconds"] = 0
    error = _create(crds, namespace, manifest)
    assert (
        "spec.preRunningDeadlineSeconds" in error
        and "should be greater than or equal to 1" in error
    )


def _set(manifest: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    """``manifest`` with ``value`` at a dotted ``path`` (``[0]`` picks a list item)."""
    manifest = copy.deepcopy(manifest)
    *parents, leaf = path.split(".")
    node: Any = manifest
    for part in parents:
        name, _, index = part.partition("[")
        node = node.setdefault(name, {})
        if index:
            node = node[int(index.rstrip("]"))]
    node[leaf] = value
    return manifest


_INT32_FIELDS = [
    (_rayjob, "spec.activeDeadlineSeconds"),
    (_rayjob, "spec.ttlSecondsAfterFinished"),
    (_rayjob, "spec.backoffLimit"),
    (_minimal_cluster, "spec.workerGroupSpecs[0].replicas"),
    (_minimal_cluster, "spec.workerGroupSpecs[0].maxReplicas"),
]


@pytest.mark.parametrize(("sample", "path"), _INT32_FIELDS, ids=[p for _, p in _INT32_FIELDS])
def test_int32_fields_are_bounded_by_the_api_server(
    crds: LocalCluster, namespace: str, sample: Callable[[], dict[str, Any]], path: str
) -> None:
    """The API server ignores ``format: int32``; the CRD's maximum is what refuses 2^31
    (the controller once raised OverflowError on every pass of such an object)."""
    manifest = sample()
    error = _create(crds, namespace, _set(manifest, path, 100_000_000_000_000))
    assert path in error and "should be less than or equal to 2147483647" in error, error
    manifest["metadata"]["name"] += "-max"
    assert _create(crds, namespace, _set(manifest, path, 2**31 - 1)) == ""
