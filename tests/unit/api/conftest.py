"""Fixtures for the API-layer tests: a valid object of each kind, as wire dicts, and a
checker that asserts which rule an object breaks."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from operator_runtime.api import (
    FeatureGates,
    InvalidObjectError,
    RayCluster,
    RayCronJob,
    RayJob,
    RayService,
    validate,
)

Obj = dict[str, Any]
MODELS: dict[str, Any] = {
    "RayCluster": RayCluster,
    "RayJob": RayJob,
    "RayService": RayService,
    "RayCronJob": RayCronJob,
}


def _container(name: str) -> Obj:
    return {
        "name": name,
        "image": "rayproject/ray:2.52.0",
        "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
    }


def _cluster_spec() -> Obj:
    return {
        "rayVersion": "2.52.0",
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [_container("ray-head")]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": "workers",
                "replicas": 1,
                "minReplicas": 1,
                "maxReplicas": 3,
                "rayStartParams": {},
                "template": {"spec": {"containers": [_container("ray-worker")]}},
            }
        ],
    }


def _job_spec() -> Obj:
    return {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": _cluster_spec()}


_BASES: dict[str, Callable[[], Obj]] = {
    "RayCluster": lambda: {"spec": _cluster_spec()},
    "RayJob": lambda: {"spec": _job_spec()},
    "RayService": lambda: {
        "spec": {"serveConfigV2": "applications: []\n", "rayClusterConfig": _cluster_spec()}
    },
    "RayCronJob": lambda: {"spec": {"schedule": "*/5 * * * *", "jobTemplate": _job_spec()}},
}
_NAMES = {"RayCluster": "demo", "RayJob": "job", "RayService": "svc", "RayCronJob": "cron"}


def base(kind: str) -> Obj:
    """A fresh, valid object of this kind."""
    obj = {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "metadata": {"name": _NAMES[kind], "namespace": "default"},
    }
    obj.update(copy.deepcopy(_BASES[kind]()))
    return obj


def cluster_spec(obj: Obj) -> Obj:
    """The RayClusterSpec inside an object of any kind."""
    spec = obj["spec"]
    if obj["kind"] == "RayCronJob":
        spec = spec["jobTemplate"]
    return spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or spec


def parse(obj: Obj) -> Any:
    return MODELS[obj["kind"]].model_validate(obj)


def check_invalid(
    obj: Obj, code: str, path: str, scope: str = "Spec", gates: FeatureGates | None = None
) -> InvalidObjectError:
    """Assert that ``obj`` parses but is rejected with this code, path and scope."""
    model = parse(obj)
    with pytest.raises(InvalidObjectError) as caught:
        validate(model, gates)
    error = caught.value
    assert (error.code.value, error.path, error.scope.value) == (code, path, scope), str(error)
    assert error.event_reason == f"Invalid{obj['kind']}{scope}"
    assert code in str(error) and path in str(error)
    return error


def check_valid(obj: Obj, gates: FeatureGates | None = None) -> None:
    validate(parse(obj), gates)


class ApiHelpers:
    """The helpers above, handed to tests as the ``api`` fixture (conftest modules are not
    importable by name)."""

    base = staticmethod(base)
    cluster_spec = staticmethod(cluster_spec)
    parse = staticmethod(parse)
    check_invalid = staticmethod(check_invalid)
    check_valid = staticmethod(check_valid)


@pytest.fixture
def api() -> ApiHelpers:
    return ApiHelpers()
