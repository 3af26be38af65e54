"""A RayJob and a RayCluster on a Kueue LocalQueue whose quota is smaller than either:
Kueue keeps both suspended, and ``pulumi up`` must succeed and say so rather than wait
for them to run.

Config (project namespace ``pulumi-ray-e2e-kueue``): ``namespace`` (Kueue manages it) and
``queue`` (its LocalQueue). The Kubernetes provider is the default one, from
``kubernetes:kubeconfig``.
"""

from __future__ import annotations

import pulumi

from pulumi_ray import RayCluster, RayJob

config = pulumi.Config()
# One CPU: more than the queue's quota, so Kueue never admits the job.
amounts = {"cpu": "1", "memory": "1Gi"}
head = {
    # Kueue's webhook decodes the RayJob into KubeRay's Go types, where rayStartParams has
    # no omitempty: without it the patch sets it to null, which the CRD refuses.
    "rayStartParams": {},
    "template": {
        "spec": {
            "containers": [
                {
                    "name": "ray-head",
                    "image": "rayproject/ray:2.52.0",
                    "resources": {"requests": amounts, "limits": amounts},
                }
            ]
        }
    },
}
job = RayJob(
    "queued",
    namespace=config.require("namespace"),
    queue_name=config.require("queue"),
    # Bounds a regression (a wait for Complete) to minutes; queued, up ends in seconds.
    timeout="3m",
    entrypoint='python -c "print(1)"',
    shutdown_after_job_finishes=True,
    ray_cluster_spec={"rayVersion": "2.52.0", "headGroupSpec": head},
)

cluster = RayCluster(
    "queued-cluster",
    namespace=config.require("namespace"),
    queue_name=config.require("queue"),
    timeout="3m",
    ray_version="2.52.0",
    head_group_spec=head,
)

pulumi.export("name", job.name)
pulumi.export("status", job.status)
pulumi.export("clusterName", cluster.name)
pulumi.export("clusterStatus", cluster.status)
