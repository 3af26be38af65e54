"""RayCluster under Pulumi mocks: what it registers, how it validates, replicas ownership."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components import GatewayEdgeArgs, IngressEdgeArgs, RayCluster
from components._inputs import RayInputError
from operator_runtime import api
from tests.components.workload_mocks import (
    NOT_RESOLVED,
    Run,
    annotations,
    cluster_spec,
    container,
    run,
    secret_paths,
    unknown,
)

CR = "kubernetes:ray.io/v1:RayCluster"
COMPONENT = "ray:index:RayCluster"


def outputs(cluster: RayCluster) -> dict[str, Any]:
    return {
        "name": cluster.name,
        "namespace": cluster.namespace,
        "head_service_name": cluster.head_service_name,
        "dashboard_url": cluster.dashboard_url,
        "serve_url": cluster.serve_url,
        "status": cluster.status,
    }


def test_registers_the_component_and_one_custom_resource_under_it() -> None:
    result = run(lambda: outputs(RayCluster("demo", namespace="team-a", **cluster_spec())))

    assert result.types == [COMPONENT, CR]
    component, cr = result.registrations
    assert (component.name, cr.name) == ("demo", "demo")
    assert cr.parent == component.urn
    assert cr.inputs["apiVersion"] == "ray.io/v1"
    assert cr.inputs["kind"] == "RayCluster"
    assert cr.inputs["metadata"]["name"] == "demo"
    assert cr.inputs["metadata"]["namespace"] == "team-a"
    # Exactly what was given, in wire spelling: no model defaults are applied (and owned).
    assert cr.inputs["spec"] == {
        "rayVersion": "2.52.0",
        "headGroupSpec": {"template": {"spec": {"containers": [container()]}}},
        "workerGroupSpecs": [
            {
                "groupName": "gpu",
                "replicas": 2,
                "minReplicas": 1,
                "maxReplicas": 4,
                "template": {"spec": {"containers": [container("ray-worker")]}},
            }
        ],
    }
    assert result.value == {
        "name": "demo",
        "namespace": "team-a",
        "head_service_name": "demo-head-svc",
        "dashboard_url": "http://demo-head-svc.team-a.svc.cluster.local:8265",
        "serve_url": None,
        "status": {"state": "ready"},
    }


def test_model_snake_case_and_camel_case_arguments_apply_the_same_spec() -> None:
    snake = cluster_spec()
    camel = api.RayClusterSpec.model_validate(snake).model_dump(by_alias=True, exclude_unset=True)
    model = api.RayClusterSpec.model_validate(snake)
    specs = [
        run(lambda s=s: RayCluster("demo", spec=s)).one(CR).inputs["spec"]
        for s in (snake, camel, model)
    ]
    specs.append(run(lambda: RayCluster("demo", **snake)).one(CR).inputs["spec"])
    assert specs[0] == specs[1] == specs[2] == specs[3]
    assert "workerGroupSpecs" in specs[0]


def test_name_and_labels_are_passed_and_readiness_is_waited_for() -> None:
    result = run(
        lambda: RayCluster(
            "demo", name="prod-ray", labels={"team": "a"}, annotations={"x": "y"}, **cluster_spec()
        )
    )
    cr = result.one(CR)
    assert cr.inputs["metadata"]["name"] == "prod-ray"
    assert cr.inputs["metadata"]["labels"] == {"team": "a"}
    assert annotations(cr) == {
        "x": "y",
        "pulumi.com/waitFor": "jsonpath={.status.state}=ready",
        "pulumi.com/patchForce": "true",
    }


def test_wait_can_be_skipped_and_bounded() -> None:
    skipped = run(lambda: RayCluster("demo", wait_for_ready=False, **cluster_spec())).one(CR)
    assert annotations(skipped)["pulumi.com/skipAwait"] == "true"
    assert "pulumi.com/waitFor" not in annotations(skipped)

    bounded = run(lambda: RayCluster("demo", timeout="1h30m", **cluster_spec())).one(CR)
    timeouts = bounded.request.customTimeouts
    assert (timeouts.create, timeouts.update) == ("5400s", "5400s")


def test_a_suspended_cluster_is_waited_for_until_suspended() -> None:
    cr = run(lambda: RayCluster("demo", suspend=True, **cluster_spec())).one(CR)
    assert annotations(cr)["pulumi.com/waitFor"] == "jsonpath={.status.state}=suspended"
    flag = pulumi.Output.from_input(True)
    cr = run(lambda: RayCluster("demo", suspend=flag, **cluster_spec())).one(CR)
    assert annotations(cr)["pulumi.com/waitFor"] == "jsonpath={.status.state}=suspended"


def test_autoscaled_groups_leave_replicas_to_the_autoscaler() -> None:
    spec = cluster_spec(enable_in_tree_autoscaling=True)
    spec["worker_group_specs"][0]["scale_strategy"] = {"workers_to_delete": ["gpu-abcde"]}
    spec["worker_group_specs"].append(
        {**copy.deepcopy(spec["worker_group_specs"][0]), "group_name": "cpu", "replicas": 0}
    )
    cr = run(lambda: RayCluster("demo", **spec)).one(CR)

    groups = cr.inputs["spec"]["workerGroupSpecs"]
    assert [g["groupName"] for g in groups] == ["gpu", "cpu"]
    for group in groups:
        assert "replicas" not in group
        assert "scaleStrategy" not in group
        assert (group["minReplicas"], group["maxReplicas"]) == (1, 4)
    # Nothing to take back from the autoscaler, so no force.
    assert "pulumi.com/patchForce" not in annotations(cr)


def test_an_output_autoscaling_flag_and_group_are_stripped_once_resolved() -> None:
    def program() -> Any:
        spec = cluster_spec(enable_in_tree_autoscaling=pulumi.Output.from_input(True))
        group = spec["worker_group_specs"][0]
        group["scale_strategy"] = {"workers_to_delete": ["gpu-abcde"]}
        spec["worker_group_specs"] = [pulumi.Output.from_input(group)]
        return RayCluster("demo", **spec)

    cr = run(program).one(CR)
    group = cr.inputs["spec"]["workerGroupSpecs"][0]
    assert group["groupName"] == "gpu"
    assert "replicas" not in group
    assert "scaleStrategy" not in group
    assert "pulumi.com/patchForce" not in annotations(cr)


def test_groups_without_autoscaling_are_pulumis_and_forced_back() -> None:
    spec = cluster_spec()
    spec["worker_group_specs"][0]["scale_strategy"] = {"workers_to_delete": ["gpu-abcde"]}
    cr = run(lambda: RayCluster("demo", **spec)).one(CR)
    group = cr.inputs["spec"]["workerGroupSpecs"][0]
    assert group["replicas"] == 2
    assert group["scaleStrategy"] == {"workersToDelete": ["gpu-abcde"]}
    assert annotations(cr)["pulumi.com/patchForce"] == "true"


# --- validation at program time ----------------------------------------------------------


def test_a_broken_rule_fails_before_anything_is_registered() -> None:
    spec = cluster_spec()
    spec["worker_group_specs"][0]["min_replicas"] = 5
    seen = Run()
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayCluster("demo", namespace="team-a", **spec), into=seen)
    assert seen.registrations == []
    error = caught.value
    assert error.path == "spec.workerGroupSpecs[0].minReplicas"
    assert str(error).startswith("RayCluster team-a/demo: spec.workerGroupSpecs[0].minReplicas: ")
    assert "; set minReplicas <= maxReplicas [RAYCLUSTER_MIN_GT_MAX]" in str(error)
    # The engine prints a RunError's message alone, without a traceback.
    assert isinstance(error, pulumi.RunError)
    assert isinstance(error, pulumi.InputPropertyError)
    assert error.property_path == error.path


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda s: s.update(worker_group_spec=s.pop("worker_group_specs")),
            "spec.worker_group_spec",
            "did you mean workerGroupSpecs?",
        ),
        (
            lambda s: s["worker_group_specs"][0].update(max_replicas="many"),
            "spec.workerGroupSpecs[0].maxReplicas",
            "valid integer",
        ),
        (
            lambda s: s["worker_group_specs"][0]["template"]["spec"].update(
                containers=[{"name": "w", "resources": {"limits": {"cpu": object()}}}]
            ),
            "spec.workerGroupSpecs[0].template.spec.containers[0].resources.limits.cpu",
            "valid string",
        ),
        (lambda s: s.pop("head_group_spec"), "spec.headGroupSpec", "missing; set it"),
    ],
)
def test_parse_errors_name_the_wire_field_path(change: Any, path: str, words: str) -> None:
    spec = cluster_spec()
    change(spec)
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayCluster("demo", namespace="team-a", **spec))
    assert caught.value.path == path
    assert str(caught.value).startswith(f"RayCluster team-a/demo: {path}: ")
    assert words in str(caught.value)
    assert "pydantic" not in str(caught.value)


@pytest.mark.parametrize(
    ("field", "path", "words"),
    [
        ({"ports": [{"container_port": 8265}]},
         "spec.headGroupSpec.template.spec.containers[0].ports[0].container_port",
         "write containerPort: Kubernetes objects inside the spec keep"),
        ({"imagePullPolicyy": "Always"},
         "spec.headGroupSpec.template.spec.containers[0].imagePullPolicyy",
         "did you mean imagePullPolicy?"),
    ],
)  # fmt: skip
def test_unknown_fields_in_embedded_kubernetes_objects_are_refused(
    field: dict[str, Any], path: str, words: str
) -> None:
    spec = cluster_spec()
    spec["head_group_spec"]["template"]["spec"]["containers"][0].update(field)
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayCluster("demo", **spec))
    assert caught.value.path == path
    assert words in str(caught.value)
    assert "[FIELD_UNKNOWN]" in str(caught.value)


def test_map_keys_in_embedded_objects_are_not_fields() -> None:
    spec = cluster_spec()
    pod = spec["head_group_spec"]["template"]
    pod["metadata"] = {"labels": {"team_name": "a"}, "annotations": {"some_key": "v"}}
    pod["spec"]["nodeSelector"] = {"pool_name": "gpu"}
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    cr = run(lambda: RayCluster("demo", **spec)).one(CR)
    assert cr.inputs["spec"]["headGroupSpec"]["template"]["spec"]["nodeSelector"] == {
        "pool_name": "gpu"
    }


def test_the_pulumi_name_must_make_a_valid_object_name() -> None:
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayCluster("Team_Cluster", **cluster_spec()))
    assert caught.value.path == "metadata.name"
    assert "RAYCLUSTER_NAME_NOT_DNS1035" in str(caught.value)


def test_spec_and_keyword_arguments_are_exclusive() -> None:
    with pytest.raises(RayInputError, match="given both"):
        run(lambda: RayCluster("demo", spec=cluster_spec(), ray_version="2.52.0"))


def test_a_bad_timeout_is_refused() -> None:
    with pytest.raises(RayInputError, match="timeout"):
        run(lambda: RayCluster("demo", timeout="ten minutes", **cluster_spec()))


# --- Outputs as arguments ----------------------------------------------------------------


def test_outputs_anywhere_are_applied_in_place() -> None:
    def program() -> Any:
        namespace = k8s.core.v1.Namespace("team-a", metadata={"name": "team-a"})
        tag = pulumi.Output.from_input("2.52.0")
        spec = cluster_spec()
        spec["head_group_spec"]["template"]["spec"]["containers"][0]["image"] = tag.apply(
            lambda t: f"rayproject/ray:{t}"
        )
        # A whole worker group, built with apply from another Output.
        group = spec["worker_group_specs"][0]
        spec["worker_group_specs"] = [tag.apply(lambda _: group)]
        cluster = RayCluster("demo", namespace=namespace.metadata.name, **spec)
        return outputs(cluster)

    result = run(program)
    cr = result.one(CR)
    assert cr.inputs["metadata"]["namespace"] == "team-a"
    assert (
        cr.inputs["spec"]
        == run(lambda: RayCluster("demo", **cluster_spec())).one(CR).inputs["spec"]
    )
    assert result.value["dashboard_url"] == "http://demo-head-svc.team-a.svc.cluster.local:8265"


def test_output_labels_and_annotations_merge_with_ours() -> None:
    def program() -> Any:
        return RayCluster(
            "demo",
            labels=pulumi.Output.from_input({"team": "a"}),
            annotations={"owner": pulumi.Output.from_input("ml-platform")},
            **cluster_spec(),
        )

    cr = run(program).one(CR)
    assert cr.inputs["metadata"]["labels"] == {"team": "a"}
    assert annotations(cr) == {
        "owner": "ml-platform",
        "pulumi.com/waitFor": "jsonpath={.status.state}=ready",
        "pulumi.com/patchForce": "true",
    }


def test_an_output_that_breaks_a_rule_fails_with_the_same_message_once_resolved() -> None:
    def program() -> Any:
        spec = cluster_spec()
        group = spec["worker_group_specs"][0]
        bad = pulumi.Output.from_input(7).apply(lambda n: {**group, "min_replicas": n})
        spec["worker_group_specs"] = [bad]
        return outputs(RayCluster("demo", namespace="team-a", **spec))

    seen = Run()
    with pytest.raises(RayInputError) as caught:
        run(program, into=seen)
    assert caught.value.path == "spec.workerGroupSpecs[0].minReplicas"
    assert str(caught.value).startswith(
        "RayCluster team-a/demo: spec.workerGroupSpecs[0].minReplicas: worker group gpu has"
    )
    assert "[RAYCLUSTER_MIN_GT_MAX]" in str(caught.value)
    # The component exists; its custom resource was never sent to the engine.
    assert seen.types == [COMPONENT]


def test_an_invalid_output_value_with_a_namespace_from_a_resource_names_the_object() -> None:
    def program() -> Any:
        namespace = k8s.core.v1.Namespace("team-b", metadata={"name": "team-b"})
        spec = cluster_spec()
        spec["worker_group_specs"][0]["max_replicas"] = pulumi.Output.from_input(-1)
        return RayCluster("demo", namespace=namespace.metadata.name, **spec).name

    seen = Run()
    with pytest.raises(RayInputError) as caught:
        run(program, into=seen)
    assert str(caught.value).startswith("RayCluster team-b/demo: spec.workerGroupSpecs[0]")
    assert CR not in seen.types


def test_unknown_values_in_a_preview_never_fail_it() -> None:
    def program() -> Any:
        spec = cluster_spec()
        spec["worker_group_specs"][0]["min_replicas"] = unknown()
        return outputs(RayCluster("demo", namespace=unknown(), **spec))

    result = run(program, preview=True)
    cr = result.one(CR)
    assert cr.parent == result.one(COMPONENT).urn
    assert result.value is NOT_RESOLVED


# --- secrets -----------------------------------------------------------------------------


def test_a_secret_stays_a_nested_secret() -> None:
    def program() -> Any:
        spec = cluster_spec()
        env = [{"name": "REDIS_PASSWORD", "value": pulumi.Output.secret("hunter2")}]
        spec["head_group_spec"]["template"]["spec"]["containers"][0]["env"] = env
        return outputs(RayCluster("demo", namespace="team-a", **spec))

    result = run(program)
    cr = result.one(CR)
    assert list(secret_paths(cr.raw)) == [
        "spec.headGroupSpec.template.spec.containers[0].env[0].value"
    ]
    assert cr.inputs["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "REDIS_PASSWORD", "value": "hunter2"}
    ]
    assert result.value["dashboard_url"].startswith("http://demo-head-svc.team-a")


def test_outputs_derived_from_a_secret_spec_are_not_secret() -> None:
    secrets: dict[str, bool] = {}

    def program() -> Any:
        spec = cluster_spec()
        spec["head_group_spec"]["template"]["spec"]["containers"][0]["image"] = (
            pulumi.Output.secret("private/ray:1")
        )
        cluster = RayCluster("demo", **spec)

        async def record() -> None:
            secrets["name"] = await cluster.name.is_secret()
            secrets["url"] = await cluster.dashboard_url.is_secret()

        return pulumi.Output.from_input(record())

    run(program)
    assert secrets == {"name": False, "url": False}


# --- options, operator, edges ------------------------------------------------------------


def test_operator_provider_and_options_pass_through() -> None:
    def program() -> Any:
        operator = pulumi.ComponentResource("test:index:Operator", "ray-operator")
        k8s.core.v1.Namespace(
            "ray-system", opts=pulumi.ResourceOptions(parent=operator)
        )  # the operator's child, so depending on it is visible
        provider = k8s.Provider("other-cluster")
        return RayCluster(
            "demo",
            opts=pulumi.ResourceOptions(
                depends_on=[operator],
                provider=provider,
                protect=True,
                aliases=[pulumi.Alias(name="old")],
            ),
            **cluster_spec(),
        )

    result = run(program)
    cr = result.one(CR)
    component = result.one(COMPONENT)
    assert result.one("kubernetes:core/v1:Namespace").urn in cr.dependencies
    assert cr.request.provider.startswith(result.one("pulumi:providers:kubernetes").urn)
    assert cr.request.protect  # inherited from the component
    assert component.request.aliases


def test_what_the_component_depends_on_the_custom_resource_waits_for() -> None:
    def program() -> Any:
        namespace = k8s.core.v1.Namespace("team-a")
        return RayCluster(
            "demo", opts=pulumi.ResourceOptions(depends_on=[namespace]), **cluster_spec()
        )

    result = run(program)
    namespace = result.one("kubernetes:core/v1:Namespace").urn
    assert namespace in result.one(COMPONENT).dependencies
    assert namespace in result.one(CR).dependencies


@pytest.mark.parametrize("edge", ["ingress", "gateway", "existing-gateway"])
def test_dashboard_edges_lead_to_the_head_service(edge: str) -> None:
    host = "ray.example.com"
    args: dict[str, Any] = {
        "ingress": {"dashboard_ingress": IngressEdgeArgs(host=host, tls_secret_name="tls")},
        "gateway": {
            "dashboard_gateway": GatewayEdgeArgs(gateway_class_name="envoy", hostname=host)
        },
        "existing-gateway": {
            "dashboard_gateway": GatewayEdgeArgs(gateway_name="shared", gateway_namespace="infra")
        },
    }[edge]
    result = run(lambda: RayCluster("demo", namespace="team-a", **args, **cluster_spec()))
    component, cr = result.one(COMPONENT), result.one(CR)
    children = [r for r in result.registrations if r not in (component, cr)]
    assert all(child.parent == component.urn for child in children)
    assert all(cr.urn in child.dependencies for child in children)
    if edge == "ingress":
        ingress = result.one("kubernetes:networking.k8s.io/v1:Ingress").inputs
        assert ingress["metadata"] == {"name": "demo-dashboard", "namespace": "team-a"}
        rule = ingress["spec"]["rules"][0]
        assert rule["host"] == "ray.example.com"
        assert rule["http"]["paths"][0]["backend"]["service"] == {
            "name": "demo-head-svc",
            "port": {"number": 8265},
        }
        assert ingress["spec"]["tls"] == [{"hosts": ["ray.example.com"], "secretName": "tls"}]
        return
    route = result.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute").inputs
    assert route["spec"]["rules"][0]["backendRefs"] == [{"name": "demo-head-svc", "port": 8265}]
    if edge == "gateway":
        gateway = result.one("kubernetes:gateway.networking.k8s.io/v1:Gateway").inputs
        assert gateway["spec"]["gatewayClassName"] == "envoy"
        assert route["spec"]["parentRefs"] == [{"name": "demo-dashboard"}]
        assert route["spec"]["hostnames"] == ["ray.example.com"]
    else:
        assert result.of_type("kubernetes:gateway.networking.k8s.io/v1:Gateway") == []
        assert route["spec"]["parentRefs"] == [{"name": "shared", "namespace": "infra"}]


def test_a_gateway_edge_needs_exactly_one_gateway() -> None:
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayCluster("demo", dashboard_gateway=GatewayEdgeArgs(), **cluster_spec()))
    assert caught.value.path == "dashboard_gateway"


def test_serve_url_appears_with_the_serve_service_annotation() -> None:
    spec = cluster_spec()
    ports = [{"name": "serve", "containerPort": 8000}, {"name": "dashboard", "containerPort": 8266}]
    spec["head_group_spec"]["template"]["spec"]["containers"][0]["ports"] = ports
    result = run(
        lambda: outputs(
            RayCluster(
                "demo",
                namespace="team-a",
                annotations={"ray.io/enable-serve-service": "true"},
                **spec,
            )
        )
    )
    assert result.value["serve_url"] == "http://demo-serve-svc.team-a.svc.cluster.local:8000"
    assert result.value["dashboard_url"] == "http://demo-head-svc.team-a.svc.cluster.local:8266"


def test_transformations_reach_the_custom_resource() -> None:
    """A transformation given to the component applies to its children, the custom
    resource included (a platform team's way to stamp labels on everything)."""

    def stamp(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult:
        props = dict(args.props)
        if args.type_ == CR:
            props["metadata"] = {**props["metadata"], "labels": {"cost-center": "ml"}}
        return pulumi.ResourceTransformationResult(props, args.opts)

    result = run(
        lambda: RayCluster(
            "demo", opts=pulumi.ResourceOptions(transformations=[stamp]), **cluster_spec()
        )
    )
    assert result.one(CR).inputs["metadata"]["labels"] == {"cost-center": "ml"}
