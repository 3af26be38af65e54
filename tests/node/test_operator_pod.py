"""The operator as the ``RayOperator`` component deploys it, run by a kubelet: its
Deployment, ServiceAccount and RBAC as the component renders them, its image from
``make image`` (by digest, as a stack pins it), ready by its own probes, finding the API
server through the ``kubernetes`` Service with its projected token, holding its Lease
under its pod's name, and reconciling.

No Ray image is loaded yet, so the RayCluster it reconciles gets its head pod and
Service written but its containers not started; that the pods run is the next step of
the real node (issue 45).
"""

from __future__ import annotations

import json
from pathlib import Path

from hack.localcluster import LocalCluster
from hack.node.node import NODE_NAME
from tests.integration.raycluster.conftest import raycluster
from tests.node.harness import deploy_operator, pods
from tests.waiting import wait_for

RECONCILE_SECONDS = 60.0


def test_the_operator_runs_as_a_real_pod_and_reconciles(
    real_cluster: LocalCluster, real_namespace: str, tmp_path: Path
) -> None:
    with deploy_operator(real_cluster, real_namespace, tmp_path) as operator:
        pod = operator.pod
        assert pod["spec"]["nodeName"] == NODE_NAME
        (status,) = pod["status"]["containerStatuses"]
        assert status["imageID"].endswith(operator.digest), status
        assert status["restartCount"] == 0, real_cluster.kubectl(
            "-n", real_namespace, "logs", pod["metadata"]["name"], "--previous", check=False
        ).stdout[-3000:]

        lease_flag = next(a for a in operator.rendered.container["args"]
                          if a.startswith("--leader-election-id="))  # fmt: skip
        lease_name = lease_flag.split("=", 1)[1]
        holder = wait_for(
            "the operator to hold its Lease under its pod's name",
            lambda: real_cluster.get_json("-n", real_namespace, "lease", lease_name)["spec"]
            .get("holderIdentity"),
            timeout=RECONCILE_SECONDS, interval=0.5,
        )  # fmt: skip
        assert holder.startswith(f"{pod['metadata']['name']}_"), holder

        real_cluster.kubectl(
            "apply",
            "-f",
            "-",
            input=json.dumps(raycluster("reconciled", real_namespace, workers=1)),
        )
        head = wait_for(
            "the operator to create the RayCluster's head pod",
            lambda: pods(real_cluster, real_namespace,
                         "ray.io/cluster=reconciled,ray.io/node-type=head"),
            timeout=RECONCILE_SECONDS, interval=0.5,
        )  # fmt: skip
        assert head[0]["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"
        logs = real_cluster.kubectl("-n", real_namespace, "logs", pod["metadata"]["name"]).stdout
        for refusal in ("Traceback", "forbidden", "Unauthorized"):
            assert refusal not in logs, logs[-3000:]
