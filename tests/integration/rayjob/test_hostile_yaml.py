"""A YAML alias bomb in a tenant's spec against the operator as users run it: a RayJob's
``runtimeEnvYAML`` and a RayService's ``serveConfigV2`` of about 500 bytes that expand
to 9**9 nodes are refused at once, with the field path, and the operator goes on
serving everyone else: a RayCluster created after them becomes ready.

Before the bounded reader (``operator_runtime.api.useryaml``), PyYAML expanded them on
every pass: the reconcile workers hung building gigabytes, and nothing else moved."""

from __future__ import annotations

import time
from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_CLUSTER, RAY_SERVICE
from tests.integration.raycluster.conftest import container, events, raycluster
from tests.integration.rayjob.conftest import job_status, operator, reaches
from tests.waiting import wait_for


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """Billion laughs: each anchor is a list of ``width`` aliases of the one before."""
    lines = ["a0: &a0 [" + ",".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


BOMB = alias_bomb()
# The promise is that the bomb is never expanded: refused in one pass (validation takes
# milliseconds, tests/unit/api/test_useryaml.py). Expanding its 9**9 nodes would take
# minutes and gigabytes, so this bound tells the two apart with room for the watch, the
# queue and the status write on a loaded machine (1.0 s was missed at 2.0 s with a load
# average of 25, on code that refuses it in one pass).
REFUSED_WITHIN = 15.0


def cluster_spec() -> dict[str, Any]:
    return {
        "rayVersion": "2.52.1",
        "headGroupSpec": {"template": {"spec": {"containers": [container("ray-head")]}}},
        "workerGroupSpecs": [],
    }


def bomb_job(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "bomb-job", "namespace": namespace},
        "spec": {
            "entrypoint": "python -c \"print('never')\"",
            "runtimeEnvYAML": BOMB,
            "rayClusterSpec": cluster_spec(),
        },
    }


def bomb_service(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "bomb-service", "namespace": namespace},
        "spec": {"serveConfigV2": BOMB, "rayClusterConfig": cluster_spec()},
    }


def service_refused(kube: KubeClient, namespace: str) -> dict[str, Any] | None:
    status = kube.get(RAY_SERVICE, "bomb-service", namespace).get("status") or {}
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Ready" and condition.get("reason") == "ValidationFailed":
            found: dict[str, Any] = condition
            return found
    return None


def test_alias_bombs_are_refused_with_their_path_and_others_are_served(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    assert len(BOMB) <= 500
    ray_crds.wait_for_crds("rayjobs.ray.io", "rayservices.ray.io")
    with operator(ray_crds, namespace) as running:
        # The operator is serving once a first cluster has a status; the clock starts then.
        kube.create(raycluster("before", namespace, workers=0))
        wait_for("a status on the first RayCluster",
                 lambda: kube.get(RAY_CLUSTER, "before", namespace).get("status"))  # fmt: skip
        started = time.monotonic()
        kube.create(bomb_job(namespace))
        kube.create(bomb_service(namespace))
        job = wait_for(
            "the RayJob in ValidationFailed",
            reaches(kube, namespace, "bomb-job", "ValidationFailed"),
            explain=lambda: job_status(kube, namespace, "bomb-job"),
        )
        job_refused = time.monotonic() - started
        service = wait_for("the RayService Ready=False/ValidationFailed",
                           lambda: service_refused(kube, namespace))  # fmt: skip
        service_refused_after = time.monotonic() - started
        job_events = wait_for(
            "InvalidRayJobSpec", lambda: events(kube, namespace, "InvalidRayJobSpec", "bomb-job")
        )
        service_events = wait_for(
            "InvalidRayServiceSpec",
            lambda: events(kube, namespace, "InvalidRayServiceSpec", "bomb-service"),
        )
        # Another tenant's cluster, created after the bombs, still comes up.
        kube.create(raycluster("after", namespace, workers=1))
        wait_for(
            "the later RayCluster ready",
            lambda: (
                (kube.get(RAY_CLUSTER, "after", namespace).get("status") or {}).get("state")
                == "ready"
            ),
            timeout=60,
        )
        clusters = {c["metadata"]["name"] for c in kube.list(RAY_CLUSTER, namespace)["items"]}
        log = running.log()
    print(
        f"\nalias bomb ({len(BOMB)} bytes): RayJob refused after {job_refused:.2f} s, "
        f"RayService after {service_refused_after:.2f} s (from creation, watch included)"
    )
    assert "spec.runtimeEnvYAML" in job["message"] and "YAML_TOO_LARGE" in job["message"]
    assert "spec.serveConfigV2" in service["message"]
    assert "YAML_TOO_LARGE" in service["message"]
    assert "spec.runtimeEnvYAML" in job_events[0]["note"]
    assert "spec.serveConfigV2" in service_events[0]["note"]
    assert clusters == {"before", "after"}, "a refused object got a cluster"
    # Refused on the first pass: the watch event, one validation, one status write.
    assert job_refused < REFUSED_WITHIN and service_refused_after < REFUSED_WITHIN
    assert "Traceback" not in log
