"""RayOperator's options for a platform team under Pulumi mocks: the required image, the
Helm chart's pod and ServiceAccount options, the ServiceMonitor's, and ``operator_config``
(KubeRay's ``--config`` file) read back through the operator's own parser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml

from components import RayOperator, RayOperatorArgs
from components._inputs import RayInputError
from components.operator import OperatorServiceAccount
from operator_runtime.cli import build_parser
from operator_runtime.runtime.commandline import resolve_configuration
from tests.components.test_operator import (
    CLUSTER_ROLE_BINDING,
    DEPLOYMENT,
    ROLE_BINDING,
    SERVICE,
    SERVICE_ACCOUNT,
    SERVICE_MONITOR,
    children,
    container,
    deploy,
    operator_args,
)
from tests.components.workload_mocks import Run, run

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DIGEST = "sha256:" + "ab" * 32


def pod(result: Run) -> dict[str, Any]:
    return dict(result.one(DEPLOYMENT).inputs["spec"]["template"])


def refused(args: RayOperatorArgs) -> RayInputError:
    """The error ``RayOperator`` raises for ``args``, after checking nothing was registered."""
    registered = Run()
    with pytest.raises(RayInputError) as raised:
        run(lambda: RayOperator("ray-operator", args), into=registered)
    assert registered.registrations == []
    assert isinstance(raised.value, pulumi.RunError)  # printed without a traceback
    return raised.value


# --- the image --------------------------------------------------------------------------


@pytest.mark.parametrize("args", [None, RayOperatorArgs(replicas=2)])
def test_without_an_image_preview_stops_and_says_how_to_get_one(
    args: RayOperatorArgs | None,
) -> None:
    registered = Run()
    with pytest.raises(RayInputError) as raised:
        run(lambda: RayOperator("ray-operator", args), into=registered)

    error = raised.value
    assert registered.registrations == []
    assert (error.path, error.code) == ("image", "RAYOPERATOR_IMAGE_REQUIRED")
    message = str(error)
    assert message.startswith("RayOperator ray-operator: image: is required"), message
    for step in (
        "make image",
        "python -m hack.image push <registry>/<repo>:<tag>",
        "digest",
        'image="<registry>/<repo>@sha256:<digest>"',
        "docs/releasing.md",
    ):
        assert step in message, step


@pytest.mark.parametrize(
    "image",
    [
        "https://registry.example/ray-operator:1",
        "registry.example/Ray-Operator:1",
        "registry.example/ray-operator@sha256:abc",
        "registry.example/ray-operator:1 ",
        "registry.example/ray operator",
        "registry.example/ray-operator:",
        "",
    ],
)
def test_a_malformed_image_reference_is_refused(image: str) -> None:
    error = refused(operator_args(image=image, install_crds=False))

    assert (error.path, error.code) == ("image", "RAYOPERATOR_IMAGE")
    assert "is not an image reference" in str(error)


@pytest.mark.parametrize(
    "image",
    [
        f"registry.example.com/platform/ray-operator@{DIGEST}",
        f"registry.example.com:5000/ray-operator:0.1.0@{DIGEST}",
        "localhost:5000/ray-operator:0.1.0",
        "ray-operator",
        "[::1]:5000/ray-operator:dev",
    ],
)
def test_well_formed_references_are_deployed_as_given(image: str) -> None:
    result = deploy(operator_args(image=image, install_crds=False))
    assert container(result)["image"] == image
    assert result.value["image"] == image


def test_an_image_from_an_output_is_deployed_once_it_resolves() -> None:
    image = f"registry.example/ray-operator@{DIGEST}"
    result = deploy(operator_args(image=pulumi.Output.from_input(image), install_crds=False))
    assert container(result)["image"] == image


# --- nothing changes without the options -------------------------------------------------


def test_without_options_the_objects_carry_no_extra_fields() -> None:
    result = deploy(operator_args(install_crds=False))

    for registration in children(result):
        assert "annotations" not in registration.inputs["metadata"], registration.type
    template = pod(result)
    assert "annotations" not in template["metadata"]
    assert template["metadata"]["labels"] == result.one(DEPLOYMENT).inputs["metadata"]["labels"]
    spec = template["spec"]
    for absent in (
        "nodeSelector",
        "tolerations",
        "affinity",
        "priorityClassName",
        "imagePullSecrets",
    ):
        assert absent not in spec, absent
    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert [v["name"] for v in spec["volumes"]] == ["tmp"]
    assert result.of_type(CONFIG_MAP) == []
    assert not any(arg.startswith("--config") for arg in container(result)["args"])


# --- the pod -----------------------------------------------------------------------------


def test_scheduling_options_reach_the_pod() -> None:
    affinity = k8s.core.v1.AffinityArgs(
        node_affinity=k8s.core.v1.NodeAffinityArgs(
            required_during_scheduling_ignored_during_execution=k8s.core.v1.NodeSelectorArgs(
                node_selector_terms=[
                    k8s.core.v1.NodeSelectorTermArgs(
                        match_expressions=[
                            k8s.core.v1.NodeSelectorRequirementArgs(
                                key="pool", operator="In", values=["system"]
                            )
                        ]
                    )
                ]
            )
        )
    )
    result = deploy(
        operator_args(
            node_selector={"kubernetes.io/os": "linux"},
            tolerations=[
                k8s.core.v1.TolerationArgs(key="system", operator="Exists", effect="NoSchedule"),
                {"key": "dedicated", "operator": "Equal", "value": "ray", "effect": "NoExecute"},
            ],
            affinity=affinity,
            priority_class_name="system-cluster-critical",
            image_pull_secrets=["registry-credentials"],
            install_crds=False,
        )
    )

    spec = pod(result)["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert spec["tolerations"] == [
        {"key": "system", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "ray", "effect": "NoExecute"},
    ]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["system"]
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert spec["imagePullSecrets"] == [{"name": "registry-credentials"}]


def test_labels_go_on_every_object_and_annotations_where_they_belong() -> None:
    result = deploy(
        operator_args(
            labels={"team": "platform"},
            annotations={"example.com/owner": "platform"},
            pod_labels={"sidecar.istio.io/inject": "false"},
            pod_annotations={"prometheus.io/scrape": "false"},
            install_crds=False,
        )
    )

    for registration in children(result):
        metadata = registration.inputs["metadata"]
        assert metadata["labels"]["team"] == "platform", registration.type
        assert metadata["annotations"] == {"example.com/owner": "platform"}, registration.type
        assert "sidecar.istio.io/inject" not in metadata["labels"], registration.type
    template = pod(result)["metadata"]
    assert template["labels"]["team"] == "platform"
    assert template["labels"]["sidecar.istio.io/inject"] == "false"
    assert template["annotations"] == {"prometheus.io/scrape": "false"}
    # The selectors still match the pods, and only ours are in them.
    selector = result.one(DEPLOYMENT).inputs["spec"]["selector"]["matchLabels"]
    assert selector.items() <= template["labels"].items()
    assert "team" not in selector and "team" not in result.one(SERVICE).inputs["spec"]["selector"]


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"labels": {"app.kubernetes.io/name": "x"}}, "labels.app.kubernetes.io/name"),
        (
            {"pod_labels": {"app.kubernetes.io/instance": "x"}},
            "pod_labels.app.kubernetes.io/instance",
        ),
        ({"labels": {"team": "a b"}}, "labels.team"),
        ({"annotations": {"bad key!": "x"}}, "annotations.bad key!"),
        ({"pod_security_context": {"fsgroup": 1}}, "pod_security_context.fsgroup"),
        ({"image_pull_secrets": "registry-credentials"}, "image_pull_secrets"),
        ({"image_pull_secrets": ["Registry_Credentials"]}, "image_pull_secrets"),
        ({"tolerations": {"key": "system", "operator": "Exists"}}, "tolerations"),
        ({"priority_class_name": "High Priority"}, "priority_class_name"),
        ({"service_monitor_interval": "30 seconds"}, "service_monitor_interval"),
        ({"service_monitor_namespace": "Monitoring"}, "service_monitor_namespace"),
        ({"service_account": OperatorServiceAccount(create=False)}, "service_account.name"),
        (
            {
                "service_account": OperatorServiceAccount(
                    create=False, name="ops", annotations={"eks.amazonaws.com/role-arn": "arn"}
                )
            },
            "service_account.annotations",
        ),
        ({"service_account": OperatorServiceAccount(name="Ops")}, "service_account.name"),
    ],
)
def test_a_bad_option_is_refused_by_name(fields: dict[str, Any], path: str) -> None:
    error = refused(operator_args(**fields))

    assert error.path == path
    assert str(error).startswith(f"RayOperator ray-operator: {path}: ")
    assert error.code.startswith("RAYOPERATOR_")


def test_pod_security_context_is_merged_over_ours() -> None:
    merged = pod(deploy(operator_args(pod_security_context={"fsGroup": 65532}, install_crds=False)))
    assert merged["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
        "fsGroup": 65532,
    }
    # Only an explicit value turns runAsNonRoot off (a Windows node pool, say).
    explicit = pod(
        deploy(operator_args(pod_security_context={"runAsNonRoot": False}, install_crds=False))
    )
    assert explicit["spec"]["securityContext"]["runAsNonRoot"] is False
    assert explicit["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


# --- the ServiceAccount ------------------------------------------------------------------


def test_a_created_service_account_carries_its_annotations_and_name() -> None:
    irsa = {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/ray-operator"}
    result = deploy(
        operator_args(
            service_account=OperatorServiceAccount(name="ray-ops", annotations=irsa),
            install_crds=False,
        )
    )

    account = result.one(SERVICE_ACCOUNT).inputs["metadata"]
    assert (account["name"], account["annotations"]) == ("ray-ops", irsa)
    assert pod(result)["spec"]["serviceAccountName"] == "ray-ops"
    assert result.value["service_account_name"] == "ray-ops"


def test_an_existing_service_account_is_used_not_created() -> None:
    result = deploy(
        operator_args(
            service_account=OperatorServiceAccount(create=False, name="platform-ray"),
            install_crds=False,
        )
    )

    assert result.of_type(SERVICE_ACCOUNT) == []
    assert pod(result)["spec"]["serviceAccountName"] == "platform-ray"
    assert result.value["service_account_name"] == "platform-ray"
    for binding in [*result.of_type(CLUSTER_ROLE_BINDING), *result.of_type(ROLE_BINDING)]:
        assert binding.inputs["subjects"] == [
            {"kind": "ServiceAccount", "name": "platform-ray", "namespace": "ray-system"}
        ]


# --- the ServiceMonitor ------------------------------------------------------------------


def test_service_monitor_interval_and_namespace() -> None:
    default = deploy(operator_args(service_monitor=True, install_crds=False))
    monitor = default.one(SERVICE_MONITOR).inputs
    assert monitor["metadata"]["namespace"] == "ray-system"
    assert monitor["spec"]["endpoints"][0]["interval"] == "30s"

    result = deploy(
        operator_args(
            service_monitor=True,
            service_monitor_interval="1m30s",
            service_monitor_namespace="monitoring",
            install_crds=False,
        )
    )
    monitor = result.one(SERVICE_MONITOR).inputs
    assert monitor["metadata"]["namespace"] == "monitoring"
    assert monitor["spec"]["endpoints"][0]["interval"] == "1m30s"
    # It still selects the metrics Service in the operator's namespace.
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["ray-system"]}


# --- operator_config: KubeRay's --config file ---------------------------------------------

SIDECAR = {"name": "log-shipper", "image": "registry.example/shipper:1"}
CONFIG: dict[str, Any] = {
    "defaultContainerEnvs": [{"name": "RAY_LOG_TO_STDERR", "value": "1"}],
    "defaultPodLabels": {"team": "ml"},
    "headSidecarContainers": [SIDECAR],
}


def config_file(result: Run) -> str:
    (config_map,) = result.of_type(CONFIG_MAP)
    text = config_map.inputs["data"]["config.yaml"]
    assert isinstance(text, str)
    return text


def test_the_config_file_is_mounted_and_passed_as_config() -> None:
    result = deploy(operator_args(operator_config=CONFIG, install_crds=False))

    config_map = result.one(CONFIG_MAP).inputs
    assert config_map["immutable"] is True
    name = config_map["metadata"]["name"]
    assert name.startswith("ray-operator-config-")
    spec = pod(result)["spec"]
    assert {"name": "operator-config", "configMap": {"name": name}} in spec["volumes"]
    main = container(result)
    assert {"name": "operator-config", "mountPath": "/etc/kuberay", "readOnly": True} in main[
        "volumeMounts"
    ]
    assert build_parser().parse_args(main["args"]).config == "/etc/kuberay/config.yaml"
    # The Deployment waits for its file.
    assert result.one(CONFIG_MAP).urn in result.one(DEPLOYMENT).dependencies
    document = yaml.safe_load(config_file(result))
    assert (document["apiVersion"], document["kind"]) == ("config.ray.io/v1alpha1", "Configuration")
    assert {key: document[key] for key in CONFIG} == CONFIG


@pytest.mark.parametrize("leader_election", [True, False])
def test_the_components_own_settings_still_take_effect_with_a_config_file(
    tmp_path: Path, leader_election: bool
) -> None:
    """With ``--config`` the operator ignores the flags the file can hold; what it runs
    with, read by its own code from the rendered file and args, is what the args say."""
    fields: dict[str, Any] = {
        "watch_namespaces": ["team-a", "team-b"],
        "qps": 50,
        "burst": 80,
        "reconcile_concurrency": 4,
        "use_kubernetes_proxy": True,
        "leader_election": leader_election,
        "log_format": "console",
        "install_crds": False,
    }
    with_file = deploy(operator_args(operator_config=CONFIG, **fields))
    with_flags = deploy(operator_args(**fields))
    path = tmp_path / "config.yaml"
    path.write_text(config_file(with_file))

    parsed = build_parser().parse_args(container(with_file)["args"])
    assert parsed.config == "/etc/kuberay/config.yaml"
    parsed.config = str(path)
    from_file = resolve_configuration(parsed)
    from_flags = resolve_configuration(build_parser().parse_args(container(with_flags)["args"]))

    settings = (
        "metrics_addr",
        "probe_addr",
        "enable_metrics",
        "enable_leader_election",
        "watch_namespace",
        "use_kubernetes_proxy",
        "qps",
        "burst",
        "reconcile_concurrency",
    )
    for setting in settings:
        assert getattr(from_file, setting) == getattr(from_flags, setting), setting
    assert from_file.watch_namespace == "team-a,team-b"
    assert from_file.enable_leader_election is leader_election
    assert from_file.default_pod_labels == (("team", "ml"),)
    assert from_file.head_sidecar_containers == (SIDECAR,)
    # What the file cannot hold stays a flag.
    assert parsed.log_stdout_encoder == "console"
    assert parsed.shutdown_timeout == 30
    given = "--leader-election-id=ray-operator-leader" in container(with_file)["args"]
    assert given is leader_election


def test_a_new_file_is_a_new_config_map_so_the_pods_roll() -> None:
    first = deploy(operator_args(operator_config=CONFIG, install_crds=False))
    again = deploy(operator_args(operator_config=dict(CONFIG), install_crds=False))
    changed = deploy(
        operator_args(operator_config={**CONFIG, "defaultPodLabels": {}}, install_crds=False)
    )

    def name(result: Run) -> str:
        return str(result.one(CONFIG_MAP).inputs["metadata"]["name"])

    assert name(first) == name(again) != name(changed)
    assert (
        pod(first)["spec"]["volumes"]
        == pod(again)["spec"]["volumes"]
        != pod(changed)["spec"]["volumes"]
    )


@pytest.mark.parametrize(
    ("config", "path", "says"),
    [
        ({"defaultPodLabel": {"a": "b"}}, "operator_config.defaultPodLabel", "'defaultPodLabels'"),
        (
            {"DefaultPodLabels": {"a": "b"}},
            "operator_config.DefaultPodLabels",
            "'defaultPodLabels'",
        ),
        ({"watchNamespace": "team-a"}, "operator_config.watchNamespace", "watch_namespaces"),
        ({"metricsAddr": ":9090"}, "operator_config.metricsAddr", "leave it out"),
        ({"qps": 5}, "operator_config.qps", "set qps"),
        ({"logStdoutEncoder": "console"}, "operator_config.logStdoutEncoder", "log_format"),
        ({"defaultPodLabels": "team=ml"}, "operator_config.defaultPodLabels", "dictionary"),
        ({"headSidecarContainers": {"name": "x"}}, "operator_config.headSidecarContainers", "list"),
        ({"batchScheduler": "slurm"}, "operator_config.batchScheduler", "not supported"),
        (
            {"batchScheduler": "volcano", "enableBatchScheduler": True},
            "operator_config.batchScheduler",
            "use --batch-scheduler only",
        ),
        ({"kind": "OperatorConfiguration"}, "operator_config.kind", "'Configuration'"),
    ],
)
def test_a_config_file_mistake_fails_preview_naming_the_field(
    config: dict[str, Any], path: str, says: str
) -> None:
    error = refused(operator_args(operator_config=config))

    assert error.path == path, str(error)
    assert error.code == "RAYOPERATOR_OPERATOR_CONFIG"
    assert says in str(error), str(error)


def test_a_config_file_with_an_output_is_refused() -> None:
    config = {"defaultPodLabels": {"team": pulumi.Output.from_input("ml")}}
    error = refused(operator_args(operator_config=config))
    assert error.path == "operator_config" and "known" in str(error)


def test_the_redis_cleanup_job_resources_pass_through_to_the_file() -> None:
    resources = {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}}
    result = deploy(
        operator_args(operator_config={"redisCleanupJobResources": resources}, install_crds=False)
    )
    assert yaml.safe_load(config_file(result))["redisCleanupJobResources"] == resources
