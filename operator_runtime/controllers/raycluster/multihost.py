"""Worker groups with ``numOfHosts > 1`` (gate RayMultiHostIndexing): a replica is
``numOfHosts`` pods sharing ``ray.io/worker-group-replica-name``, and is created,
replaced and removed as a whole, since a partial multi-host slice is useless."""

from __future__ import annotations

from collections import defaultdict

from operator_runtime.api import WorkerGroupSpec
from operator_runtime.api.labels import LabelKey
from operator_runtime.controllers.raycluster import mtls
from operator_runtime.controllers.raycluster.creates import take_budget
from operator_runtime.controllers.raycluster.podrules import (
    live_pods,
    running_and_ready,
    should_delete_pod,
)
from operator_runtime.controllers.raycluster.podwrites import (
    create_worker,
    delete_pod,
    free_replica_indexes,
    held_places,
)
from operator_runtime.controllers.raycluster.run import ClusterRun
from operator_runtime.controllers.raycluster.scaledown import scale_down_victims
from operator_runtime.controllers.suffix import suffixed
from operator_runtime.render import desired_worker_replicas
from operator_runtime.runtime.kinds import Object


class ReplicasReplaced(Exception):
    """Whole replicas were deleted; creations wait for the next pass."""


def _labels(pod: Object) -> dict[str, str]:
    return dict(pod["metadata"].get("labels") or {})


def reconcile_multi_host_group(run: ClusterRun, group: WorkerGroupSpec, pods: list[Object]) -> None:
    name, hosts = group.group_name, group.num_of_hosts
    # Hosts that are Terminating do not count (``live_pods``): a replica with one of
    # them is incomplete, so its other hosts are deleted and the replica is recreated.
    replicas: dict[str, list[Object]] = defaultdict(list)
    for pod in live_pods(pods):
        replica = _labels(pod).get(LabelKey.WORKER_GROUP_REPLICA_NAME)
        if replica:
            replicas[replica].append(pod)
    for replica, members in sorted(replicas.items()):
        if len(members) < hosts:
            _delete_replica(run, name, members, "incomplete multi-host replica")
            raise ReplicasReplaced(f"cleaned up incomplete replica {replica}")
    deleted: set[str] = set()
    for replica, members in sorted(replicas.items()):
        verdicts = [should_delete_pod(pod, "worker") for pod in members]
        unhealthy = next((v for v in verdicts if v.delete), None)
        if unhealthy is not None:
            _delete_replica(run, name, members, unhealthy.reason)
            deleted.add(replica)
    requested = set(group.scale_strategy.workers_to_delete or ()) if group.scale_strategy else set()
    doomed = {
        replica
        for replica, members in replicas.items()
        if replica not in deleted and any(p["metadata"]["name"] in requested for p in members)
    }
    for replica in sorted(doomed):
        _delete_replica(run, name, replicas[replica], "autoscaler scale-down request")
    if doomed:
        raise ReplicasReplaced(f"deleted {len(doomed)} replicas listed in workersToDelete")
    valid = sorted(r for r in replicas if r not in deleted)
    desired = desired_worker_replicas(group)
    if desired > len(valid):
        going = {str(p["metadata"]["name"]) for r in deleted for p in replicas[r]}
        missing = desired - len(valid) - held_places(run, name, pods, going)
        if missing > 0:
            mtls.require_certificates(run)
            _create_replicas(run, group, pods, missing)
    elif desired < len(valid):
        victims = scale_down_victims(
            run,
            name,
            valid,
            len(valid) - desired,
            serving=lambda r: all(running_and_ready(p) for p in replicas[r]),
            unit="replicas",
        )
        for replica in victims:
            _delete_replica(run, name, replicas[replica], "scaling down")


def _delete_replica(run: ClusterRun, group: str, members: list[Object], why: str) -> None:
    for pod in members:
        delete_pod(run, pod, group=group, head=False, why=why)


def _create_replicas(
    run: ClusterRun, group: WorkerGroupSpec, carried: list[Object], count: int
) -> None:
    """Create ``count`` whole replicas, each under a replica index no pod in ``carried``
    has, Terminating ones included."""
    # A replica is created whole or not at all, so the budget is counted in replicas.
    allowed = take_budget(run, count, pods_each=group.num_of_hosts)
    for index in free_replica_indexes(carried, allowed):
        replica_name = suffixed(run.tools.rng, group.group_name)
        for host in range(group.num_of_hosts):
            create_worker(
                run, group, replica_index=index, replica_name=replica_name, host_index=host
            )
            run.creates_unseen = True
