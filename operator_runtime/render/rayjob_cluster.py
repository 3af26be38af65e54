"""The RayCluster a RayJob creates for one attempt (KubeRay's constructRayClusterForRayJob).

The cluster carries the RayJob's labels and annotations, a copy of ``rayClusterSpec``
and the RayJob as its controller, so deleting the RayJob deletes it. In SidecarMode the
submitter runs in the head pod: the cluster gets the submitter container, a head pod that
is never restarted (a restarted head would submit again), and the annotation that stops
the RayCluster controller from recreating a head pod once it has run.
"""

from __future__ import annotations

from operator_runtime.api import JSONObject, ObjectMeta, RayCluster, RayJob
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.labels import LabelKey
from operator_runtime.render._json import child, child_list, sorted_map
from operator_runtime.render.batchscheduler import add_child_metadata
from operator_runtime.render.jobs import (
    SIDECAR_RESTART_GATE,
    SubmitterParams,
    sidecar_submitter_container,
)
from operator_runtime.render.metadata import owner_reference
from operator_runtime.render.names import namespace_of
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.pods import RenderError


def rayjob_cluster_labels(job: RayJob) -> dict[str, str]:
    """The RayJob's labels, plus where the cluster came from and how the job is submitted
    (the RayCluster controller reads ``originated-from-crd``)."""
    return {
        **(job.metadata.labels or {}),
        LabelKey.ORIGINATED_FROM_CR_NAME: job.metadata.name or "",
        LabelKey.ORIGINATED_FROM_CRD: "RayJob",
        LabelKey.JOB_SUBMISSION_MODE: job.spec.submission_mode,
    }


def build_rayjob_cluster(
    *, job: RayJob, cluster_name: str, job_id: str, options: RenderOptions | None = None
) -> JSONObject:
    """The RayCluster ``cluster_name`` (``<j>-<rand5>``) for ``job``, as plain JSON.

    ``job_id`` is the submission id the SidecarMode submitter uses; its dashboard address
    is ``status.dashboardURL`` as it stands (empty while the cluster is being created, as
    in KubeRay). Raises ``RenderError`` for a RayJob without ``rayClusterSpec``.
    """
    options = options or RenderOptions()
    if job.spec.ray_cluster_spec is None:
        raise RenderError("spec.rayClusterSpec: a RayJob with clusterSelector creates no cluster")
    sidecar = job.spec.submission_mode == "SidecarMode"
    annotations = dict(job.metadata.annotations or {})
    if sidecar:
        annotations[AnnotationKey.DISABLE_PROVISIONED_HEAD_RESTART] = "true"
    meta: JSONObject = {
        "name": cluster_name,
        "namespace": namespace_of(job),
        "labels": sorted_map(rayjob_cluster_labels(job)),
    }
    if annotations:
        meta["annotations"] = sorted_map(annotations)
    meta["ownerReferences"] = [owner_reference(job)]
    spec = job.spec.ray_cluster_spec.to_dict()
    if sidecar:
        cluster = RayCluster(
            metadata=ObjectMeta(name=cluster_name, namespace=namespace_of(job)),
            spec=job.spec.ray_cluster_spec,
        )
        status = job.status
        params = SubmitterParams(
            job=job,
            job_id=job_id,
            dashboard_url=(status.dashboard_url if status is not None else None) or "",
            options=options,
            cluster=cluster,
        )
        restart_gate = options.feature_gates.enabled(SIDECAR_RESTART_GATE)
        submitter = sidecar_submitter_container(params, restart_gate=restart_gate)
        pod_spec = child(child(child(spec, "headGroupSpec"), "template"), "spec")
        child_list(pod_spec, "containers").append(submitter)
        # Without the restart gate the submitter must never run twice, so neither may the
        # head pod's containers; with it, the submitter's own rule restarts just itself.
        pod_spec["restartPolicy"] = "Never"
    cluster_object: JSONObject = {
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta, "spec": spec,
    }  # fmt: skip
    if job.spec.submission_mode == "K8sJobMode":
        # KubeRay stamps only a K8sJobMode job's cluster; in the other modes the cluster's
        # pods still find the RayJob's gang through the labels it copied from the RayJob.
        add_child_metadata(
            options.batch_scheduler, parent=job, child_object=cluster_object, kind="RayCluster",
            group_name="",
        )  # fmt: skip
    return cluster_object
