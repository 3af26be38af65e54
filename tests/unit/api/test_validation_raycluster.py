"""Every RayCluster rule: a bad object rejected with its code and path, and good ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from operator_runtime.api import ErrorCode, FeatureGates
from tests.unit.api.rulecases import Obj, case_params, codes, do, spec_set

ROCKS = FeatureGates(gcs_fault_tolerance_embedded_storage=True)
HISTORY = FeatureGates(ray_cluster_history_server=True)
NETPOL = FeatureGates(ray_cluster_network_policy=True)
MTLS = FeatureGates(ray_cluster_mtls=True)
NO_DELETION_POLICY = FeatureGates(ray_job_deletion_policy=False)
HEAD_C = "spec.headGroupSpec.template.spec.containers[0]"
WG = "spec.workerGroupSpecs[0]"
FT = {"redisAddress": "redis:6379"}
COLLECTOR = {
    "image": "collector:1",
    "env": [{"name": "STORAGE_BACKEND", "value": "GCS"}, {"name": "GCS_BUCKET", "value": "logs"}],
}


def head(o: Obj) -> Obj:
    return o["spec"]["headGroupSpec"]


def headc(o: Obj) -> Obj:
    return head(o)["template"]["spec"]["containers"][0]


def wg(o: Obj, i: int = 0) -> Obj:
    return o["spec"]["workerGroupSpecs"][i]


def wgc(o: Obj) -> Obj:
    return wg(o)["template"]["spec"]["containers"][0]


def env(target: Callable[[Obj], Obj], name: str, value: str = "x") -> Callable[[Obj], None]:
    return lambda o: target(o).setdefault("env", []).append({"name": name, "value": value})


def annotate(key: str, value: str) -> Callable[[Obj], None]:
    return lambda o: o["metadata"].setdefault("annotations", {}).__setitem__(key, value)


AUTOSCALE = spec_set(enableInTreeAutoscaling=True)
V2 = spec_set(enableInTreeAutoscaling=True, autoscalerOptions={"version": "v2"})
SUSPENDED_STATUS = {
    "conditions": [
        {
            "type": t,
            "status": "True",
            "lastTransitionTime": "2025-01-01T00:00:00Z",
            "reason": t,
            "message": "",
        }
        for t in ("RayClusterSuspending", "RayClusterSuspended")
    ]
}

C = ErrorCode
# fmt: off
CASES = [
    (C.RAYCLUSTER_NAME_TOO_LONG, lambda o: o["metadata"].update(name="a" * 54),
     "metadata.name", "Metadata", None),
    (C.RAYCLUSTER_NAME_NOT_DNS1035, lambda o: o["metadata"].update(name="Demo"),
     "metadata.name", "Metadata", None),
    (C.RAYCLUSTER_SUSPENDING_AND_SUSPENDED, lambda o: o.update(status=SUSPENDED_STATUS),
     "status.conditions", "Status", None),
    (C.RAYCLUSTER_HEAD_NO_CONTAINER, lambda o: head(o)["template"]["spec"].update(containers=[]),
     "spec.headGroupSpec.template.spec.containers", "Spec", None),
    (C.RAYCLUSTER_DUPLICATE_GROUP_NAME, lambda o: o["spec"]["workerGroupSpecs"].append(wg(o)),
     "spec.workerGroupSpecs[1].groupName", "Spec", None),
    (C.RAYCLUSTER_RESOURCES_CONFLICT,
     lambda o: head(o).update(resources={"CPU": "1"}, rayStartParams={"num-cpus": "1"}),
     "spec.headGroupSpec.resources", "Spec", None),
    (C.RAYCLUSTER_RESOURCES_CONFLICT,
     lambda o: wg(o).update(resources={"GPU": "1"}, rayStartParams={"num-gpus": "1"}),
     f"{WG}.resources", "Spec", None),
    (C.RAYCLUSTER_LABELS_IN_RAY_START_PARAMS,
     lambda o: head(o).update(rayStartParams={"labels": "a=b"}),
     "spec.headGroupSpec.rayStartParams[labels]", "Spec", None),
    (C.RAYCLUSTER_INVALID_LABEL, lambda o: wg(o).update(labels={"bad key": "x"}),
     f"{WG}.labels[bad key]", "Spec", None),
    (C.RAYCLUSTER_INVALID_LABEL, lambda o: wg(o).update(labels={"zone": "-bad-"}),
     f"{WG}.labels[zone]", "Spec", None),
    (C.RAYCLUSTER_WORKER_NO_CONTAINER, lambda o: wg(o)["template"]["spec"].update(containers=[]),
     f"{WG}.template.spec.containers", "Spec", None),
    (C.RAYCLUSTER_REPLICAS_UNSET, lambda o: wg(o).update(minReplicas=None),
     f"{WG}.minReplicas", "Spec", None),
    (C.RAYCLUSTER_NEGATIVE_REPLICAS, lambda o: wg(o).update(minReplicas=-1),
     f"{WG}.minReplicas", "Spec", None),
    (C.RAYCLUSTER_NEGATIVE_REPLICAS, lambda o: wg(o).update(maxReplicas=-1),
     f"{WG}.maxReplicas", "Spec", None),
    (C.RAYCLUSTER_MIN_GT_MAX, lambda o: wg(o).update(minReplicas=5, maxReplicas=3),
     f"{WG}.minReplicas", "Spec", None),
    (C.RAYCLUSTER_NEGATIVE_IDLE_TIMEOUT, lambda o: wg(o).update(idleTimeoutSeconds=-1),
     f"{WG}.idleTimeoutSeconds", "Spec", None),
    (C.RAYCLUSTER_IDLE_TIMEOUT_NEEDS_V2, lambda o: wg(o).update(idleTimeoutSeconds=60),
     f"{WG}.idleTimeoutSeconds", "Spec", None),
    (C.RAYCLUSTER_PRIORITY_NEEDS_RAY_VERSION, lambda o: wg(o).update(priority=1),
     f"{WG}.priority", "Spec", None),
    (C.RAYCLUSTER_PRIORITY_NEEDS_RAY_VERSION,
     do(lambda o: wg(o).update(priority=1), spec_set(rayVersion="latest")),
     f"{WG}.priority", "Spec", None),
    (C.RAYCLUSTER_PRIORITY_NEEDS_V2,
     do(lambda o: wg(o).update(priority=1), spec_set(rayVersion="2.56.0")),
     f"{WG}.priority", "Spec", None),
    (C.RAYCLUSTER_FT_ANNOTATION_AND_OPTIONS,
     do(annotate("ray.io/ft-enabled", "true"), spec_set(gcsFaultToleranceOptions=FT)),
     "metadata.annotations[ray.io/ft-enabled]", "Spec", None),
    (C.RAYCLUSTER_REDIS_ADDRESS_WITHOUT_FT, env(headc, "RAY_REDIS_ADDRESS", "redis:6379"),
     f"{HEAD_C}.env[0]", "Spec", None),
    (C.RAYCLUSTER_FT_REDIS_PASSWORD_PARAM,
     do(spec_set(gcsFaultToleranceOptions=FT),
        lambda o: head(o).update(rayStartParams={"redis-password": "pw"})),
     "spec.headGroupSpec.rayStartParams[redis-password]", "Spec", None),
    (C.RAYCLUSTER_FT_REDIS_PASSWORD_ENV,
     do(spec_set(gcsFaultToleranceOptions=FT), env(headc, "REDIS_PASSWORD")),
     f"{HEAD_C}.env[0]", "Spec", None),
    (C.RAYCLUSTER_FT_REDIS_ADDRESS_ENV,
     do(spec_set(gcsFaultToleranceOptions=FT), env(headc, "RAY_REDIS_ADDRESS")),
     f"{HEAD_C}.env[0]", "Spec", None),
    (C.RAYCLUSTER_FT_STORAGE_NAMESPACE_ANNOTATION,
     do(spec_set(gcsFaultToleranceOptions=FT), annotate("ray.io/external-storage-namespace", "n")),
     "metadata.annotations[ray.io/external-storage-namespace]", "Spec", None),
    (C.RAYCLUSTER_ROCKSDB_GATE_DISABLED, spec_set(gcsFaultToleranceOptions={"backend": "rocksdb"}),
     "spec.gcsFaultToleranceOptions.backend", "Spec", None),
    (C.RAYCLUSTER_ROCKSDB_REDIS_FIELD,
     spec_set(gcsFaultToleranceOptions={"backend": "rocksdb", "redisAddress": "r:6379"}),
     "spec.gcsFaultToleranceOptions.redisAddress", "Spec", ROCKS),
    (C.RAYCLUSTER_ROCKSDB_CLAIM_CONFLICT,
     spec_set(gcsFaultToleranceOptions={"backend": "rocksdb",
                                        "storage": {"claimName": "gcs", "size": "2Gi"}}),
     "spec.gcsFaultToleranceOptions.storage.claimName", "Spec", ROCKS),
    (C.RAYCLUSTER_ROCKSDB_MANAGED_ENV,
     do(spec_set(gcsFaultToleranceOptions={"backend": "rocksdb"}),
        env(headc, "RAY_gcs_storage", "rocksdb")),
     f"{HEAD_C}.env[0]", "Spec", ROCKS),
    (C.RAYCLUSTER_ROCKSDB_MANAGED_VOLUME,
     do(spec_set(gcsFaultToleranceOptions={"backend": "rocksdb"}),
        lambda o: headc(o).update(volumeMounts=[{"name": "data", "mountPath": "/data/gcs"}])),
     f"{HEAD_C}.volumeMounts[0]", "Spec", ROCKS),
    (C.RAYCLUSTER_ROCKSDB_MANAGED_VOLUME,
     do(spec_set(gcsFaultToleranceOptions={"backend": "rocksdb"}),
        lambda o: head(o)["template"]["spec"].update(
            volumes=[{"name": "gcs-storage", "emptyDir": {}}])),
     "spec.headGroupSpec.template.spec.volumes[0]", "Spec", ROCKS),
    (C.RAYCLUSTER_REDIS_STORAGE_SET,
     spec_set(gcsFaultToleranceOptions={"redisAddress": "r:6379", "storage": {"size": "1Gi"}}),
     "spec.gcsFaultToleranceOptions.storage", "Spec", None),
    (C.RAYCLUSTER_REDIS_USERNAME_OUTSIDE_OPTIONS,
     lambda o: head(o).update(rayStartParams={"redis-username": "u"}),
     "spec.headGroupSpec.rayStartParams[redis-username]", "Spec", None),
    (C.RAYCLUSTER_REDIS_USERNAME_OUTSIDE_OPTIONS, env(headc, "REDIS_USERNAME"),
     f"{HEAD_C}.env", "Spec", None),
    (C.RAYCLUSTER_SUSPEND_GROUP_GATE_DISABLED, lambda o: wg(o).update(suspend=True),
     f"{WG}.suspend", "Spec", NO_DELETION_POLICY),
    (C.RAYCLUSTER_AUTOSCALER_V2_ENV_WITHOUT_AUTOSCALING,
     env(headc, "RAY_enable_autoscaler_v2", "true"), f"{HEAD_C}.env[0]", "Spec", None),
    (C.RAYCLUSTER_SUSPEND_GROUP_WITH_AUTOSCALING,
     do(AUTOSCALE, lambda o: wg(o).update(suspend=True)), f"{WG}.suspend", "Spec", None),
    (C.RAYCLUSTER_AUTOSCALER_VERSION_AND_ENV,
     do(V2, env(headc, "RAY_enable_autoscaler_v2", "false")), f"{HEAD_C}.env[0]", "Spec", None),
    (C.RAYCLUSTER_V2_RESTART_POLICY,
     do(V2, lambda o: head(o)["template"]["spec"].update(restartPolicy="Always")),
     "spec.headGroupSpec.template.spec.restartPolicy", "Spec", None),
    (C.RAYCLUSTER_V2_RESTART_POLICY,
     do(V2, lambda o: wg(o)["template"]["spec"].update(restartPolicy="OnFailure")),
     f"{WG}.template.spec.restartPolicy", "Spec", None),
    (C.RAYCLUSTER_AUTOSCALER_NEGATIVE_IDLE_TIMEOUT,
     spec_set(autoscalerOptions={"idleTimeoutSeconds": -5}),
     "spec.autoscalerOptions.idleTimeoutSeconds", "Spec", None),
    (C.RAYCLUSTER_AUTOSCALER_MANAGED_ENV,
     spec_set(autoscalerOptions={"env": [{"name": "KUBERAY_GEN_AUTOSCALER_START_CMD"}]}),
     "spec.autoscalerOptions.env[0]", "Spec", None),
    (C.RAYCLUSTER_HISTORY_SERVER_GATE_DISABLED,
     spec_set(historyServerOptions={"collectorOptions": COLLECTOR}),
     "spec.historyServerOptions", "Spec", None),
    (C.RAYCLUSTER_HISTORY_SERVER_NO_COLLECTOR, spec_set(historyServerOptions={}),
     "spec.historyServerOptions.collectorOptions", "Spec", HISTORY),
    (C.RAYCLUSTER_COLLECTOR_NO_IMAGE,
     spec_set(historyServerOptions={"collectorOptions": {**COLLECTOR, "image": ""}}),
     "spec.historyServerOptions.collectorOptions.image", "Spec", HISTORY),
    (C.RAYCLUSTER_COLLECTOR_MANAGED_ENV,
     spec_set(historyServerOptions={"collectorOptions": {
         **COLLECTOR, "env": [*COLLECTOR["env"], {"name": "POD_IP", "value": "1"}]}}),
     "spec.historyServerOptions.collectorOptions.env", "Spec", HISTORY),
    (C.RAYCLUSTER_COLLECTOR_STORAGE_ENV,
     spec_set(historyServerOptions={"collectorOptions": {"image": "c:1"}}),
     "spec.historyServerOptions.collectorOptions.env", "Spec", HISTORY),
    (C.RAYCLUSTER_COLLECTOR_STORAGE_ENV,
     spec_set(historyServerOptions={"collectorOptions": {
         "image": "c:1", "env": [{"name": "STORAGE_BACKEND", "value": "azureblob"}]}}),
     "spec.historyServerOptions.collectorOptions.env", "Spec", HISTORY),
    (C.RAYCLUSTER_COLLECTOR_CONTAINER_CLASH,
     do(spec_set(historyServerOptions={"collectorOptions": COLLECTOR}),
        lambda o: wgc(o).update(name="ray-history-collector")),
     f"{WG}.template.spec.containers[0].name", "Spec", HISTORY),
    (C.RAYCLUSTER_AUTH_RAY_VERSION,
     spec_set(authOptions={"mode": "token"}, rayVersion="2.46.0"), "spec.rayVersion", "Spec", None),
    (C.RAYCLUSTER_AUTH_RAY_VERSION,
     spec_set(authOptions={"mode": "token"}, rayVersion=None), "spec.rayVersion", "Spec", None),
    (C.RAYCLUSTER_K8S_AUTH_RAY_VERSION,
     spec_set(authOptions={"mode": "token", "enableK8sTokenAuth": True}, rayVersion="2.53.0"),
     "spec.rayVersion", "Spec", None),
    (C.RAYCLUSTER_K8S_AUTH_WITH_SECRET,
     spec_set(authOptions={"mode": "token", "enableK8sTokenAuth": True, "secretName": "s"},
              rayVersion="2.55.0"),
     "spec.authOptions.secretName", "Spec", None),
    (C.RAYCLUSTER_K8S_AUTH_WITHOUT_TOKEN_MODE,
     spec_set(authOptions={"enableK8sTokenAuth": True}),
     "spec.authOptions.enableK8sTokenAuth", "Spec", None),
    (C.RAYCLUSTER_NETWORK_POLICY_GATE_DISABLED, spec_set(networkPolicy={}),
     "spec.networkPolicy", "Spec", None),
    (C.RAYCLUSTER_NETWORK_POLICY_RULES_UNUSED,
     spec_set(networkPolicy={"mode": "DenyAllEgress", "head": {"ingressRules": [{}]}}),
     "spec.networkPolicy.head.ingressRules", "Spec", NETPOL),
    (C.RAYCLUSTER_NETWORK_POLICY_RULES_UNUSED,
     spec_set(networkPolicy={"mode": "DenyAllIngress", "workerGroups": [
         {"groupName": "workers", "egressRules": [{}]}]}),
     "spec.networkPolicy.workerGroups[0].egressRules", "Spec", NETPOL),
    (C.RAYCLUSTER_NETWORK_POLICY_GROUP_NAME,
     do(spec_set(networkPolicy={}), lambda o: wg(o).update(groupName="Workers")),
     f"{WG}.groupName", "Spec", NETPOL),
    (C.RAYCLUSTER_NETWORK_POLICY_UNKNOWN_GROUP,
     spec_set(networkPolicy={"workerGroups": [{"groupName": "nope"}]}),
     "spec.networkPolicy.workerGroups[0].groupName", "Spec", NETPOL),
    (C.RAYCLUSTER_TLS_GATE_DISABLED, spec_set(tlsOptions={"enabled": True}),
     "spec.tlsOptions", "Spec", None),
    (C.RAYCLUSTER_TLS_MANAGED_ENV, do(spec_set(tlsOptions={"enabled": True}),
                                      env(wgc, "RAY_USE_TLS", "1")),
     f"{WG}.template.spec.containers[0].env[0]", "Spec", MTLS),
    (C.RAYCLUSTER_TLS_MANAGED_MOUNT,
     do(spec_set(tlsOptions={"enabled": True}),
        lambda o: headc(o).update(volumeMounts=[{"name": "certs", "mountPath": "/etc/ray/tls"}])),
     f"{HEAD_C}.volumeMounts[0]", "Spec", MTLS),
    (C.RAYCLUSTER_TLS_MANAGED_MOUNT,
     spec_set(tlsOptions={"enabled": True},
              autoscalerOptions={"volumeMounts": [{"name": "ray-tls", "mountPath": "/x"}]}),
     "spec.autoscalerOptions.volumeMounts[0]", "Spec", MTLS),
    (C.RAYCLUSTER_UPGRADE_STRATEGY_ON_CHILD,
     do(spec_set(upgradeStrategy={"type": "Recreate"}),
        lambda o: o["metadata"].update(labels={"ray.io/originated-from-crd": "RayJob"})),
     "spec.upgradeStrategy.type", "Spec", None),
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
    obj = api.base("RayCluster")
    mutate(obj)
    error = api.check_invalid(obj, code.value, path, scope, gates)
    assert error.object_ref == f"RayCluster default/{obj['metadata']['name']}"


def test_every_raycluster_code_has_a_case() -> None:
    covered = {case[0] for case in CASES}
    assert codes("RAYCLUSTER_") == covered


# fmt: off
GOOD = [
    pytest.param(lambda o: None, None, id="base"),
    pytest.param(do(AUTOSCALE, lambda o: wg(o).update(minReplicas=None, maxReplicas=None)),
                 None, id="autoscaling-without-bounds"),
    pytest.param(do(V2, lambda o: wg(o).update(idleTimeoutSeconds=60, priority=2),
                    spec_set(rayVersion="2.56.0")), None, id="v2-idle-timeout-and-priority"),
    pytest.param(spec_set(gcsFaultToleranceOptions={
        "backend": "rocksdb", "storage": {"claimName": "gcs", "subPath": "a"}}), ROCKS,
        id="rocksdb-with-gate"),
    pytest.param(spec_set(gcsFaultToleranceOptions=FT), None, id="redis-ft"),
    pytest.param(lambda o: wg(o).update(suspend=True), None, id="suspended-group-with-gate"),
    pytest.param(spec_set(historyServerOptions={"collectorOptions": COLLECTOR}), HISTORY,
                 id="history-server"),
    pytest.param(spec_set(authOptions={"mode": "token", "enableK8sTokenAuth": True},
                          rayVersion="2.55.1"), None, id="k8s-token-auth"),
    pytest.param(spec_set(networkPolicy={"mode": "DenyAllIngress", "head": {"ingressRules": [{}]},
                                         "workerGroups": [{"groupName": "workers"}]}), NETPOL,
                 id="network-policy"),
    pytest.param(do(spec_set(tlsOptions={"enabled": False}), env(headc, "RAY_USE_TLS")), MTLS,
                 id="tls-disabled-allows-env"),
    pytest.param(spec_set(upgradeStrategy={"type": "Recreate"}), None, id="recreate-standalone"),
    pytest.param(annotate("ray.io/ft-enabled", "true"), None, id="legacy-ft-annotation"),
]
# fmt: on


@pytest.mark.parametrize(("mutate", "gates"), GOOD)
def test_valid_clusters_pass(
    api: Any, mutate: Callable[[Obj], None], gates: FeatureGates | None
) -> None:
    obj = api.base("RayCluster")
    mutate(obj)
    api.check_valid(obj, gates)


def test_first_failure_wins(api: Any) -> None:
    obj = api.base("RayCluster")
    obj["metadata"]["name"] = "Bad_Name"
    wg(obj).update(minReplicas=5, maxReplicas=1)
    api.check_invalid(obj, "RAYCLUSTER_NAME_NOT_DNS1035", "metadata.name", "Metadata")
