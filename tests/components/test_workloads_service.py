"""RayService and RayCronJob under Pulumi mocks."""

from __future__ import annotations

from typing import Any

import pytest

from components import GatewayEdgeArgs, IngressEdgeArgs, RayCronJob, RayService
from components._inputs import RayInputError
from tests.components.workload_mocks import Run, annotations, cluster_spec, run

SERVICE = "kubernetes:ray.io/v1:RayService"
CRONJOB = "kubernetes:ray.io/v1:RayCronJob"
SERVE_CONFIG = "applications:\n- name: app\n  import_path: app:deployment\n"


def service_spec(**overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"serve_config_v2": SERVE_CONFIG, "ray_cluster_config": cluster_spec()}
    spec.update(overrides)
    return spec


def test_rayservice_registers_waits_for_ready_and_returns_its_addresses() -> None:
    def program() -> Any:
        service = RayService("llm", namespace="team-a", **service_spec())
        return {
            "name": service.name,
            "head_service_name": service.head_service_name,
            "serve_service_name": service.serve_service_name,
            "dashboard_url": service.dashboard_url,
            "serve_url": service.serve_url,
        }

    result = run(program)
    assert result.types == ["ray:index:RayService", SERVICE]
    component, cr = result.registrations
    assert cr.parent == component.urn
    assert cr.inputs["metadata"]["name"] == "llm"
    assert cr.inputs["spec"]["serveConfigV2"] == SERVE_CONFIG
    assert annotations(cr)["pulumi.com/waitFor"] == "condition=Ready"
    assert annotations(cr)["pulumi.com/patchForce"] == "true"
    assert result.value == {
        "name": "llm",
        "head_service_name": "llm-head-svc",
        "serve_service_name": "llm-serve-svc",
        "dashboard_url": "http://llm-head-svc.team-a.svc.cluster.local:8265",
        "serve_url": "http://llm-serve-svc.team-a.svc.cluster.local:8000",
    }


def test_a_suspended_rayservice_is_waited_for_until_suspended() -> None:
    cr = run(lambda: RayService("llm", suspend=True, **service_spec())).one(SERVICE)
    assert annotations(cr)["pulumi.com/waitFor"] == "condition=Suspended"


def test_rayservice_cluster_config_leaves_replicas_to_the_autoscaler() -> None:
    spec = service_spec(ray_cluster_config=cluster_spec(enable_in_tree_autoscaling=True))
    cr = run(lambda: RayService("llm", **spec)).one(SERVICE)
    group = cr.inputs["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]
    assert "replicas" not in group
    assert group["minReplicas"] == 1
    assert "pulumi.com/patchForce" not in annotations(cr)


def test_serve_gateway_routes_to_the_serve_service() -> None:
    gateway = GatewayEdgeArgs(gateway_class_name="envoy", hostname="llm.example.com")
    result = run(
        lambda: RayService("llm", namespace="team-a", serve_gateway=gateway, **service_spec())
    )
    route = result.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")
    assert route.inputs["metadata"] == {"name": "llm-serve", "namespace": "team-a"}
    assert route.inputs["spec"]["rules"][0]["backendRefs"] == [
        {"name": "llm-serve-svc", "port": 8000}
    ]
    listener = result.one("kubernetes:gateway.networking.k8s.io/v1:Gateway").inputs["spec"]
    assert listener["listeners"] == [
        {"name": "http", "port": 80, "protocol": "HTTP", "hostname": "llm.example.com"}
    ]
    assert route.parent == result.one("ray:index:RayService").urn


def test_an_edge_beside_an_incremental_upgrade_is_refused() -> None:
    strategy = {
        "type": "NewClusterWithIncrementalUpgrade",
        "cluster_upgrade_options": {
            "step_size_percent": 10, "interval_seconds": 30, "gateway_class_name": "envoy",
        },
    }  # fmt: skip
    autoscaled = cluster_spec(enable_in_tree_autoscaling=True)
    spec = service_spec(upgrade_strategy=strategy, ray_cluster_config=autoscaled)
    # Without an edge the same spec is fine: the operator makes the Gateway itself.
    assert run(lambda: RayService("llm", **spec)).one(SERVICE)
    seen = Run()
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayService("llm", serve_ingress=IngressEdgeArgs(), **spec), into=seen)
    assert seen.registrations == []
    assert caught.value.path == "spec.upgradeStrategy.type"
    assert "serve_ingress" in str(caught.value)


def cronjob_spec(**overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedule": "0 2 * * *",
        "time_zone": "Europe/Berlin",
        "job_template": {
            "entrypoint": "python nightly.py",
            "ray_cluster_spec": cluster_spec(enable_in_tree_autoscaling=True),
            "shutdown_after_job_finishes": True,
        },
    }
    spec.update(overrides)
    return spec


def test_raycronjob_registers_without_waiting() -> None:
    result = run(
        lambda: {"status": RayCronJob("nightly", namespace="team-a", **cronjob_spec()).status}
    )
    assert result.types == ["ray:index:RayCronJob", CRONJOB]
    cr = result.one(CRONJOB)
    assert cr.inputs["spec"]["schedule"] == "0 2 * * *"
    assert "pulumi.com/waitFor" not in annotations(cr)
    assert "pulumi.com/skipAwait" not in annotations(cr)
    group = cr.inputs["spec"]["jobTemplate"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert "replicas" not in group
    assert result.value == {"status": {"lastScheduleTime": "2026-01-01T02:00:00Z"}}


def test_raycronjob_template_may_delete_itself() -> None:
    spec = cronjob_spec()
    template = spec["job_template"]
    template.pop("shutdown_after_job_finishes")
    template["deletion_strategy"] = {
        "deletion_rules": [{"policy": "DeleteSelf", "condition": {"job_status": "SUCCEEDED"}}]
    }
    cr = run(lambda: RayCronJob("nightly", **spec)).one(CRONJOB)
    rule = cr.inputs["spec"]["jobTemplate"]["deletionStrategy"]["deletionRules"][0]
    assert rule["policy"] == "DeleteSelf"


def test_raycronjob_bad_schedule_names_the_field() -> None:
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayCronJob("nightly", namespace="team-a", **cronjob_spec(schedule="nightly")))
    assert caught.value.path == "spec.schedule"
    assert str(caught.value).startswith("RayCronJob team-a/nightly: spec.schedule: ")
