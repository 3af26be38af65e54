"""Every RayService and RayCronJob rule: bad objects rejected with code and path, and
good ones accepted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic
import pytest

from operator_runtime.api import ErrorCode, FeatureGates
from tests.unit.api.crdfiles import committed_schema
from tests.unit.api.rulecases import Obj, case_params, codes, do

C = ErrorCode
CUO = "spec.upgradeStrategy.clusterUpgradeOptions"
NO_INCREMENTAL = FeatureGates(ray_service_incremental_upgrade=False)
TIMEOUT = "ray.io/initializing-timeout"


def cluster(**fields: Any) -> Callable[[Obj], None]:
    return lambda o: o["spec"]["rayClusterConfig"].update(fields)


def annotate(value: str) -> Callable[[Obj], None]:
    return lambda o: o["metadata"].update(annotations={TIMEOUT: value})


def incremental(**options: Any) -> Callable[[Obj], None]:
    merged = {"stepSizePercent": 10, "intervalSeconds": 30, "gatewayClassName": "istio", **options}
    strategy = {"type": "NewClusterWithIncrementalUpgrade", "clusterUpgradeOptions": merged}
    return do(
        cluster(enableInTreeAutoscaling=True), lambda o: o["spec"].update(upgradeStrategy=strategy)
    )


# fmt: off
SERVICE_CASES = [
    (C.RAYSERVICE_NAME_TOO_LONG, lambda o: o["metadata"].update(name="s" * 48),
     "metadata.name", "Metadata"),
    (C.RAYSERVICE_NAME_NOT_DNS1035, lambda o: o["metadata"].update(name="svc."),
     "metadata.name", "Metadata"),
    (C.RAYSERVICE_INVALID_INITIALIZING_TIMEOUT, annotate("0"),
     f"metadata.annotations[{TIMEOUT}]", "Metadata"),
    (C.RAYSERVICE_INVALID_INITIALIZING_TIMEOUT, annotate("-5m"),
     f"metadata.annotations[{TIMEOUT}]", "Metadata"),
    (C.RAYSERVICE_INVALID_INITIALIZING_TIMEOUT, annotate("ten minutes"),
     f"metadata.annotations[{TIMEOUT}]", "Metadata"),
    (C.RAYSERVICE_INVALID_INITIALIZING_TIMEOUT, annotate("0s"),
     f"metadata.annotations[{TIMEOUT}]", "Metadata"),
    (C.RAYSERVICE_INVALID_INITIALIZING_TIMEOUT, annotate("1d"),
     f"metadata.annotations[{TIMEOUT}]", "Metadata"),
    (C.RAYSERVICE_NAME_NOT_DNS1035, lambda o: o["metadata"].update(name="9lives"),
     "metadata.name", "Metadata"),
    (C.RAYSERVICE_K8S_TOKEN_AUTH,
     cluster(authOptions={"mode": "token", "enableK8sTokenAuth": True}, rayVersion="2.55.0"),
     "spec.rayClusterConfig.authOptions.enableK8sTokenAuth", "Spec"),
    (C.RAYSERVICE_HEAD_SERVICE_NAME,
     lambda o: o["spec"]["rayClusterConfig"]["headGroupSpec"].update(
         headService={"metadata": {"name": "fixed"}}),
     "spec.rayClusterConfig.headGroupSpec.headService.metadata.name", "Spec"),
    (C.RAYSERVICE_UPGRADE_TYPE, lambda o: o["spec"].update(upgradeStrategy={"type": "Recreate"}),
     "spec.upgradeStrategy.type", "Spec"),
    (C.RAYSERVICE_INCREMENTAL_NEEDS_AUTOSCALING,
     do(incremental(), cluster(enableInTreeAutoscaling=False)),
     "spec.rayClusterConfig.enableInTreeAutoscaling", "Spec"),
    (C.RAYSERVICE_INCREMENTAL_NO_OPTIONS,
     do(incremental(), lambda o: o["spec"]["upgradeStrategy"].pop("clusterUpgradeOptions")),
     CUO, "Spec"),
    (C.RAYSERVICE_MAX_SURGE_RANGE, incremental(maxSurgePercent=150), f"{CUO}.maxSurgePercent",
     "Spec"),
    (C.RAYSERVICE_STEP_SIZE_RANGE, incremental(stepSizePercent=-1), f"{CUO}.stepSizePercent",
     "Spec"),
    (C.RAYSERVICE_STEP_SIZE_ABOVE_MAX_SURGE, incremental(maxSurgePercent=20, stepSizePercent=50),
     f"{CUO}.stepSizePercent", "Spec"),
    (C.RAYSERVICE_NONPOSITIVE_INTERVAL, incremental(intervalSeconds=0), f"{CUO}.intervalSeconds",
     "Spec"),
    (C.RAYSERVICE_NONPOSITIVE_INTERVAL, incremental(intervalSeconds=-30),
     f"{CUO}.intervalSeconds", "Spec"),
    (C.RAYSERVICE_STEP_SIZE_RANGE, incremental(stepSizePercent=101, maxSurgePercent=100),
     f"{CUO}.stepSizePercent", "Spec"),
    (C.RAYSERVICE_MAX_SURGE_RANGE, incremental(maxSurgePercent=-1), f"{CUO}.maxSurgePercent",
     "Spec"),
    (C.RAYSERVICE_STEP_SIZE_ABOVE_MAX_SURGE, incremental(maxSurgePercent=0, stepSizePercent=1),
     f"{CUO}.stepSizePercent", "Spec"),
    (C.RAYSERVICE_UPGRADE_TYPE, lambda o: o["spec"].update(upgradeStrategy={"type": "newcluster"}),
     "spec.upgradeStrategy.type", "Spec"),
    (C.RAYSERVICE_NO_GATEWAY_CLASS, incremental(gatewayClassName=""),
     f"{CUO}.gatewayClassName", "Spec"),
]
# fmt: on


@pytest.mark.parametrize(
    ("code", "mutate", "path", "scope"),
    case_params(SERVICE_CASES),
)
def test_service_rule_rejects(
    api: Any, code: ErrorCode, mutate: Callable[[Obj], None], path: str, scope: str
) -> None:
    obj = api.base("RayService")
    mutate(obj)
    api.check_invalid(obj, code.value, path, scope)


def test_every_rayservice_code_has_a_case() -> None:
    expected = codes("RAYSERVICE_")
    assert expected == {c[0] for c in SERVICE_CASES}


def test_service_cluster_spec_is_validated_with_its_path(api: Any) -> None:
    obj = api.base("RayService")
    obj["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"] = []
    api.check_invalid(
        obj,
        "RAYCLUSTER_HEAD_NO_CONTAINER",
        "spec.rayClusterConfig.headGroupSpec.template.spec.containers",
    )


@pytest.mark.parametrize(
    ("mutate", "gates"),
    [
        pytest.param(lambda o: None, None, id="base"),
        pytest.param(annotate("5m"), None, id="timeout-duration"),
        pytest.param(annotate("300"), None, id="timeout-seconds"),
        pytest.param(incremental(maxSurgePercent=50, stepSizePercent=50), None, id="incremental"),
        pytest.param(
            lambda o: o["spec"].update(
                upgradeStrategy={"type": "NewClusterWithIncrementalUpgrade"}
            ),
            NO_INCREMENTAL,
            id="incremental-unchecked-with-gate-off",
        ),
        pytest.param(
            lambda o: o["spec"].update(upgradeStrategy={"type": "None"}), None, id="upgrade-none"
        ),
        pytest.param(
            lambda o: o["spec"].update(upgradeStrategy={"type": "NewCluster"}),
            None,
            id="upgrade-new-cluster",
        ),
        pytest.param(annotate("+90"), None, id="timeout-signed-seconds"),
        pytest.param(annotate(".5h"), None, id="timeout-fraction"),
        pytest.param(incremental(stepSizePercent=100), None, id="incremental-step-at-surge"),
        pytest.param(
            lambda o: o["spec"].update(rayClusterDeletionDelaySeconds=0), None, id="delay-zero"
        ),
        pytest.param(
            incremental(maxSurgePercent=150, intervalSeconds=0),
            NO_INCREMENTAL,
            id="incremental-options-unchecked-with-gate-off",
        ),
    ],
)
def test_valid_services_pass(
    api: Any, mutate: Callable[[Obj], None], gates: FeatureGates | None
) -> None:
    obj = api.base("RayService")
    mutate(obj)
    api.check_valid(obj, gates)


def test_a_negative_deletion_delay_is_refused_by_the_model_and_the_crd(api: Any) -> None:
    """``rayClusterDeletionDelaySeconds >= 0`` is a schema bound: the API server refuses
    the object before the controller sees it, and the model refuses it the same way."""
    obj = api.base("RayService")
    obj["spec"]["rayClusterDeletionDelaySeconds"] = -1
    with pytest.raises(pydantic.ValidationError) as caught:
        api.parse(obj)
    assert [e["loc"] for e in caught.value.errors()] == [("spec", "rayClusterDeletionDelaySeconds")]
    spec = committed_schema("ray.io_rayservices.yaml")["properties"]["spec"]
    assert spec["properties"]["rayClusterDeletionDelaySeconds"]["minimum"] == 0


def schedule(value: str) -> Callable[[Obj], None]:
    return lambda o: o["spec"].update(schedule=value)


# fmt: off
CRON_CASES = [
    (C.RAYCRONJOB_NAME_TOO_LONG, lambda o: o["metadata"].update(name="c" * 37), "metadata.name"),
    (C.RAYCRONJOB_SCHEDULE_HAS_TZ, schedule("CRON_TZ=UTC 0 * * * *"), "spec.schedule"),
    (C.RAYCRONJOB_SCHEDULE_HAS_TZ, schedule("TZ=Asia/Kolkata 30 * * * *"), "spec.schedule"),
    (C.RAYCRONJOB_INVALID_SCHEDULE, schedule("61 * * * *"), "spec.schedule"),
    (C.RAYCRONJOB_INVALID_SCHEDULE, schedule("* * * *"), "spec.schedule"),
    (C.RAYCRONJOB_INVALID_SCHEDULE, schedule("0 0 1 1 * 2030"), "spec.schedule"),
    (C.RAYCRONJOB_INVALID_SCHEDULE, schedule("@every soon"), "spec.schedule"),
    (C.RAYCRONJOB_INVALID_SCHEDULE, schedule("@sometimes"), "spec.schedule"),
    (C.RAYCRONJOB_INVALID_TIME_ZONE, lambda o: o["spec"].update(timeZone="Mars/Olympus"),
     "spec.timeZone"),
]
# fmt: on


@pytest.mark.parametrize(
    ("code", "mutate", "path"),
    case_params(CRON_CASES),
)
def test_cron_rule_rejects(
    api: Any, code: ErrorCode, mutate: Callable[[Obj], None], path: str
) -> None:
    obj = api.base("RayCronJob")
    mutate(obj)
    error = api.check_invalid(obj, code.value, path, "Spec")
    assert error.event_reason == "InvalidRayCronJobSpec"


def test_every_raycronjob_code_has_a_case() -> None:
    expected = codes("RAYCRONJOB_")
    assert expected == {c[0] for c in CRON_CASES}


def test_cron_job_template_is_validated_as_a_rayjob_spec(api: Any) -> None:
    obj = api.base("RayCronJob")
    obj["spec"]["jobTemplate"]["suspend"] = True
    api.check_invalid(obj, "RAYJOB_SUSPEND_WITHOUT_SHUTDOWN", "spec.jobTemplate.suspend")
    obj = api.base("RayCronJob")
    obj["spec"]["jobTemplate"]["rayClusterSpec"]["workerGroupSpecs"][0]["maxReplicas"] = -1
    api.check_invalid(
        obj,
        "RAYCLUSTER_NEGATIVE_REPLICAS",
        "spec.jobTemplate.rayClusterSpec.workerGroupSpecs[0].maxReplicas",
    )


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(schedule("@every 1h30m"), id="every"),
        pytest.param(schedule("@daily"), id="descriptor"),
        pytest.param(schedule("0 9 * JAN-MAR MON-FRI"), id="names"),
        pytest.param(lambda o: o["spec"].update(timeZone="Europe/Berlin"), id="time-zone"),
        pytest.param(lambda o: o["spec"].update(timeZone="UTC"), id="utc"),
    ],
)
def test_valid_cron_jobs_pass(api: Any, mutate: Callable[[Obj], None]) -> None:
    obj = api.base("RayCronJob")
    mutate(obj)
    api.check_valid(obj)


def test_an_empty_cron_time_zone_does_not_parse(api: Any) -> None:
    """``timeZone`` has a minimum length of 1 (the CRD says so too)."""
    obj = api.base("RayCronJob")
    obj["spec"]["timeZone"] = ""
    with pytest.raises(pydantic.ValidationError, match=r"timeZone|time_zone"):
        api.parse(obj)
