"""Events about an invalid RayCluster name the field, never the user's value: anyone who
may list Events in the namespace reads them, and a rayStartParams value, an env value,
an annotation value or a label value may be a password.

Each case puts a distinctive secret-like string where a user might and runs the gate
that records the Warning event; the event must be recorded and must not contain it."""

from __future__ import annotations

import copy
from typing import Any

import pydantic
import pytest

from operator_runtime.api import RayCluster
from operator_runtime.controllers.parse_errors import describe_parse_error
from operator_runtime.controllers.raycluster import gates
from operator_runtime.controllers.raycluster.run import ClusterRun
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import ObjectKey
from tests.clustertools import ListSink, cluster_tools

SECRET = "hunter2-S3cr3t-Zq9"


def base() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "ns", "uid": "cluster-uid", "generation": 1},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-head", "image": "i"}]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "g",
                    "replicas": 1,
                    "minReplicas": 0,
                    "maxReplicas": 2,
                    "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}},
                }
            ],
        },
    }


REDIS = {"redisAddress": "redis:6379"}


def head_env(name: str, value: str) -> list[dict[str, str]]:
    return [{"name": name, "value": value}]


def case(
    *,
    params: dict[str, str] | None = None,
    env: list[dict[str, str]] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    ft: dict[str, Any] | None = None,
) -> dict[str, Any]:
    raw = base()
    spec, head = raw["spec"], raw["spec"]["headGroupSpec"]
    if params:
        head["rayStartParams"] = params
    if env:
        head["template"]["spec"]["containers"][0]["env"] = env
    if annotations:
        raw["metadata"]["annotations"] = annotations
    if labels:
        spec["workerGroupSpecs"][0]["labels"] = labels
    if ft is not None:
        spec["gcsFaultToleranceOptions"] = ft
    return raw


CASES = {
    "rayStartParams redis-password": case(params={"redis-password": SECRET}, ft=REDIS),
    "rayStartParams redis-username": case(params={"redis-username": SECRET}),
    "env REDIS_PASSWORD": case(env=head_env("REDIS_PASSWORD", SECRET), ft=REDIS),
    "env RAY_REDIS_ADDRESS with FT options": case(
        env=head_env("RAY_REDIS_ADDRESS", SECRET), ft=REDIS
    ),
    "env RAY_REDIS_ADDRESS without FT": case(env=head_env("RAY_REDIS_ADDRESS", SECRET)),
    "env REDIS_USERNAME": case(env=head_env("REDIS_USERNAME", SECRET)),
    "annotation ft-enabled": case(annotations={"ray.io/ft-enabled": SECRET}, ft=REDIS),
    "annotation external-storage-namespace": case(
        annotations={"ray.io/external-storage-namespace": SECRET}, ft=REDIS
    ),
    # A label value that is not valid label syntax (a space, a '!').
    "worker group label value": case(labels={"team": f"{SECRET} !"}),
    "rocksdb with a redisPassword": case(
        ft={"backend": "rocksdb", "redisPassword": {"value": SECRET}}
    ),
}


def cluster_run(raw: Object, sink: ListSink) -> ClusterRun:
    tools = cluster_tools(None, sink, expectation_timeout=90.0)  # the gate never writes
    return ClusterRun(tools, ObjectKey("ns", "c"), raw, RayCluster.model_validate(raw))


@pytest.mark.parametrize("raw", CASES.values(), ids=list(CASES))
def test_a_validation_event_names_the_field_not_the_value(raw: Object) -> None:
    sink = ListSink()
    result = gates.validate(cluster_run(copy.deepcopy(raw), sink))
    assert result is not None, "the cluster must be refused"
    assert [e.reason for e in sink.events] == ["InvalidRayClusterSpec"], sink.events
    message = sink.events[0].note
    assert SECRET not in message, message
    assert "spec." in message or "metadata." in message, "the field path stays"


def test_a_parse_error_names_the_field_not_the_value() -> None:
    raw = base()
    raw["spec"]["workerGroupSpecs"][0]["replicas"] = SECRET
    with pytest.raises(pydantic.ValidationError) as caught:
        RayCluster.model_validate(raw)
    described = describe_parse_error(caught.value)
    assert "workerGroupSpecs.0.replicas" in described
    assert SECRET not in described
