"""The Ray autoscaler, for real: the sidecar the operator renders runs the Ray image's
own ``ray kuberay-autoscaler`` with the RBAC the operator made for it.

A head that offers no CPU and a worker group of 0 to 3: a program asks for two CPUs,
the autoscaler raises ``replicas``, the operator makes the pods, they join and run the
tasks. Idle, the autoscaler names its victims in ``workersToDelete``; the operator must
delete exactly those pods and make none in their place (the scale-down bug this project
began from), and the group settles at 0. Both autoscaler versions, under both operators;
v1's cluster comes from a Pulumi stack, which must preview no change once scaled.
"""

from __future__ import annotations

import contextlib
import itertools
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from hack.demo import QuickstartStack
from hack.image.ray import RAY_IMAGE, RAY_VERSION
from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER
from tests.kubeclient import shared_client
from tests.node.harness import (
    RAY_PODS_GONE_SECONDS,
    all_ready,
    cluster_spec,
    operators,
    pod_states,
    pods,
    ray_container,
    server_side_apply,
)
from tests.waiting import wait_for
from tests.watching import Recorder

OPERATORS = operators(compared_in_make_test=False)
"""KubeRay's side of these scenarios runs under ``make node-compare``."""

STACK_PROGRAM = Path(__file__).parent / "autoscaled_stack"
HEAD_READY_SECONDS = 420.0
"""As RAY_READY_SECONDS (test_ray_on_the_node.py): a head on two loaded cores."""
DEMAND_SECONDS = 600.0
"""From the program's start to its end: the autoscaler's loop (every 5 s for v1) sees the
demand, the operator makes two pods, each starts a raylet and joins, the tasks run."""
IDLE_TIMEOUT = 15
STACK_SECONDS = 300.0
"""The stack's ``up``, ``preview`` and ``destroy`` together: three engine runs against the
local API server, with room for two loaded cores."""
SETTLE_SECONDS = 300.0
"""From the program's end to no worker pod: idleTimeoutSeconds, the autoscaler's loop,
then the pods' graceful stop."""

pytestmark = pytest.mark.timeout(
    HEAD_READY_SECONDS + DEMAND_SECONDS + SETTLE_SECONDS + RAY_PODS_GONE_SECONDS + STACK_SECONDS
)
"""A scenario's own bounds in a row, and the namespace's clean-up after it (the
``ray_gone_after`` fixture's, which pytest-timeout counts too): the session's 600 s was
less than the sum, and ran out in the clean-up of a scenario that had passed."""

DEMAND = textwrap.dedent("""
    import ray, time
    ray.init()
    @ray.remote(num_cpus=1)
    def work():
        time.sleep(5)
        return ray.get_runtime_context().get_node_id()
    print("ran on", len(set(ray.get([work.remote() for _ in range(2)]))), "workers")
""")


def autoscaled_spec(version: str) -> dict[str, Any]:
    spec = cluster_spec(0)
    spec["enableInTreeAutoscaling"] = True
    spec["autoscalerOptions"] = {
        "version": version,
        "idleTimeoutSeconds": IDLE_TIMEOUT,
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                      "limits": {"cpu": "500m", "memory": "512Mi"}},
    }  # fmt: skip
    spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    # The autoscaler v2 container does not stop on SIGTERM (KubeRay #503), so the head
    # pod took the default 30 s grace to go in the namespace's clean-up after the
    # scenario; the scenario never stops the head.
    spec["headGroupSpec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    spec["workerGroupSpecs"] = [{
        "groupName": "cpu", "replicas": 0, "minReplicas": 0, "maxReplicas": 3,
        "rayStartParams": {},
        "template": {"spec": {"containers": [ray_container("ray-worker")]}},
    }]  # fmt: skip
    return spec


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_autoscaler_scales_up_for_demand_and_down_by_exactly_its_victims(
    real_cluster: LocalCluster,
    ray_namespace: str,
    version: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    """v1's cluster is made by a Pulumi stack (``autoscaled_stack``), as a platform team
    makes one; once the autoscaler has scaled it up, ``pulumi preview
    --expect-no-changes`` shows that the components leave ``replicas`` to it. v2's is
    applied as a manifest of the same spec."""
    ns = ray_namespace
    operator = request.node.callspec.params["ray_namespace"]
    kube = shared_client(real_cluster)
    with contextlib.ExitStack() as cleanup:
        if version == "v1":
            stack = stacked_cluster(real_cluster, ns, tmp_path, version, cleanup)
            (made,) = real_cluster.get_json("-n", ns, "raycluster")["items"]
            name = str(made["metadata"]["name"])
        else:
            stack, name = None, f"auto-{version}"
            server_side_apply(real_cluster, ns, {
                "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
                "spec": autoscaled_spec(version),
            })  # fmt: skip
        wait_for(
            "the head (with its autoscaler) Ready by its probes",
            lambda: all_ready(pods(real_cluster, ns, f"ray.io/cluster={name}"), 1),
            timeout=HEAD_READY_SECONDS, interval=2.0,
            explain=lambda: pod_states(real_cluster, ns),
        )  # fmt: skip
        (head,) = pods(real_cluster, ns, f"ray.io/cluster={name},ray.io/node-type=head")
        workers = f"ray.io/cluster={name},ray.io/node-type=worker"
        with (
            Recorder(kube, POD, ns, label_selector=workers) as worker_pods,
            Recorder(kube, RAY_CLUSTER, ns, field_selector=f"metadata.name={name}") as clusters,
        ):
            demand = time.monotonic()
            ran = real_cluster.kubectl("-n", ns, "exec", head["metadata"]["name"], "-c",
                                       head["spec"]["containers"][0]["name"], "--", "python",
                                       "-c", DEMAND, timeout=DEMAND_SECONDS).stdout  # fmt: skip
            ran_for = time.monotonic() - demand
            idle = time.monotonic()  # the preview below runs while the workers idle
            if stack is not None:
                # Scaled from the stack's 0: two, or three if it asked for one more.
                scaled_to = replicas(kube, ns, name)
                assert scaled_to in (2, 3), scaled_to
                stack.run("preview", "--expect-no-changes")
            wait_for(
                "the worker group back at 0 with no worker pod",
                lambda: not pods(real_cluster, ns, workers) and replicas(kube, ns, name) == 0,
                timeout=SETTLE_SECONDS, interval=1.0,
                explain=lambda: pod_states(real_cluster, ns),
            )  # fmt: skip
            settled_for = time.monotonic() - idle
    assert "ran on 2 workers" in ran, ran

    created = [e.object["metadata"]["name"] for e in worker_pods.events if e.type == "ADDED"]
    deleted = [e.object["metadata"]["name"] for e in worker_pods.events if e.type == "DELETED"]
    ready_at = [e.at for e in worker_pods.events if all_ready([e.object], 1)]
    first_ready = f"{min(ready_at) - demand:.1f} s" if ready_at else "never"
    specs = [e.object["spec"] for e in clusters.events]
    victims = {
        victim
        for spec in specs
        for group in spec.get("workerGroupSpecs", [])
        for victim in (group.get("scaleStrategy") or {}).get("workersToDelete") or []
    }
    # Every pod the autoscaler asked for is a rise of ``replicas``. Under load, v2 has
    # asked for a third worker while the first two were still joining (CI run 50), so
    # the pods to expect are the rises, not the two the program needs.
    history = [spec["workerGroupSpecs"][0].get("replicas", 0) for spec in specs]
    peak = max(history)
    asked = sum(max(0, now - before) for before, now in itertools.pairwise([0, *history]))
    print(f"\n{operator}, autoscaler {version}: program ran {ran_for:.1f} s "
          f"(first worker Ready {first_ready} after demand); idle -> no workers in "
          f"{settled_for:.1f} s; replicas up to {peak}, pods asked {asked}; pods created "
          f"{len(created)}, deleted {len(deleted)}; victims named {sorted(victims)}")  # fmt: skip
    assert 2 <= peak <= 3, history  # what the program needs, at most maxReplicas
    assert len(created) == asked and len(set(created)) == len(created), created
    assert sorted(deleted) == sorted(created), (created, deleted)
    assert victims == set(deleted), (victims, deleted)


def stacked_cluster(
    cluster: LocalCluster,
    namespace: str,
    work_dir: Path,
    version: str,
    cleanup: contextlib.ExitStack,
) -> QuickstartStack:
    """``pulumi up`` of the autoscaled stack into ``namespace``; destroyed on ``cleanup``."""
    stack = QuickstartStack.create(cluster, work_dir / "stack", STACK_PROGRAM)
    stack.run("stack", "init", "node")
    settings = {
        "namespace": namespace,
        "rayImage": RAY_IMAGE,
        "rayVersion": RAY_VERSION,
        "autoscalerVersion": version,
        "idleTimeoutSeconds": str(IDLE_TIMEOUT),
    }
    for key, value in settings.items():
        stack.run("config", "set", key, value)
    cleanup.callback(stack.run, "destroy", "--yes")
    stack.run("up", "--yes")
    return stack


def replicas(kube: KubeClient, namespace: str, name: str) -> int:
    cluster = kube.get(RAY_CLUSTER, name, namespace)
    return int(cluster["spec"]["workerGroupSpecs"][0].get("replicas", 0))
