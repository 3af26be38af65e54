"""The RayJob's children: its RayCluster, the ``<job>-head-svc`` Service and the
submitter Job (K8sJobMode). Reads come from the caches; a child the cache has not seen
yet is confirmed with a GET before anything is created twice."""

from __future__ import annotations

import logging
from typing import Any, Final

from operator_runtime.api import RayCluster
from operator_runtime.api.reasons import Action, JobReason
from operator_runtime.controllers.rayjob.run import JobRun, need
from operator_runtime.render import (
    SubmitterParams,
    build_rayjob_cluster,
    build_rayjob_head_service,
    build_submitter_job,
)
from operator_runtime.runtime import kinds
from operator_runtime.runtime.cache import BY_OWNER_UID
from operator_runtime.runtime.errors import AlreadyExists, ApiError, NotFound, TemporaryError
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import controlled_by

log = logging.getLogger(__name__)
CLUSTER_SELECTOR_KEY: Final = "ray.io/cluster"
DASHBOARD_PORT_NAME: Final = "dashboard"

NEEDS: Final = (
    need("ray.io", "rayclusters", ("get", "create", "update", "delete"),
         "the RayJob's cluster; update suspends its workers (DeleteWorkers)"),
    need("", "services", ("get", "create", "update"), "the <job>-head-svc Service"),
    need("batch", "jobs", ("get", "create", "delete"), "the submitter Job"),
)  # fmt: skip


def _fresh(run: JobRun, kind: kinds.ResourceKind, name: str) -> Object | None:
    """``name`` from the API server: for a child the cache may not have seen yet.

    Not read before creating a child the cache does not hold: the create's
    AlreadyExists says when the cache was behind, and a read first would cost one GET
    per child of every RayJob (100 RayJobs at once made 3 GETs each; KubeRay reads its
    cache only)."""
    return run.tools.client.find(kind, name, run.namespace)


def get_or_create_cluster(run: JobRun) -> Object:
    name = str(run.get("rayClusterName") or "")
    found = run.cached_cluster()
    if found is None and run.selector_mode:
        found = _fresh(run, kinds.RAY_CLUSTER, name)
    if found is not None:
        return found
    if run.selector_mode:
        run.event("Warning", JobReason.CLUSTER_NOT_FOUND,
                  f"RayCluster {run.namespace}/{name} set in the clusterSelector is not found. "
                  "It must be created manually", Action.VALIDATE)  # fmt: skip
        raise TemporaryError(f"clusterSelector names RayCluster {run.namespace}/{name}, "
                             "which does not exist")  # fmt: skip
    desired = build_rayjob_cluster(
        job=run.job,
        cluster_name=name,
        job_id=str(run.get("jobId") or ""),
        options=run.tools.options.render,
    )
    try:
        created: Object = run.tools.client.create(dict(desired))
    except AlreadyExists:
        again = _fresh(run, kinds.RAY_CLUSTER, name)
        if again is None:
            raise TemporaryError(f"RayCluster {run.namespace}/{name} exists and is gone") from None
        return again
    except ApiError as exc:
        run.event(
            "Warning",
            JobReason.FAILED_TO_CREATE_CLUSTER,
            f"Failed to create RayCluster {run.namespace}/{name}: {exc}",
            Action.CREATE,
        )
        raise  # fmt: skip
    run.event("Normal", JobReason.CREATED_CLUSTER, f"Created RayCluster {run.namespace}/{name}",
              Action.CREATE)  # fmt: skip
    return created


def dashboard_url(run: JobRun, cluster: Object) -> str:
    """``<head-svc>.<ns>.svc.<domain>:<port>`` from the head Service's "dashboard" port."""
    tools = run.tools
    return tools.dashboards.head_url(
        cluster, tools.caches.services, tools.options.render.cluster_domain
    )


def create_submitter_if_needed(run: JobRun, cluster: Object) -> None:
    if _submitter(run, fresh=False) is not None:  # not fresh: see _fresh
        return
    desired = build_submitter_job(
        params=SubmitterParams(
            job=run.job,
            job_id=str(run.get("jobId") or ""),
            dashboard_url=str(run.get("dashboardURL") or ""),
            options=run.tools.options.render,
            cluster=RayCluster.model_validate(cluster),
        )
    )
    try:
        run.tools.client.create(dict(desired))
    except AlreadyExists:
        return
    except ApiError as exc:
        run.event("Warning", JobReason.FAILED_TO_CREATE_SUBMITTER,
                  f"Failed to create new Kubernetes Job {run.namespace}/{run.name}: {exc}",
                  Action.CREATE)  # fmt: skip
        raise
    run.event("Normal", JobReason.CREATED_SUBMITTER,
              f"Created Kubernetes Job {run.namespace}/{run.name}", Action.CREATE)  # fmt: skip


def _submitter(run: JobRun, *, fresh: bool = True) -> Object | None:
    """The submitter Job (named as the RayJob), if this RayJob controls it; from the
    cache, then (``fresh``) from the API server."""
    found = run.tools.caches.submitters.get(run.namespace, run.name)
    if found is None and fresh:
        found = _fresh(run, kinds.JOB, run.name)
    return found if found is not None and controlled_by(found, run.uid) else None


def submitter_job(run: JobRun) -> Object:
    found = _submitter(run)
    if found is None:
        raise TemporaryError(f"submitter Job {run.namespace}/{run.name} does not exist")
    return found


def reconcile_head_service(run: JobRun, cluster: Object) -> None:
    """``<job>-head-svc`` follows the RayJob's current cluster (not in selector mode)."""
    if run.selector_mode:
        return
    desired: dict[str, Any] = dict(
        build_rayjob_head_service(
            job=run.job,
            cluster=RayCluster.model_validate(cluster),
            options=run.tools.options.render,
        )
    )
    name = str(desired["metadata"]["name"])
    current = run.tools.caches.services.get(run.namespace, name)
    client = run.tools.client
    if current is None:
        try:
            client.create(desired)
        except AlreadyExists:
            return
        except ApiError as exc:
            run.event("Warning", JobReason.FAILED_TO_CREATE_SERVICE,
                      f"Failed to create the service {run.namespace}/{name}, {exc}",
                      Action.CREATE)  # fmt: skip
            raise
        run.event("Normal", JobReason.CREATED_SERVICE,
                  f"Created the service {run.namespace}/{name}", Action.CREATE)  # fmt: skip
        return
    wanted = (desired["spec"].get("selector") or {}).get(CLUSTER_SELECTOR_KEY)
    if ((current.get("spec") or {}).get("selector") or {}).get(CLUSTER_SELECTOR_KEY) == wanted:
        return
    spec = dict(desired["spec"])
    if current["spec"].get("clusterIP"):
        spec["clusterIP"] = current["spec"]["clusterIP"]
    try:
        client.update({**current, "spec": spec})
    except ApiError as exc:
        run.event("Warning", JobReason.FAILED_TO_UPDATE_SERVICE,
                  f"Failed to update the service {run.namespace}/{name}, {exc}",
                  Action.UPDATE)  # fmt: skip
        raise
    run.event("Normal", JobReason.UPDATED_SERVICE, f"Updated the service {run.namespace}/{name}",
              Action.UPDATE)  # fmt: skip


def delete_cluster(run: JobRun) -> bool:
    """Ask for the cluster's deletion; True once it is gone (never in selector mode)."""
    if run.selector_mode:
        return True
    name = str(run.get("rayClusterName") or "")
    cluster = (run.cached_cluster() or _fresh(run, kinds.RAY_CLUSTER, name)) if name else None
    if cluster is None:
        return True
    if cluster["metadata"].get("deletionTimestamp"):
        return False
    try:
        run.tools.client.delete(kinds.RAY_CLUSTER, name, run.namespace)
    except NotFound:
        return True
    except ApiError as exc:
        run.event(
            "Warning",
            JobReason.FAILED_TO_DELETE_CLUSTER,
            f"Failed to delete cluster {run.namespace}/{name}: {exc}",
            Action.DELETE,
        )
        raise  # fmt: skip
    run.event("Normal", JobReason.DELETED_CLUSTER, f"Deleted cluster {run.namespace}/{name}",
              Action.DELETE)  # fmt: skip
    return False


def delete_submitter(run: JobRun) -> bool:
    """Ask for the submitter Job's deletion (K8sJobMode); True once it is gone."""
    if run.mode != "K8sJobMode":
        return True
    job = _submitter(run)
    if job is None:
        return True
    if job["metadata"].get("deletionTimestamp"):
        return False
    try:
        run.tools.client.delete(kinds.JOB, run.name, run.namespace, propagation_policy="Background")
    except NotFound:
        return True
    except ApiError as exc:
        run.event("Warning", JobReason.FAILED_TO_DELETE_SUBMITTER,
                  f"Failed to delete submitter K8s Job {run.namespace}/{run.name}: {exc}",
                  Action.DELETE)  # fmt: skip
        raise
    run.event(
        "Normal",
        JobReason.DELETED_SUBMITTER,
        f"Deleted submitter K8s Job {run.namespace}/{run.name}",
        Action.DELETE,
    )
    return False  # fmt: skip


def suspend_workers(run: JobRun) -> None:
    """DeleteWorkers: ``suspend: true`` on every worker group, by Update."""
    name = str(run.get("rayClusterName") or "")
    cluster = _fresh(run, kinds.RAY_CLUSTER, name)
    if cluster is None:
        raise TemporaryError(f"RayCluster {run.namespace}/{name} does not exist")
    spec = dict(cluster.get("spec") or {})
    spec["workerGroupSpecs"] = [
        {**group, "suspend": True} for group in spec.get("workerGroupSpecs") or ()
    ]
    try:
        run.tools.client.update({**cluster, "spec": spec})
    except ApiError as exc:
        run.event("Warning", JobReason.FAILED_TO_UPDATE_CLUSTER,
                  f"Failed to suspend worker groups in cluster {run.namespace}/{name}: {exc}",
                  Action.UPDATE)  # fmt: skip
        raise
    run.event("Normal", JobReason.UPDATED_CLUSTER,
              "Set the `suspend` field to true for all worker groups in cluster "
              f"{run.namespace}/{name}", Action.UPDATE)  # fmt: skip


def head_pod(run: JobRun, cluster: Object) -> Object | None:
    """The cluster's head pod (SidecarMode reads the submitter container's state)."""
    uid = str(cluster["metadata"].get("uid") or "")
    for pod in run.tools.caches.pods.by_index(BY_OWNER_UID, uid):
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get("ray.io/node-type") == "head" and controlled_by(pod, uid):
            return pod
    return None
