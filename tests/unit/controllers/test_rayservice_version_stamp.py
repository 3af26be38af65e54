"""The ``ray.io/kuberay-version`` stamp on a RayService's cluster is written and compared
from one value, the render options' version: a cluster this operator stamped is never
taken for one of another operator version."""

from __future__ import annotations

from typing import Any

from operator_runtime.api import RayService
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.controllers.rayservice import clusters
from operator_runtime.controllers.rayservice.options import RayServiceOptions
from operator_runtime.controllers.rayservice.run import ServiceRun
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.reconcile import ObjectKey


class Tools:
    """Only what the decision reads: the options and the clock."""

    def __init__(self, version: str) -> None:
        self.clock = FakeClock()
        self.options = RayServiceOptions(render=RenderOptions(kuberay_version=version))


def service_run(version: str) -> ServiceRun:
    raw: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "s", "namespace": "ns", "uid": "u", "generation": 1},
        "spec": {
            "rayClusterConfig": {
                "headGroupSpec": {
                    "template": {
                        "spec": {"containers": [{"name": "ray-head", "image": "ray:2.52.1"}]}
                    }
                },
            },
        },
    }
    return ServiceRun.start(
        Tools(version),  # type: ignore[arg-type]
        ObjectKey("ns", "s"),
        raw,
        RayService.model_validate(raw),
    )


def test_an_active_cluster_stamped_by_this_operator_is_left_alone() -> None:
    run = service_run("v9.9.9")
    cluster = clusters._goal(run, "s-abcde")
    assert cluster["metadata"]["annotations"][AnnotationKey.KUBERAY_VERSION] == "v9.9.9"
    assert not clusters._should_update(run, cluster, is_active=True)


def test_an_active_cluster_stamped_by_another_version_is_updated() -> None:
    run = service_run("v9.9.9")
    cluster = clusters._goal(run, "s-abcde")
    cluster["metadata"]["annotations"][AnnotationKey.KUBERAY_VERSION] = "v1.6.0"
    assert clusters._should_update(run, cluster, is_active=True)
