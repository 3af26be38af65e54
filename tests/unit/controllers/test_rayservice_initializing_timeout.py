"""The controller reads ``ray.io/initializing-timeout`` as the validator does: every
value the validator lets through is a timeout, of the same length, and the value
KubeRay computes (Go ``ParseDuration``, else ``Atoi`` seconds)."""

from __future__ import annotations

import pytest

from operator_runtime.api import InvalidObjectError, RayService, validate_rayservice
from operator_runtime.controllers.rayservice.status import initializing_timeout_seconds

TIMEOUT = "ray.io/initializing-timeout"


def service(value: str) -> RayService:
    return RayService.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayService",
            "metadata": {"name": "svc", "namespace": "default", "annotations": {TIMEOUT: value}},
            "spec": {
                "rayClusterConfig": {
                    "headGroupSpec": {
                        "template": {"spec": {"containers": [{"name": "ray-head", "image": "r"}]}}
                    }
                }
            },
        }
    )


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("300", 300.0), ("+5", 5.0), ("5s", 5.0), ("+5s", 5.0), (".5m", 30.0), ("1.s", 1.0),
     ("1h30m", 5400.0), ("1.5h", 5400.0), ("1500ms", 1.5), ("2m0.5s", 120.5)],
)  # fmt: skip
def test_a_value_the_validator_accepts_is_the_same_timeout_in_the_controller(
    value: str, seconds: float
) -> None:
    validate_rayservice(service(value))
    assert initializing_timeout_seconds({TIMEOUT: value}) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["0", "0s", "-5", "-1m", "soon", "1d", "5 s"])
def test_a_value_the_validator_refuses_is_never_read(value: str) -> None:
    with pytest.raises(InvalidObjectError):
        validate_rayservice(service(value))
