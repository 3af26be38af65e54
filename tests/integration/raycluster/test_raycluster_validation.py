"""Invalid clusters get a Warning event and no children at all; clusters managed by
another controller are left alone."""

from __future__ import annotations

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import SERVICE
from tests.integration.raycluster.conftest import (
    RunningOperator,
    events,
    get_cluster,
    pods,
    raycluster,
    settle,
)
from tests.waiting import wait_for


def _exists(client: KubeClient, namespace: str, name: str) -> bool:
    try:
        client.get(SERVICE, name, namespace)
    except NotFound:
        return False
    return True


def test_invalid_clusters_get_a_warning_and_no_children(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    bad_spec = raycluster("badspec", namespace, workers=1)
    # Group resources together with rayStartParams num-cpus: KubeRay refuses it.
    group = bad_spec["spec"]["workerGroupSpecs"][0]
    group["resources"] = {"CPU": "2"}
    group["rayStartParams"] = {"num-cpus": "2"}
    bad_name = raycluster("n" * 54, namespace, workers=1)
    managed = raycluster("kueued", namespace, workers=1, managedBy="kueue.x-k8s.io/multikueue")
    for manifest in (bad_spec, bad_name, managed):
        client.create(manifest)
    spec_events = wait_for(
        "InvalidRayClusterSpec",
        lambda: events(client, namespace, "InvalidRayClusterSpec", "badspec"),
    )
    assert spec_events[0]["type"] == "Warning"
    assert "spec.workerGroupSpecs[0]" in spec_events[0]["note"]
    wait_for(
        "InvalidRayClusterMetadata",
        lambda: events(client, namespace, "InvalidRayClusterMetadata", "n" * 54),
    )
    settle(2.0)
    for name in ("badspec", "n" * 54, "kueued"):
        assert pods(client, namespace, f"ray.io/cluster={name}") == []
        assert not _exists(client, namespace, f"{name}-head-svc")
        assert "status" not in get_cluster(client, namespace, name)
    # Fixing the spec is all it takes.
    fixed = get_cluster(client, namespace, "badspec")
    del fixed["spec"]["workerGroupSpecs"][0]["rayStartParams"]["num-cpus"]
    client.update(fixed)
    wait_for(
        "fixed cluster ready",
        lambda: (
            (get_cluster(client, namespace, "badspec").get("status") or {}).get("state") == "ready"
        ),
        timeout=60,
    )
    assert pods(client, namespace, "ray.io/cluster=kueued") == []
