"""Ray Serve on a RayService's cluster: the head pod's ``ray.io/serve`` label, the serve
config PUT (only when needed), the applications' status, and (incremental upgrade) the
serve ``target_capacity`` steps.

Every Serve call goes through the operator's one dashboard client pool; the serve
proxy's health through the same pool (``Dashboards.serve_proxy``).

What each cluster was given is recorded on the cluster (``pulumi-ray.io/serve-config-hash``
and, when it fits, ``pulumi-ray.io/serve-config``), written after each config PUT; the
in-memory cache only saves reading it. Only the cluster meant to run ``serveConfigV2``
(``receives_goal``) is ever sent it: after a restart mid-upgrade the old cluster, still
carrying traffic, keeps the config it was given (KubeRay falls back to the new config
when its cache is empty, and deploys the new applications there).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from typing import Any, Final

from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.api.raycluster import HEAD_POD_READY
from operator_runtime.api.rayservice import APP_RUNNING, ROLLBACK_IN_PROGRESS, UPGRADE_IN_PROGRESS
from operator_runtime.api.reasons import Action
from operator_runtime.clients import DashboardClient, DashboardError, DashboardUnavailable
from operator_runtime.controllers.conditions import is_true
from operator_runtime.controllers.pods import pod_ready
from operator_runtime.controllers.rayservice import traffic
from operator_runtime.controllers.rayservice.run import (
    ACTIVE,
    PENDING,
    ServiceRun,
    need,
)
from operator_runtime.render import USE_KUBERNETES_PROXY, serve_config_body
from operator_runtime.render.rayservice_upgrade import capacity_step
from operator_runtime.runtime import kinds
from operator_runtime.runtime.cache import BY_OWNER_UID
from operator_runtime.runtime.errors import ApiError, Invalid, NotFound, TemporaryError
from operator_runtime.runtime.kinds import Object, being_deleted

log = logging.getLogger(__name__)
DEFAULT_APP_NAME: Final = "default"
RECORDED_CONFIG_LIMIT: Final = 128 * 1024
"""Bytes of config text recorded beside its hash: the API server allows 256 KiB of
annotations on an object, and the user's own come from ``rayClusterConfig``. A larger
config is recorded by hash only."""

NEEDS: Final = (
    need("", "pods", ("patch",), "the head pod's ray.io/serve label"),
    need("", "pods/proxy", ("get", "create"),
         "the serve proxy's health through the API server", USE_KUBERNETES_PROXY),
)  # fmt: skip


def head_pod(run: ServiceRun, cluster: Object) -> Object | None:
    uid = str(cluster["metadata"].get("uid") or "")
    for pod in run.tools.caches.pods.by_index(BY_OWNER_UID, uid):
        metadata = pod.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            continue
        if (metadata.get("labels") or {}).get(LabelKey.NODE_TYPE) == NodeType.HEAD:
            return pod
    return None


def has_serve_endpoint(run: ServiceRun, cluster: Object) -> bool:
    """Whether a pod of ``cluster`` would be a ready endpoint of the serve Service now:
    labelled ``ray.io/serve=true`` and Ready.

    KubeRay switches ``<s>-serve-svc`` as soon as the pending cluster's apps are RUNNING.
    A worker's readiness (its probe asks the Serve proxy) and the head's serve label
    lag that by a probe period or more, and until one pod qualifies the Service has no
    endpoint, so kube-proxy refuses every call: 9 refused calls in one switch on the real
    node under load (tests/node/test_rayservice_under_traffic.py; KubeRay #5148)."""
    uid = str(cluster["metadata"].get("uid") or "")
    return any(
        ((pod.get("metadata") or {}).get("labels") or {}).get(LabelKey.SERVE) == "true"
        and pod_ready(pod)
        and not being_deleted(pod)
        for pod in run.tools.caches.pods.by_index(BY_OWNER_UID, uid)
    )


def update_head_serve_label(run: ServiceRun, cluster: Object | None) -> None:
    """``ray.io/serve`` on the head: "true" while its serve proxy answers /-/healthz."""
    if cluster is None:
        return
    pod = head_pod(run, cluster)
    if pod is None:
        raise TemporaryError(
            f"found 0 head. cluster name {cluster['metadata']['name']}, namespace {run.namespace}"
        )
    new = "false"
    if not run.service.spec.exclude_head_pod_from_serve_svc:
        try:
            new = str(
                run.tools.dashboards.serve_proxy(pod, run.serve_port(cluster)).healthy()
            ).lower()
        except DashboardUnavailable:
            new = "false"
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(LabelKey.SERVE) == new:
        return
    name = str(pod["metadata"]["name"])
    patch = {"metadata": {"labels": {LabelKey.SERVE.value: new}}}
    try:
        run.tools.client.patch(kinds.POD, name, run.namespace, patch)
    except ApiError as exc:
        run.event(
            "Warning",
            "FailedToUpdateHeadPodServeLabel",
            f"Failed to update the serve "
            f"label to {new!r} for the Head Pod {run.namespace}/{name}: {exc}",
            Action.UPDATE,
        )
        raise
    run.event(
        "Normal",
        "UpdatedHeadPodServeLabel",
        f"Updated the serve label to {new!r} for the Head Pod {run.namespace}/{name}",
        Action.UPDATE,
    )


def reconcile_serve(run: ServiceRun, cluster: Object) -> tuple[bool, dict[str, Any] | None]:
    """Whether every application on ``cluster`` is RUNNING, and their statuses; PUTs
    the serve config when the cluster does not run it.

    The statuses are read before the PUT, as KubeRay reads them. A pass that PUTs
    never answers ready: what it read describes the config the cluster ran before
    (a head that already serves an application of the same name, an operator
    restarted with an empty cache), and KubeRay would promote a cluster on it."""
    conditions = (cluster.get("status") or {}).get("conditions") or ()
    if not is_true(conditions, HEAD_POD_READY):
        return False, None
    tools = run.tools
    url = tools.dashboards.head_url(
        cluster, tools.caches.services, tools.options.render.cluster_domain
    )
    dashboard = tools.dashboards.for_cluster(cluster, url)
    name = str(cluster["metadata"]["name"])
    try:
        ready, applications = _serve_status(dashboard)
    except DashboardUnavailable as exc:
        # A head whose dashboard is not up yet (or went) is expected, not a fault of
        # ours: the same per-key backoff as any error (KubeRay returns it as one), logged
        # on one line. Formatting a traceback on every one of these passes cost more
        # than the pass itself when 100 RayServices started at once (benchmarks/README.md).
        raise TemporaryError(f"RayCluster {run.namespace}/{name}: {exc}") from exc
    goal = run.service.spec.serve_config_v2 or ""
    given = given_config(run, cluster)
    if (given is None or not applications or given != goal) and receives_goal(run, name):
        _put_config(run, dashboard, cluster, target_capacity=_side_capacity(run, name))
        ready = False
    if run.incremental and run.is_true(UPGRADE_IN_PROGRESS):
        step_target_capacity(run, dashboard, cluster)
    return ready, applications


def receives_goal(run: ServiceRun, cluster_name: str) -> bool:
    """Whether ``cluster_name`` is the cluster meant to run ``serveConfigV2``: the
    pending cluster (unless a rollback is taking traffic back from it), else the active
    one (alone, or taking traffic back). Every other cluster keeps what it was given."""
    pending = run.cluster_name(PENDING)
    rolling_back = run.incremental and run.is_true(ROLLBACK_IN_PROGRESS)
    if pending and cluster_name == pending:
        return not rolling_back
    if cluster_name == run.cluster_name(ACTIVE):
        return not pending or rolling_back
    return False


def config_hash(config: str) -> str:
    return hashlib.sha256(config.encode()).hexdigest()


def given_config(run: ServiceRun, cluster: Object) -> str | None:
    """The serve config ``cluster`` was last given; None when nothing says.

    This process's cache first: it holds the last PUT this process made, never older
    than the annotations (a process that loses the leader Lease exits, so another
    leader's PUTs never overtake it), and newer while the informer has not yet seen
    our annotation patch. Then the annotations: the recorded text when it matches the
    recorded hash, or ``serveConfigV2`` when the hash is its hash."""
    name = str(cluster["metadata"]["name"])
    cached = run.tools.serve_configs.get(run.cache_key, name)
    if cached:
        return cached
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    digest = str(annotations.get(AnnotationKey.SERVE_CONFIG_HASH) or "")
    if not digest:
        return None
    text = annotations.get(AnnotationKey.SERVE_CONFIG)
    if isinstance(text, str) and config_hash(text) == digest:
        return text
    goal = run.service.spec.serve_config_v2 or ""
    return goal if goal and config_hash(goal) == digest else None


def _serve_status(dashboard: DashboardClient) -> tuple[bool, dict[str, Any]]:
    details = dashboard.serve_details()
    applications: dict[str, Any] = {}
    ready = bool(details.applications)
    for app_name, app in details.applications.items():
        if app.status != APP_RUNNING:
            ready = False
        entry: dict[str, Any] = {"status": app.status}
        if app.message:
            entry["message"] = app.message
        deployments = {
            d_name: {k: v for k, v in (("status", d.status), ("message", d.message)) if v}
            for d_name, d in app.deployments.items()
        }
        if deployments:
            entry["serveDeploymentStatuses"] = deployments
        applications[app_name or DEFAULT_APP_NAME] = entry
    return ready, applications


def _side_capacity(run: ServiceRun, cluster_name: str) -> int | None:
    if not run.incremental:
        return None
    for which in (ACTIVE, PENDING):
        side = run.status.get(which) or {}
        if side.get("rayClusterName") == cluster_name and side.get("targetCapacity") is not None:
            return int(side["targetCapacity"])
    return None


def _put_config(
    run: ServiceRun, dashboard: DashboardClient, cluster: Object, *, target_capacity: int | None
) -> None:
    cluster_name = str(cluster["metadata"]["name"])
    body = serve_config_body(run.service, target_capacity=target_capacity)
    try:
        dashboard.deploy_serve(body)
    except DashboardError as exc:
        run.event(
            "Warning",
            "FailedToUpdateServeApplications",
            "Failed to update serve "
            f"applications to the RayCluster {run.namespace}/{cluster_name}: {exc}",
            Action.UPDATE,
        )
        raise
    config = run.service.spec.serve_config_v2 or ""
    run.tools.serve_configs.put(run.cache_key, cluster_name, config)
    _record_config(run, cluster_name, config)
    run.event(
        "Normal",
        "UpdatedServeApplications",
        f"Updated serve applications to the RayCluster {run.namespace}/{cluster_name}",
        Action.UPDATE,
    )


def _record_config(run: ServiceRun, cluster_name: str, config: str) -> None:
    """The config just PUT, on the cluster: after the PUT, so a record never claims a
    config the head did not accept (a crash in between costs one PUT again). An empty
    config is not recorded: it is PUT on every pass, as before."""
    if not config:
        return

    def record(text: str | None) -> None:
        # A merge patch: None removes an older text that no longer matches the hash.
        annotations = {
            AnnotationKey.SERVE_CONFIG_HASH.value: config_hash(config),
            AnnotationKey.SERVE_CONFIG.value: text,
        }
        patch = {"metadata": {"annotations": annotations}}
        with contextlib.suppress(NotFound):  # the cluster is gone: nothing to record
            run.tools.client.patch(kinds.RAY_CLUSTER, cluster_name, run.namespace, patch)

    if len(config.encode()) > RECORDED_CONFIG_LIMIT:
        record(None)
        return
    try:
        record(config)
    except Invalid:
        record(None)  # with the user's own annotations, too large: the hash alone


# -- incremental upgrade: target_capacity ----------------------------------------------


def step_target_capacity(run: ServiceRun, dashboard: DashboardClient, cluster: Object) -> None:
    """Move this cluster's serve ``target_capacity`` one step (``maxSurgePercent``), once
    the traffic has caught up with the pending cluster's capacity (KubeRay §5.4)."""
    cluster_name = str(cluster["metadata"]["name"])
    if not traffic.routing_ready(run):
        return
    active, pending = run.side(ACTIVE), run.side(PENDING)
    if not active.get("rayClusterName") or not pending.get("rayClusterName"):
        return
    active.setdefault("targetCapacity", 100)
    pending.setdefault("targetCapacity", 0)
    # An upgrade moves capacity to the pending cluster, a rollback back to the active one.
    gaining, losing = (active, pending) if run.is_true(ROLLBACK_IN_PROGRESS) else (pending, active)
    gain, lose = int(gaining["targetCapacity"]), int(losing["targetCapacity"])
    if gain == 100 and lose == 0:
        return
    if gain != int(gaining.get("trafficRoutedPercent", 0)):
        return
    gained, lost = capacity_step(gain, lose, traffic.max_surge(run))
    if gain + lose > 100:
        if cluster_name == losing["rayClusterName"]:
            _apply_capacity(run, dashboard, cluster, lost)
    elif cluster_name == gaining["rayClusterName"]:
        _apply_capacity(run, dashboard, cluster, gained)


def _apply_capacity(
    run: ServiceRun, dashboard: DashboardClient, cluster: Object, goal: int
) -> None:
    """PUT the config this cluster was given (``given_config``) with ``target_capacity``
    = ``goal``. During an upgrade the active cluster was given the old config: sending
    ``serveConfigV2`` would deploy the new applications onto the old cluster while only
    its capacity was to change, so when nothing records what it was given, nothing is
    sent. Nothing is sent either when that config already carries ``goal`` (KubeRay's
    applyServeTargetCapacity)."""
    cluster_name = str(cluster["metadata"]["name"])
    config = given_config(run, cluster)
    if config is None:
        run.event(
            "Warning",
            "FailedToUpdateTargetCapacity",
            f"Not updating target_capacity of the RayCluster {run.namespace}/{cluster_name}: "
            f"no record of the serve config it runs (annotation "
            f"{AnnotationKey.SERVE_CONFIG_HASH.value}), and it is not to run serveConfigV2",
            Action.UPDATE,
        )
        return
    spec = run.service.spec.model_copy(update={"serve_config_v2": config})
    service = run.service.model_copy(update={"spec": spec})
    if serve_config_body(service).get("target_capacity") == goal:
        return
    try:
        dashboard.deploy_serve(serve_config_body(service, target_capacity=goal))
    except DashboardError as exc:
        run.event(
            "Warning",
            "FailedToUpdateTargetCapacity",
            "Failed to update target_capacity "
            f"of serve applications to the RayCluster {run.namespace}/{cluster_name}: "
            f"{exc}",
            Action.UPDATE,
        )
        raise
    for which in (ACTIVE, PENDING):
        side = run.side(which)
        if side.get("rayClusterName") == cluster_name:
            side["targetCapacity"] = goal
    run.event(
        "Normal",
        "UpdatedServeTargetCapacity",
        "Updated target_capacity of serve "
        f"applications to {goal} on the RayCluster {run.namespace}/{cluster_name}",
        Action.UPDATE,
    )
