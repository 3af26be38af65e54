"""GCS fault tolerance with an external Redis: the head can restart without losing the
cluster. The Redis password is stack config set with ``--secret``; it reaches Redis and
Ray through a Kubernetes Secret, so it is never in the state file in plain text."""

import pulumi
import pulumi_kubernetes as k8s

from pulumi_ray import RayCluster

config = pulumi.Config()
namespace = config.get("namespace") or "default"
# Required: a default would be a password everyone knows.
password = config.require_secret("redisPassword")

secret = k8s.core.v1.Secret(
    "redis-password",
    metadata={"namespace": namespace},
    string_data={"password": password},
)
# Kubernetes objects inside a Ray spec keep Kubernetes' camelCase names (secretKeyRef);
# the component refuses a snake_case one, which the API server would otherwise prune.
password_ref = {"secretKeyRef": {"name": secret.metadata.name, "key": "password"}}
password_env = {"name": "REDIS_PASSWORD", "valueFrom": password_ref}

labels = {"app": "redis"}
redis = k8s.apps.v1.Deployment(
    "redis",
    metadata={"namespace": namespace},
    spec={
        "selector": {"match_labels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "containers": [
                    {
                        "name": "redis",
                        "image": "redis:7.4",
                        "args": ["--requirepass", "$(REDIS_PASSWORD)"],
                        "env": [password_env],
                        "ports": [{"container_port": 6379}],
                    }
                ]
            },
        },
    },
)
redis_service = k8s.core.v1.Service(
    "redis",
    metadata={"namespace": namespace},
    spec={"selector": labels, "ports": [{"port": 6379}]},
)
redis_address = pulumi.Output.concat(
    redis_service.metadata.name, ".", namespace, ".svc.cluster.local:6379"
)


def container(name: str) -> dict[str, object]:
    amounts = {"cpu": "1", "memory": "4Gi"}
    return {
        "name": name,
        "image": "rayproject/ray:2.52.0",
        "resources": {"requests": amounts, "limits": amounts},
    }


# The Secret's name and the Redis address are Outputs: the spec is validated once they
# resolve, and the deletion of the cluster waits for the operator's Redis cleanup.
cluster = RayCluster(
    "gcs-ft",
    namespace=namespace,
    ray_version="2.52.0",
    gcs_fault_tolerance_options={
        "redis_address": redis_address,
        "redis_password": {"value_from": password_ref},
        "external_storage_namespace": "gcs-ft",
    },
    head_group_spec={
        "ray_start_params": {"num-cpus": "0"},
        "template": {"spec": {"containers": [container("ray-head")]}},
    },
    worker_group_specs=[
        {
            "group_name": "workers",
            "replicas": 2,
            "min_replicas": 1,
            "max_replicas": 5,
            "template": {"spec": {"containers": [container("ray-worker")]}},
        }
    ],
    opts=pulumi.ResourceOptions(depends_on=[redis]),
)

pulumi.export("dashboardUrl", cluster.dashboard_url)
