"""The CPU-request scaling KubeRay's four-core e2e packages get on this two-core node
(``tests/node/scaled_requests.py``): which requests change, to what, and the answer the
API server is given. The webhook on a real API server is
``tests/integration/test_scaled_requests_webhook.py``."""

from __future__ import annotations

import base64
import copy
import json
from fractions import Fraction
from typing import Any

import pytest

from tests.node.scaled_requests import review_response, scaled_cpu_requests


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"spec": {"containers": list(containers), "initContainers": list(init)}}


def container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
              ) -> dict[str, Any]:  # fmt: skip
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources}


def applied(obj: dict[str, Any], operations: list[dict[str, str]]) -> dict[str, Any]:
    """The ``replace`` operations this module emits, applied (each path must exist)."""
    result = copy.deepcopy(obj)
    for operation in operations:
        assert operation["op"] == "replace"
        *parents, leaf = operation["path"].strip("/").split("/")
        target: Any = result
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        assert leaf in target, operation
        target[leaf] = operation["value"]
    return result


@pytest.mark.parametrize(("request_", "halved"), [
    ("1", "500m"), ("2", "1000m"), ("300m", "150m"), ("0.5", "250m"), ("1m", "1m"),
    ("3m", "2m"), ("1500m", "750m"),
])  # fmt: skip
def test_each_cpu_request_is_halved_rounding_up_to_a_millicore(request_: str, halved: str) -> None:
    ray_pod = pod(container({"cpu": request_, "memory": "1G"}, {"cpu": "4", "memory": "2G"}))
    scaled = applied(ray_pod, scaled_cpu_requests(ray_pod))
    resources = scaled["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": halved, "memory": "1G"}
    assert resources["limits"] == {"cpu": "4", "memory": "2G"}


def test_every_container_and_init_container_is_scaled_and_the_rest_left() -> None:
    ray_pod = pod(
        container({"cpu": "1"}),
        container({"memory": "512Mi"}),
        container(),
        container({"cpu": "500m"}),
        init=(container({"cpu": "200m"}),),
    )
    operations = scaled_cpu_requests(ray_pod)
    assert sorted(op["path"] for op in operations) == [
        "/spec/containers/0/resources/requests/cpu",
        "/spec/containers/3/resources/requests/cpu",
        "/spec/initContainers/0/resources/requests/cpu",
    ]
    scaled = applied(ray_pod, operations)
    assert [c["resources"] for c in scaled["spec"]["containers"]] == [
        {"requests": {"cpu": "500m"}}, {"requests": {"memory": "512Mi"}}, {},
        {"requests": {"cpu": "250m"}},
    ]  # fmt: skip
    assert scaled["spec"]["initContainers"][0]["resources"] == {"requests": {"cpu": "100m"}}


def test_another_scale() -> None:
    ray_pod = pod(container({"cpu": "3"}))
    assert scaled_cpu_requests(ray_pod, Fraction(1, 3))[0]["value"] == "1000m"


def test_the_review_answer_allows_echoes_the_uid_and_carries_the_patch() -> None:
    ray_pod = pod(container({"cpu": "1"}))
    answer = review_response({"request": {"uid": "u-1", "object": ray_pod}})
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert (response["uid"], response["allowed"], response["patchType"]) == (
        "u-1", True, "JSONPatch")  # fmt: skip
    assert json.loads(base64.b64decode(response["patch"])) == scaled_cpu_requests(ray_pod)


def test_a_pod_without_cpu_requests_is_allowed_unpatched() -> None:
    answer = review_response({"request": {"uid": "u-2", "object": pod(container())}})
    assert answer["response"] == {"uid": "u-2", "allowed": True}
