"""One shape for every component, ``Component(name, args, opts)``, and the aliases that
keep the URNs of stacks made when the package's tokens began with ``pulumi-ray:``."""

from typing import Any

import pulumi
import pytest

from components import (
    IngressEdgeArgs,
    RayCluster,
    RayClusterArgs,
    RayCronJob,
    RayJob,
    RayOperator,
    RayService,
)
from components.edges import PathType
from tests.components.workload_mocks import cluster_spec, run

CR = "kubernetes:ray.io/v1:RayCluster"


def test_args_keyword_arguments_and_a_providers_dict_register_the_same_object() -> None:
    spec = cluster_spec()
    ingress = {"host": "ray.example", "path_type": "Exact"}
    as_args = run(
        lambda: RayCluster(
            "demo",
            RayClusterArgs(
                spec=spec,
                namespace="team-a",
                dashboard_ingress=IngressEdgeArgs(host="ray.example", path_type=PathType.EXACT),
            ),
        )
    )
    as_keywords = run(
        lambda: RayCluster(
            "demo",
            namespace="team-a",
            dashboard_ingress=IngressEdgeArgs(host="ray.example", path_type=PathType.EXACT),
            **spec,
        )
    )
    # What pulumi.provider.experimental passes when another language constructs it.
    as_dict = run(
        lambda: RayCluster(
            "demo",
            {"spec": spec, "namespace": "team-a", "dashboard_ingress": ingress},  # type: ignore[arg-type]
        )
    )
    runs = (as_args, as_keywords, as_dict)
    assert all(r.one(CR).inputs == as_args.one(CR).inputs for r in runs)
    ingresses = [r.one("kubernetes:networking.k8s.io/v1:Ingress").inputs for r in runs]
    assert ingresses[0] == ingresses[1] == ingresses[2]
    assert ingresses[0]["spec"]["rules"][0]["http"]["paths"][0]["pathType"] == "Exact"


def test_none_means_the_fields_default() -> None:
    """The schema cannot carry "default True": leaving a field out of a YAML program (None
    in Python) is the default, not False."""
    registered = run(lambda: RayCluster("demo", wait_for_ready=None, **cluster_spec())).one(CR)
    annotations = registered.inputs["metadata"]["annotations"]
    assert annotations["pulumi.com/waitFor"] == "jsonpath={.status.state}=ready"


def test_args_and_keywords_together_are_refused() -> None:
    with pytest.raises(TypeError, match="not both"):
        RayCluster("demo", RayClusterArgs(namespace="a"), namespace="b")
    with pytest.raises(TypeError, match="no argument"):
        RayCluster("demo", {"nonsense": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="no argument"):
        RayOperator("ray", replicaz=2)


@pytest.mark.parametrize(
    ("component", "program"),
    [
        ("RayCluster", lambda: RayCluster("x", **cluster_spec())),
        ("RayJob", lambda: RayJob("x", entrypoint="true", ray_cluster_spec=cluster_spec())),
        (
            "RayService",
            lambda: RayService(
                "x", serve_config_v2="applications: []", ray_cluster_config=cluster_spec()
            ),
        ),
        (
            "RayCronJob",
            lambda: RayCronJob(
                "x",
                feature_gates="RayCronJob=true",
                schedule="0 * * * *",
                job_template={"entrypoint": "true", "ray_cluster_spec": cluster_spec()},
            ),
        ),
        ("RayOperator", lambda: RayOperator("x", image="registry.example/op@sha256:" + "a" * 64)),
    ],
)
def test_a_stack_made_under_the_old_token_is_adopted(component: str, program: Any) -> None:
    """The component registers as ``ray:index:<Kind>`` with an alias to
    ``pulumi-ray:index:<Kind>``: the engine then finds the old URN in the state and moves
    it (and, through the parent, every child's) instead of replacing everything."""
    registered = run(program).one(f"ray:index:{component}")
    aliases = registered.request.aliases
    assert len(aliases) == 1, aliases
    assert aliases[0].spec.type == f"pulumi-ray:index:{component}"
    assert not aliases[0].spec.name  # same name, same parent: only the type changed


def test_only_schema_outputs_are_annotated() -> None:
    for component in (RayCluster, RayJob, RayService, RayCronJob, RayOperator):
        for name, annotation in component.__annotations__.items():
            assert getattr(annotation, "__origin__", None) is pulumi.Output, (component, name)
        assert "resource_name" not in component.__annotations__
