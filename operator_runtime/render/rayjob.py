"""Everything the operator would create for one fresh RayJob, in creation order.

The RayCluster, its children (as for a RayCluster document), the ``<j>-head-svc``
Service and, in K8sJobMode, the submitter Job. KubeRay names the cluster and the job id
``<j>-<rand5>``; here the suffix is ``xxxxx`` (a valid draw from KubeRay's alphabet), so
the same RayJob always renders to the same bytes. Values a RayJob's ``status`` already
holds (``rayClusterName``, ``jobId``, ``dashboardURL``) are used as they are.
"""

from __future__ import annotations

from typing import Final

from operator_runtime.api import (
    JSONObject,
    ObjectMeta,
    RayCluster,
    RayClusterSpec,
    RayJob,
    validate_raycluster,
)
from operator_runtime.api.labels import LabelKey
from operator_runtime.render._json import obj, objects, text
from operator_runtime.render.batchscheduler import (
    VOLCANO,
    BatchSchedulerError,
    refuse_on_submission,
    volcano_pod_group_for,
)
from operator_runtime.render.cluster import ClusterRenderParams, render_cluster
from operator_runtime.render.containers import DEFAULT_DASHBOARD_PORT
from operator_runtime.render.jobs import SubmitterParams, build_submitter_job
from operator_runtime.render.names import head_fqdn, head_service_name, namespace_of
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.pods import RenderError
from operator_runtime.render.rayjob_cluster import build_rayjob_cluster
from operator_runtime.render.services import build_rayjob_head_service

RANDOM_SUFFIX_STAND_IN: Final = "xxxxx"
"""Stands for KubeRay's 5 random characters (alphabet ``bcdfghjklmnpqrstvwxz2456789``)."""

_MODE_NOTES: Final = {
    "HTTPMode": "HTTPMode: the operator submits the job to the dashboard over HTTP; "
    "there is no submitter Job",
    "InteractiveMode": "InteractiveMode: no job is submitted; the RayJob waits until the "
    "user sets spec.jobId to the id of a job they submitted",
    "SidecarMode": "SidecarMode: the submitter runs as the ray-job-submitter container of "
    "the head pod; there is no submitter Job",
}


def _stand_in_note(what: str) -> str:
    return (
        f"{what} KubeRay's 5 random characters, rendered as '{RANDOM_SUFFIX_STAND_IN}' so "
        "the output is reproducible"
    )


def _dashboard_url(children: list[JSONObject], cluster: RayCluster, domain: str) -> str | None:
    """``<head svc FQDN>:<its "dashboard" port>``, as the controller reads it from the
    head Service; None if that Service has no such port (KubeRay then never submits)."""
    name = head_service_name(cluster)
    for item in children:
        meta = obj(item.get("metadata"))
        if item.get("kind") != "Service" or meta.get("name") != name:
            continue
        for port in objects(obj(item.get("spec")).get("ports")):
            if text(port.get("name")) == "dashboard":
                return f"{head_fqdn(cluster, domain)}:{port.get('port')}"
    return None


def _selected_cluster(job: RayJob, name: str) -> RayCluster:
    """A stand-in for the cluster ``clusterSelector`` names: only its name is known."""
    image = f"<head image of RayCluster {name}>"
    head = {"containers": [{"name": "ray-head", "image": image}]}
    spec = RayClusterSpec.model_validate(
        {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": head}}}
    )
    return RayCluster(metadata=ObjectMeta(name=name, namespace=namespace_of(job)), spec=spec)


def _render_selector_job(
    job: RayJob, job_id: str, options: RenderOptions, notes: list[str]
) -> list[JSONObject]:
    name = (job.spec.cluster_selector or {}).get(LabelKey.CLUSTER, "")
    notes.append(
        f"clusterSelector: the job runs on the existing RayCluster {name!r}, which is not "
        "rendered; only the submitter Job is, with that cluster's dashboard on the default "
        f"port {DEFAULT_DASHBOARD_PORT}, its head image (unless submitterPodTemplate sets "
        "one) shown as a placeholder, and no token-auth env"
    )
    if job.spec.submission_mode != "K8sJobMode":
        return []
    cluster = _selected_cluster(job, name)
    status = job.status
    url = (status.dashboard_url if status is not None else None) or (
        f"{head_fqdn(cluster, options.cluster_domain)}:{DEFAULT_DASHBOARD_PORT}"
    )
    params = SubmitterParams(
        job=job, job_id=job_id, dashboard_url=url, options=options, cluster=cluster
    )
    return [build_submitter_job(params=params)]


def render_rayjob(
    *, job: RayJob, options: RenderOptions, include_redis_cleanup_job: bool = True
) -> tuple[tuple[JSONObject, ...], tuple[str, ...]]:
    """The objects, and notes on what is stood in for or left out.

    Raises ``RenderError`` (or ``InvalidObjectError`` for a RayCluster the RayCluster
    controller would refuse) as the controllers would fail.
    """
    name = job.metadata.name or ""
    notes: list[str] = []
    if job.spec.suspend:
        notes.append("spec.suspend is true: KubeRay creates nothing until it is false")
        return (), tuple(notes)
    status = job.status
    job_id = job.spec.job_id or (status.job_id if status is not None else None) or ""
    if not job_id and job.spec.submission_mode != "InteractiveMode":
        job_id = f"{name}-{RANDOM_SUFFIX_STAND_IN}"
        notes.append(_stand_in_note(f"the job id is {name}-<rand5>;"))
    if job.spec.submission_mode in _MODE_NOTES:
        notes.append(_MODE_NOTES[job.spec.submission_mode])
    try:  # the batch scheduler's refusals fail the render as they fail the operator's pass
        refuse_on_submission(options.batch_scheduler, job)
        gang = volcano_pod_group_for(job) if options.batch_scheduler == VOLCANO else None
    except BatchSchedulerError as error:
        raise RenderError(str(error)) from None
    if job.spec.cluster_selector:
        return tuple(_render_selector_job(job, job_id, options, notes)), tuple(notes)
    cluster_name = status.ray_cluster_name if status is not None else None
    if not cluster_name:
        cluster_name = f"{name}-{RANDOM_SUFFIX_STAND_IN}"
        notes.append(_stand_in_note(f"the RayCluster is named {name}-<rand5>;"))
    document = build_rayjob_cluster(
        job=job, cluster_name=cluster_name, job_id=job_id, options=options
    )
    cluster = RayCluster.model_validate(document)
    validate_raycluster(cluster, options.feature_gates)
    children = render_cluster(
        params=ClusterRenderParams(
            cluster=cluster, options=options, include_redis_cleanup_job=include_redis_cleanup_job
        )
    )
    # Volcano's group of the whole RayJob is made before its cluster (Initializing).
    rendered = [*([gang] if gang is not None else []), document, *children]
    rendered.append(build_rayjob_head_service(job=job, cluster=cluster, options=options))
    if job.spec.submission_mode == "K8sJobMode":
        url = (status.dashboard_url if status is not None else None) or _dashboard_url(
            children, cluster, options.cluster_domain
        )
        if url is None:
            notes.append(
                "the head Service has no 'dashboard' port, so the operator never learns the "
                "dashboard URL and never creates the submitter Job"
            )
        else:
            params = SubmitterParams(
                job=job, job_id=job_id, dashboard_url=url, options=options, cluster=cluster
            )
            rendered.append(build_submitter_job(params=params))
    return tuple(rendered), tuple(notes)
