"""The root stack template (``components.stack_template``) under mocks: what each config
registers, and every mistake reported with its config key before anything is registered."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pydantic.alias_generators import to_camel

from components.operator.args import RayOperatorArgs
from components.stack_template import ConfigError, OperatorConfig, deploy
from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE
from tests.components.workload_mocks import Run, annotations, run, secret_paths

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "examples" / "manifests"

HEAD = {
    "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}
}
CLUSTER_SPEC: dict[str, Any] = {
    "rayVersion": "2.52.0",
    "headGroupSpec": HEAD,
    "workerGroupSpecs": [
        {
            "groupName": "gpu",
            "replicas": 1,
            "minReplicas": 1,
            "maxReplicas": 2,
            "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray:2.52.0"}]}},
        }
    ],
}


def _with_config(
    config: dict[str, Any],
    secret: tuple[str, ...] = (),
    *,
    into: Run | None = None,
    image: str | None = NEVER_PULLED_IMAGE,
) -> Run:
    """Run the template with this stack config, ``operator.image`` set to ``image``
    unless the config sets it (None: left out); ``into`` keeps what was registered when
    it raises."""
    if image is not None:
        config = {**config, "operator": {"image": image, **config.get("operator", {})}}
    raw = {
        f"pulumi-ray:{key}": value if isinstance(value, str) else json.dumps(value)
        for key, value in config.items()
    }
    recorded = Run() if into is None else into

    def program() -> None:
        pulumi.runtime.set_all_config(raw, [f"pulumi-ray:{key}" for key in secret])
        deploy(pulumi.Config("pulumi-ray"))

    try:
        run(program, into=recorded)
    finally:
        pulumi.runtime.set_all_config({})
    return recorded


def test_the_image_alone_deploys_the_operator_alone() -> None:
    result = _with_config({})
    assert "ray:index:RayOperator" in result.types
    assert not [t for t in result.types if t.startswith("kubernetes:ray.io/v1:")]
    (container,) = result.one("kubernetes:apps/v1:Deployment").inputs["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["image"] == NEVER_PULLED_IMAGE


def test_an_empty_config_asks_for_the_image_and_says_how_to_get_one() -> None:
    recorded = Run()
    with pytest.raises(ConfigError) as refused:
        _with_config({}, into=recorded, image=None)

    message = str(refused.value)
    assert message.startswith("pulumi-ray:operator.image: is required"), message
    for step in (
        "make image",
        "python -m hack.image push <registry>/<repo>:<tag>",
        "pulumi config set --path operator.image <registry>/<repo>@sha256:<digest>",
        "docs/releasing.md",
        "[RAYOPERATOR_IMAGE_REQUIRED]",
    ):
        assert step in message, step
    assert recorded.registrations == []


def test_the_operators_pod_options_come_from_config_in_camel_case() -> None:
    result = _with_config(
        {
            "operator": {
                "installCrds": False,
                "tolerations": [
                    {"key": "system", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "x", "operator": "Exists", "tolerationSeconds": 30},
                ],
                "nodeSelector": {"pool": "system"},
                "serviceAccount": {"annotations": {"iam.gke.io/gcp-service-account": "a@b"}},
                "operatorConfig": {"defaultPodLabels": {"team": "ml"}},
                "podSecurityContext": {"fsGroup": 65532},
            }
        }
    )
    pod = result.one("kubernetes:apps/v1:Deployment").inputs["spec"]["template"]["spec"]
    assert pod["tolerations"][1] == {"key": "x", "operator": "Exists", "tolerationSeconds": 30}
    assert pod["nodeSelector"] == {"pool": "system"}
    assert pod["securityContext"]["fsGroup"] == 65532
    assert pod["securityContext"]["runAsNonRoot"] is True
    account = result.one("kubernetes:core/v1:ServiceAccount").inputs
    assert account["metadata"]["annotations"] == {"iam.gke.io/gcp-service-account": "a@b"}
    config = result.one("kubernetes:core/v1:ConfigMap").inputs["data"]["config.yaml"]
    assert yaml.safe_load(config)["defaultPodLabels"] == {"team": "ml"}


def test_workloads_are_created_per_namespace_after_the_operator() -> None:
    result = _with_config(
        {
            # The CRDs are megabytes through the mocks (2 s) and nothing here reads them.
            "operator": {"namespace": "ray-ops", "replicas": 2, "installCrds": False},
            "workloads": {
                "ml": {
                    "createNamespace": True,
                    "rayClusters": [{"name": "gpu", "spec": CLUSTER_SPEC}],
                }
            },
        }
    )
    deployment = result.one("kubernetes:apps/v1:Deployment").inputs
    assert deployment["metadata"]["namespace"] == "ray-ops"
    assert deployment["spec"]["replicas"] == 2
    cluster = result.one("kubernetes:ray.io/v1:RayCluster")
    assert cluster.inputs["metadata"]["name"] == "gpu"
    assert cluster.inputs["metadata"]["namespace"] == "ml"
    assert annotations(cluster)["pulumi.com/waitFor"] == "jsonpath={.status.state}=ready"
    component = result.one("ray:index:RayCluster")
    assert component.name == "raycluster-ml-gpu"
    # Destroy deletes the cluster while the operator still runs (and honours finalizers).
    # (the engine is given the component's children, the Deployment among them)
    assert any("RayOperator$kubernetes:apps/v1:Deployment::" in d for d in cluster.dependencies)
    namespaces = {r.name: r for r in result.of_type("kubernetes:core/v1:Namespace")}
    assert namespaces["namespace-ml"].inputs["metadata"]["name"] == "ml"
    assert namespaces["namespace-ml"].urn in cluster.dependencies


def test_the_operator_can_be_left_out() -> None:
    result = _with_config(
        {
            "operator": {"enabled": False},
            "workloads": {
                "ml": {"rayClusters": [{"name": "c", "spec": CLUSTER_SPEC, "waitForReady": False}]}
            },
        }
    )
    assert "ray:index:RayOperator" not in result.types
    assert (
        annotations(result.one("kubernetes:ray.io/v1:RayCluster"))["pulumi.com/skipAwait"] == "true"
    )


def test_manifests_go_through_the_components() -> None:
    result = _with_config(
        {
            "operator": {"enabled": False},
            "manifests": [str(MANIFESTS / "raycluster-gpu.yaml")],
            "namespace": "team",
        }
    )
    component = result.one("ray:index:RayCluster")
    assert component.name == "raycluster-team-raycluster-gpu"
    assert result.one("kubernetes:ray.io/v1:RayCluster").inputs["metadata"]["namespace"] == "team"


@pytest.mark.parametrize(
    ("config", "key"),
    [
        (
            {
                "workloads": {
                    "ml": {
                        "rayClusters": [
                            {
                                "name": "c",
                                "spec": {
                                    **CLUSTER_SPEC,
                                    "workerGroupSpecs": [
                                        {**CLUSTER_SPEC["workerGroupSpecs"][0], "minReplicas": 5}
                                    ],
                                },
                            }
                        ]
                    }
                }
            },
            "RayCluster ml/c: spec.workerGroupSpecs[0].minReplicas",
        ),
        (
            {"workloads": {"ml": {"rayClusters": [{"nmae": "c", "spec": CLUSTER_SPEC}]}}},
            "pulumi-ray:workloads.ml.rayClusters[0].nmae",
        ),
        ({"operator": {"replicas": 0}}, "pulumi-ray:operator.replicas"),
        ({"operator": {"imagePullPolicy": "Sometimes"}}, "pulumi-ray:operator.imagePullPolicy"),
        ({"operator": {"namespace": "Not_A_Label"}}, "pulumi-ray:operator.namespace"),
        ({"operator": {"image": "HTTP://x/y"}}, "pulumi-ray:operator.image"),
        (
            {"operator": {"operatorConfig": {"defaultPodLabel": {}}}},
            "pulumi-ray:operator.operatorConfig.defaultPodLabel",
        ),
        (
            {"operator": {"serviceAccount": {"create": False}}},
            "pulumi-ray:operator.serviceAccount.name",
        ),
        ({"manifests": ["/nonexistent.yaml"]}, "pulumi-ray:manifests[0]"),
    ],
)
def test_a_mistake_names_its_config_key_and_registers_nothing(
    config: dict[str, Any], key: str
) -> None:
    recorded = Run()
    with pytest.raises(ConfigError) as refused:
        _with_config(config, into=recorded)
    assert str(refused.value).startswith(key + ":"), str(refused.value)
    assert "Traceback" not in str(refused.value) and "errors.pydantic.dev" not in str(refused.value)
    assert recorded.registrations == []


def test_a_misspelt_key_gets_a_suggestion() -> None:
    with pytest.raises(ConfigError, match="did you mean 'waitForReady'"):
        _with_config(
            {
                "workloads": {
                    "ml": {"rayClusters": [{"name": "c", "spec": CLUSTER_SPEC, "waitForRedy": 1}]}
                }
            }
        )


def test_a_secret_workloads_key_keeps_the_spec_secret() -> None:
    result = _with_config(
        {
            "operator": {"enabled": False},
            "workloads": {"ml": {"rayClusters": [{"name": "c", "spec": CLUSTER_SPEC}]}},
        },
        secret=("workloads",),
    )
    cluster = result.one("kubernetes:ray.io/v1:RayCluster")
    # (the annotations derived from the spec, e.g. waitFor, inherit its secretness)
    assert "spec" in list(secret_paths(cluster.raw))


def test_operator_config_knows_every_operator_argument() -> None:
    args = {to_camel(f.name) for f in dataclasses.fields(RayOperatorArgs)} - {"provider"}
    config = {to_camel(name) for name in OperatorConfig.model_fields} - {"enabled"}
    assert config == args


def test_the_project_file_declares_every_key() -> None:
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    from components.stack_template import StackConfig

    assert set(project["config"]) == {to_camel(name) for name in StackConfig.model_fields}


def test_every_kind_is_deleted_before_the_operator() -> None:
    """All four kinds in one stack: each custom resource depends on the operator's
    Deployment, so `pulumi destroy` deletes them while the operator runs."""
    result = _with_config(
        {
            "operator": {
                "featureGates": {"RayCronJob": True, "RayServiceIncrementalUpgrade": True},
                "installCrds": False,  # megabytes through the mocks; not what this is about
            },
            "manifests": [
                str(MANIFESTS / name)
                for name in (
                    "raycronjob.yaml",
                    "rayservice-incremental.yaml",
                    "rayjob.yaml",
                    "raycluster-minimal.yaml",
                )
            ],
        }
    )
    kinds = ("RayCluster", "RayJob", "RayService", "RayCronJob")
    for kind in kinds:
        cr = result.one(f"kubernetes:ray.io/v1:{kind}")
        assert any("RayOperator$kubernetes:apps/v1:Deployment::" in d for d in cr.dependencies), (
            kind
        )


def test_a_queue_name_in_config_is_kueues_label() -> None:
    entry = {"name": "c", "spec": CLUSTER_SPEC, "queueName": "ml-queue"}
    result = _with_config({"workloads": {"ml": {"rayClusters": [entry]}}})
    cluster = result.one("kubernetes:ray.io/v1:RayCluster")
    assert cluster.inputs["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "ml-queue"}
    with pytest.raises(ConfigError) as refused:
        _with_config({"workloads": {"ml": {"rayClusters": [{**entry, "queueName": "ml queue"}]}}})
    assert "(pulumi-ray:workloads.ml.rayClusters[0].queueName)" in str(refused.value)

    cron = {"name": "n", "spec": {"schedule": "0 2 * * *"}, "queueName": "ml-queue"}
    with pytest.raises(ConfigError) as refused:
        _with_config({"workloads": {"ml": {"rayCronJobs": [cron]}}})
    assert str(refused.value).startswith("pulumi-ray:workloads.ml.rayCronJobs[0].queueName:")
