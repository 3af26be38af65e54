"""Names in a spec that the operator reads or writes objects by must be object names,
refused with their field path by the validation and by the CRD schema alike."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from operator_runtime.api import ErrorCode, FeatureGates
from operator_runtime.api.common import OBJECT_NAME_PATTERN
from tests.unit.api.crdfiles import committed_schema
from tests.unit.api.rulecases import Obj

CODE = ErrorCode.FIELD_NOT_OBJECT_NAME.value
GATES = FeatureGates(gcs_fault_tolerance_embedded_storage=True)
HOSTILE = ["../../victim/rayclusters/prod", "..", "a/b", "UPPER", "a" * 254, "x%2F..%2Fy"]
VALID = ["prod", "prod-1", "team.prod", "a" * 253, "0abc"]


def _selector(name: str) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        spec = obj["spec"]["jobTemplate"] if obj["kind"] == "RayCronJob" else obj["spec"]
        del spec["rayClusterSpec"]
        spec["clusterSelector"] = {"ray.io/cluster": name, "team": "Any_Label.Value"}

    return mutate


def _cluster(**fields: Any) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        spec = obj["spec"]
        spec = spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or spec
        spec.update(fields)

    return mutate


def _head(name: str) -> Callable[[Obj], None]:
    return lambda obj: _cluster_spec(obj)["headGroupSpec"].update(
        headService={"metadata": {"name": name}}
    )


def _account(name: str) -> Callable[[Obj], None]:
    return lambda obj: _cluster_spec(obj)["headGroupSpec"]["template"]["spec"].update(
        serviceAccountName=name
    )


def _cluster_spec(obj: Obj) -> Obj:
    spec: Obj = obj["spec"]
    return spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or spec


def _serve(name: str) -> Callable[[Obj], None]:
    return lambda obj: obj["spec"].update(serveService={"metadata": {"name": name}})


def _auth(name: str) -> Callable[[Obj], None]:
    return _cluster(authOptions={"mode": "token", "secretName": name})


def _claim(name: str) -> Callable[[Obj], None]:
    return _cluster(gcsFaultToleranceOptions={"backend": "rocksdb", "storage": {"claimName": name}})


# (kind, mutation with a name, the field path reported)
FIELDS = [
    ("RayJob", _selector, "spec.clusterSelector[ray.io/cluster]"),
    ("RayCronJob", _selector, "spec.jobTemplate.clusterSelector[ray.io/cluster]"),
    ("RayService", _serve, "spec.serveService.metadata.name"),
    ("RayCluster", _auth, "spec.authOptions.secretName"),
    ("RayJob", _auth, "spec.rayClusterSpec.authOptions.secretName"),
    ("RayService", _auth, "spec.rayClusterConfig.authOptions.secretName"),
    ("RayCluster", _head, "spec.headGroupSpec.headService.metadata.name"),
    ("RayCluster", _account, "spec.headGroupSpec.template.spec.serviceAccountName"),
    ("RayCluster", _claim, "spec.gcsFaultToleranceOptions.storage.claimName"),
]
FIELD_IDS = [f"{kind}:{path}" for kind, _, path in FIELDS]


@pytest.mark.parametrize(("kind", "mutation", "path"), FIELDS, ids=FIELD_IDS)
@pytest.mark.parametrize("name", HOSTILE)
def test_a_name_that_no_object_can_have_is_refused_with_its_path(
    api: Any, kind: str, mutation: Callable[[str], Callable[[Obj], None]], path: str, name: str
) -> None:
    obj = api.base(kind)
    mutation(name)(obj)
    error = api.check_invalid(obj, CODE, path, gates=GATES)
    assert name not in str(error), "the hostile value is not echoed"


@pytest.mark.parametrize(("kind", "mutation", "path"), FIELDS, ids=FIELD_IDS)
@pytest.mark.parametrize("name", VALID)
def test_a_valid_object_name_passes(
    api: Any, kind: str, mutation: Callable[[str], Callable[[Obj], None]], path: str, name: str
) -> None:
    obj = api.base(kind)
    mutation(name)(obj)
    api.check_valid(obj, GATES)


def _schema_at(crd_file: str, *path: str) -> dict[str, Any]:
    node = committed_schema(crd_file)
    for part in path:
        node = node["properties"][part]
    return node


@pytest.mark.parametrize(
    ("crd_file", "path"),
    [
        ("ray.io_rayclusters.yaml", ("spec", "authOptions", "secretName")),
        ("ray.io_rayjobs.yaml", ("spec", "rayClusterSpec", "authOptions", "secretName")),
        ("ray.io_rayclusters.yaml", ("spec", "gcsFaultToleranceOptions", "storage", "claimName")),
    ],
)
def test_the_crd_gives_a_plain_name_field_a_pattern(crd_file: str, path: tuple[str, ...]) -> None:
    node = _schema_at(crd_file, *path)
    assert (node["pattern"], node["maxLength"]) == (OBJECT_NAME_PATTERN, 253)


@pytest.mark.parametrize(
    ("crd_file", "path", "field_path"),
    [
        ("ray.io_rayjobs.yaml", ("spec", "clusterSelector"), "['ray.io/cluster']"),
        ("ray.io_raycronjobs.yaml", ("spec", "jobTemplate", "clusterSelector"),
         "['ray.io/cluster']"),
        ("ray.io_rayservices.yaml", ("spec", "serveService"), ".metadata.name"),
        ("ray.io_rayclusters.yaml", ("spec", "headGroupSpec", "headService"), ".metadata.name"),
    ],
)  # fmt: skip
def test_the_crd_checks_embedded_names_with_cel(
    crd_file: str, path: tuple[str, ...], field_path: str
) -> None:
    [rule] = _schema_at(crd_file, *path)["x-kubernetes-validations"]
    assert rule["fieldPath"] == field_path
    assert OBJECT_NAME_PATTERN in rule["rule"]


def test_the_pattern_is_the_dns1123_subdomain_rule() -> None:
    pattern = re.compile(OBJECT_NAME_PATTERN)
    assert all(pattern.match(name) for name in VALID)
    assert not any(pattern.match(name) for name in HOSTILE if len(name) <= 253)
