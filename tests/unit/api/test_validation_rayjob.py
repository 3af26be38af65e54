"""Every RayJob rule: a bad object rejected with its code and path, and good ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic
import pytest

from operator_runtime.api import ErrorCode, FeatureGates
from tests.unit.api.crdfiles import committed_schema
from tests.unit.api.rulecases import Obj, case_params, codes, do, spec_set

C = ErrorCode
DS = "spec.deletionStrategy"
NO_DELETION_POLICY = FeatureGates(ray_job_deletion_policy=False)


def selector(name: str = "shared") -> Callable[[Obj], None]:
    def mutate(o: Obj) -> None:
        del o["spec"]["rayClusterSpec"]
        o["spec"]["clusterSelector"] = {"ray.io/cluster": name} if name else {"team": "a"}

    return mutate


def rule(policy: str, ttl: int = 0, **condition: Any) -> Obj:
    return {
        "policy": policy,
        "condition": {"ttlSeconds": ttl, **(condition or {"jobStatus": "SUCCEEDED"})},
    }


def rules(*items: Obj) -> Callable[[Obj], None]:
    return spec_set(deletionStrategy={"deletionRules": list(items)})


def legacy(success: str | None, failure: str | None) -> Callable[[Obj], None]:
    strategy: Obj = {}
    if success is not None:
        strategy["onSuccess"] = {"policy": success} if success else {}
    if failure is not None:
        strategy["onFailure"] = {"policy": failure} if failure else {}
    return spec_set(deletionStrategy=strategy)


def cluster(**fields: Any) -> Callable[[Obj], None]:
    return lambda o: o["spec"]["rayClusterSpec"].update(fields)


AUTOSCALE = cluster(enableInTreeAutoscaling=True)
SIDECAR = spec_set(submissionMode="SidecarMode")

# fmt: off
CASES = [
    (C.RAYJOB_NAME_TOO_LONG, lambda o: o["metadata"].update(name="j" * 48),
     "metadata.name", "Metadata", None),
    (C.RAYJOB_NAME_NOT_DNS1035, lambda o: o["metadata"].update(name="1job"),
     "metadata.name", "Metadata", None),
    (C.RAYJOB_SUSPEND_WITHOUT_SHUTDOWN, spec_set(suspend=True), "spec.suspend", "Spec", None),
    (C.RAYJOB_NEGATIVE_TTL, spec_set(ttlSecondsAfterFinished=-1),
     "spec.ttlSecondsAfterFinished", "Spec", None),
    (C.RAYJOB_TTL_WITHOUT_SHUTDOWN, spec_set(ttlSecondsAfterFinished=10),
     "spec.ttlSecondsAfterFinished", "Spec", None),
    (C.RAYJOB_DELETION_STRATEGY_GATE_DISABLED, rules(rule("DeleteCluster")), DS, "Spec",
     NO_DELETION_POLICY),
    (C.RAYJOB_DELETION_RULES_WITH_SHUTDOWN,
     do(rules(rule("DeleteCluster")), spec_set(shutdownAfterJobFinishes=True)),
     f"{DS}.deletionRules", "Spec", None),
    (C.RAYJOB_DELETION_RULES_WITH_LEGACY,
     spec_set(deletionStrategy={"deletionRules": [rule("DeleteCluster")],
                                "onSuccess": {"policy": "DeleteCluster"}}),
     f"{DS}.deletionRules", "Spec", None),
    (C.RAYJOB_DELETION_STRATEGY_EMPTY, spec_set(deletionStrategy={}), DS, "Spec", None),
    (C.RAYJOB_LEGACY_POLICY_INCOMPLETE, legacy("DeleteCluster", None), f"{DS}.onFailure",
     "Spec", None),
    (C.RAYJOB_LEGACY_POLICY_INCOMPLETE, legacy("", "DeleteCluster"), f"{DS}.onSuccess.policy",
     "Spec", None),
    (C.RAYJOB_DELETION_POLICY_WITH_SELECTOR,
     do(selector(), rules(rule("DeleteWorkers"))), f"{DS}.deletionRules[0].policy", "Spec", None),
    (C.RAYJOB_DELETION_POLICY_WITH_SELECTOR,
     do(selector(), legacy("DeleteSelf", "DeleteCluster")), f"{DS}.onFailure.policy", "Spec",
     None),
    (C.RAYJOB_DELETE_WORKERS_WITH_AUTOSCALING,
     do(AUTOSCALE, rules(rule("DeleteWorkers"))), f"{DS}.deletionRules[0].policy", "Spec", None),
    (C.RAYJOB_DELETE_WORKERS_WITH_AUTOSCALING,
     do(AUTOSCALE, legacy("DeleteWorkers", "DeleteCluster")), f"{DS}.onSuccess.policy", "Spec",
     None),
    (C.RAYJOB_SHUTDOWN_WITH_DELETE_NONE,
     do(spec_set(shutdownAfterJobFinishes=True), legacy("DeleteCluster", "DeleteNone")),
     f"{DS}.onFailure.policy", "Spec", None),
    (C.RAYJOB_DELETION_CONDITION_INVALID,
     rules({"policy": "DeleteCluster", "condition": {"ttlSeconds": 5}}),
     f"{DS}.deletionRules[0].condition", "Spec", None),
    (C.RAYJOB_DELETION_CONDITION_INVALID,
     rules(rule("DeleteCluster", jobStatus="FAILED", jobDeploymentStatus="Failed")),
     f"{DS}.deletionRules[0].condition", "Spec", None),
    (C.RAYJOB_DUPLICATE_DELETION_RULE,
     rules(rule("DeleteCluster", 10), rule("DeleteCluster", 20)),
     f"{DS}.deletionRules[1]", "Spec", None),
    (C.RAYJOB_DELETION_TTL_ORDER,
     rules(rule("DeleteCluster", 10), rule("DeleteWorkers", 20)),
     f"{DS}.deletionRules", "Spec", None),
    (C.RAYJOB_DELETION_TTL_ORDER,
     rules(rule("DeleteSelf", 5, jobDeploymentStatus="Failed"),
           rule("DeleteCluster", 50, jobDeploymentStatus="Failed")),
     f"{DS}.deletionRules", "Spec", None),
    (C.RAYJOB_SELECTOR_WITH_SUSPEND,
     do(selector(), spec_set(suspend=True, shutdownAfterJobFinishes=True)), "spec.suspend",
     "Spec", None),
    (C.RAYJOB_NO_CLUSTER, lambda o: o["spec"].pop("rayClusterSpec"), "spec.rayClusterSpec",
     "Spec", None),
    (C.RAYJOB_SELECTOR_EMPTY_CLUSTER_NAME, selector(""),
     "spec.clusterSelector[ray.io/cluster]", "Spec", None),
    (C.RAYJOB_SELECTOR_SIDECAR, do(selector(), SIDECAR), "spec.submissionMode", "Spec", None),
    (C.RAYJOB_SELECTOR_BACKOFF_LIMIT, do(selector(), spec_set(backoffLimit=2)),
     "spec.backoffLimit", "Spec", None),
    (C.RAYJOB_INTERACTIVE_BACKOFF_LIMIT,
     spec_set(submissionMode="InteractiveMode", backoffLimit=1), "spec.backoffLimit", "Spec",
     None),
    (C.RAYJOB_SIDECAR_SUBMITTER_TEMPLATE,
     do(SIDECAR, spec_set(submitterPodTemplate={"spec": {"containers": []}})),
     "spec.submitterPodTemplate", "Spec", None),
    (C.RAYJOB_SIDECAR_SUBMITTER_CONFIG, do(SIDECAR, spec_set(submitterConfig={"backoffLimit": 1})),
     "spec.submitterConfig", "Spec", None),
    (C.RAYJOB_SIDECAR_RESTART_POLICY,
     do(SIDECAR, lambda o: o["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
        .update(restartPolicy="Always")),
     "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy", "Spec", None),
    (C.RAYJOB_K8S_TOKEN_AUTH,
     cluster(authOptions={"mode": "token", "enableK8sTokenAuth": True}, rayVersion="2.55.0"),
     "spec.rayClusterSpec.authOptions.enableK8sTokenAuth", "Spec", None),
    (C.RAYJOB_INVALID_RUNTIME_ENV, spec_set(runtimeEnvYAML="just a string"),
     "spec.runtimeEnvYAML", "Spec", None),
    (C.RAYJOB_INVALID_RUNTIME_ENV, spec_set(runtimeEnvYAML="pip: [unclosed"),
     "spec.runtimeEnvYAML", "Spec", None),
    (C.RAYJOB_NONPOSITIVE_ACTIVE_DEADLINE, spec_set(activeDeadlineSeconds=0),
     "spec.activeDeadlineSeconds", "Spec", None),
    (C.RAYJOB_NEGATIVE_BACKOFF_LIMIT, spec_set(backoffLimit=-1), "spec.backoffLimit", "Spec",
     None),
    (C.RAYJOB_WAITING_NOT_INTERACTIVE, lambda o: o.update(status={"jobDeploymentStatus":
                                                                    "Waiting"}),
     "status.jobDeploymentStatus", "Status", None),
]
# fmt: on


@pytest.mark.parametrize(
    ("code", "mutate", "path", "scope", "gates"),
    case_params(CASES),
)
def test_rule_rejects(
    api: Any,
    code: ErrorCode,
    mutate: Callable[[Obj], None],
    path: str,
    scope: str,
    gates: FeatureGates | None,
) -> None:
    obj = api.base("RayJob")
    mutate(obj)
    api.check_invalid(obj, code.value, path, scope, gates)


def test_every_rayjob_code_has_a_case() -> None:
    assert codes("RAYJOB_") == {c[0] for c in CASES}


def test_embedded_cluster_spec_is_validated_with_its_path(api: Any) -> None:
    obj = api.base("RayJob")
    obj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(minReplicas=4, maxReplicas=2)
    error = api.check_invalid(
        obj, "RAYCLUSTER_MIN_GT_MAX", "spec.rayClusterSpec.workerGroupSpecs[0].minReplicas"
    )
    assert error.event_reason == "InvalidRayJobSpec"


def test_embedded_cluster_sees_the_jobs_annotations(api: Any) -> None:
    obj = api.base("RayJob")
    obj["metadata"]["annotations"] = {"ray.io/ft-enabled": "true"}
    obj["spec"]["rayClusterSpec"]["gcsFaultToleranceOptions"] = {"redisAddress": "r:6379"}
    api.check_invalid(
        obj, "RAYCLUSTER_FT_ANNOTATION_AND_OPTIONS", "metadata.annotations[ray.io/ft-enabled]"
    )


# fmt: off
GOOD = [
    pytest.param(lambda o: None, id="base"),
    pytest.param(spec_set(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=30,
                          suspend=True), id="suspend-with-shutdown"),
    pytest.param(rules(rule("DeleteWorkers", 0), rule("DeleteCluster", 10),
                       rule("DeleteSelf", 20), rule("DeleteCluster", 0, jobStatus="FAILED"),
                       rule("DeleteNone", 0, jobDeploymentStatus="Failed")),
                 id="ordered-rules"),
    pytest.param(legacy("DeleteCluster", "DeleteNone"), id="legacy"),
    pytest.param(do(selector(), legacy("DeleteSelf", "DeleteNone")), id="selector-legacy"),
    pytest.param(spec_set(submissionMode="InteractiveMode", backoffLimit=0), id="interactive"),
    pytest.param(do(SIDECAR, lambda o: o["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
                    ["spec"].update(restartPolicy="Never")), id="sidecar"),
    pytest.param(spec_set(runtimeEnvYAML="pip: [requests]\nenv_vars: {A: b}\n",
                          activeDeadlineSeconds=1, preRunningDeadlineSeconds=1), id="limits"),
    pytest.param(lambda o: o.update(status={"jobDeploymentStatus": "Running"}), id="status"),
]
# fmt: on


@pytest.mark.parametrize("mutate", GOOD)
def test_valid_jobs_pass(api: Any, mutate: Callable[[Obj], None]) -> None:
    obj = api.base("RayJob")
    mutate(obj)
    api.check_valid(obj)


# Rules the CRD's schema enforces (KubeRay's `Minimum` markers); the API server refuses
# them before any controller sees the object, and the model refuses them the same way.
# fmt: off
SCHEMA_BOUNDS = [
    pytest.param(spec_set(preRunningDeadlineSeconds=0),
                 ("spec", "preRunningDeadlineSeconds"), 1, id="preRunningDeadlineSeconds"),
    pytest.param(rules(rule("DeleteCluster", -1)),
                 ("spec", "deletionStrategy", "deletionRules", 0, "condition", "ttlSeconds"), 0,
                 id="deletionRules-ttlSeconds"),
]
# fmt: on


@pytest.mark.parametrize(("mutate", "loc", "minimum"), SCHEMA_BOUNDS)
def test_schema_bounds_refuse_the_object_in_the_model_and_the_crd(
    api: Any, mutate: Callable[[Obj], None], loc: tuple[Any, ...], minimum: int
) -> None:
    obj = api.base("RayJob")
    mutate(obj)
    with pytest.raises(pydantic.ValidationError) as caught:
        api.parse(obj)
    assert [e["loc"] for e in caught.value.errors()] == [loc]
    schema = committed_schema("ray.io_rayjobs.yaml")
    for part in loc:
        schema = schema["items"] if isinstance(part, int) else schema["properties"][part]
    assert schema["minimum"] == minimum
