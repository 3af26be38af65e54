"""One operator for several teams, with namespaced RBAC, and a RayCluster per team."""

import pulumi
import pulumi_kubernetes as k8s

from pulumi_ray import RayCluster, RayOperator, RayOperatorArgs
from pulumi_ray.operator import load_crds

config = pulumi.Config()
teams: list[str] = config.get_object("teams") or ["team-a", "team-b"]
operator_namespace = config.get("operatorNamespace") or "ray-platform"
ray_image = f"rayproject/ray:{config.get('rayVersion') or '2.52.0'}"

# The admin part: Namespaces and CRDs are cluster-scoped, so the operator's namespaced
# RBAC cannot (and RayOperator will not) create them. A platform usually keeps them in a
# cluster-admin stack; set clusterAdmin=false when one already does.
cluster_objects: list[pulumi.Resource] = []
namespace_names: dict[str, pulumi.Input[str]] = {n: n for n in [operator_namespace, *teams]}
if config.get_bool("clusterAdmin") is not False:
    for name in list(namespace_names):
        namespace = k8s.core.v1.Namespace(name, metadata={"name": name})
        cluster_objects.append(namespace)
        namespace_names[name] = namespace.metadata.apply(lambda meta: str(meta.name))
    cluster_objects += [
        k8s.apiextensions.v1.CustomResourceDefinition(
            crd["metadata"]["name"], metadata=crd["metadata"], spec=crd["spec"]
        )
        for crd in load_crds()
    ]

operator = RayOperator(
    "ray-operator",
    RayOperatorArgs(
        namespace=namespace_names[operator_namespace],
        image=config.get("operatorImage"),  # your registry's copy: docs/releasing.md
        watch_namespaces=teams,
        # A Role and RoleBinding in each team namespace, nothing cluster-wide.
        cluster_scoped_rbac=False,
    ),
    opts=pulumi.ResourceOptions(depends_on=cluster_objects),
)


def container(name: str) -> dict[str, object]:
    resources = {"cpu": "1", "memory": "2Gi"}
    return {
        "name": name,
        "image": ray_image,
        "resources": {"requests": resources, "limits": resources},
    }


clusters = {
    team: RayCluster(
        f"{team}-ray",
        namespace=namespace_names[team],
        opts=pulumi.ResourceOptions(depends_on=[operator]),
        head_group_spec={"template": {"spec": {"containers": [container("ray-head")]}}},
        worker_group_specs=[
            {
                "group_name": "workers",
                "replicas": 1,
                "min_replicas": 0,
                "max_replicas": 4,
                "template": {"spec": {"containers": [container("ray-worker")]}},
            }
        ],
    )
    for team in teams
}

pulumi.export("operatorRoles", operator.role_names)
pulumi.export("dashboards", {team: cluster.dashboard_url for team, cluster in clusters.items()})
