"""Everything the operator would create for one RayService at rest, in creation order.

The RayCluster (``<s>-<rand5>``, here ``<s>-xxxxx`` unless ``status`` names one), its
children (as for a RayCluster document), then what the controller adds once the
cluster's Serve applications run: ``<s>-head-svc`` and the serve Service. With an
incremental upgrade it is the cluster's own ``<cluster>-serve-svc`` instead, and the
Gateway and HTTPRoute sending all traffic to it. The Serve config itself goes to the
dashboard over HTTP and is not a Kubernetes object.
"""

from __future__ import annotations

from operator_runtime.api import JSONObject, RayCluster, RayService, validate_raycluster
from operator_runtime.render.cluster import ClusterRenderParams, render_cluster
from operator_runtime.render.gateway import build_gateway, build_httproute, cluster_serve_port
from operator_runtime.render.names import serve_service_name
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.pods import RenderError
from operator_runtime.render.rayjob import RANDOM_SUFFIX_STAND_IN
from operator_runtime.render.rayservice_cluster import (
    build_rayservice_cluster,
    incremental_upgrade_enabled,
)
from operator_runtime.render.services import (
    build_cluster_serve_service,
    build_rayservice_head_service,
    build_rayservice_serve_service,
)


def _cluster_name(service: RayService, notes: list[str]) -> str:
    status = service.status
    for side in (status.active_service_status, status.pending_service_status) if status else ():
        if side is not None and side.ray_cluster_name:
            return side.ray_cluster_name
    name = service.metadata.name or ""
    notes.append(
        f"the RayCluster is named {name}-<rand5>; KubeRay's 5 random characters, rendered "
        f"as '{RANDOM_SUFFIX_STAND_IN}' so the output is reproducible"
    )
    return f"{name}-{RANDOM_SUFFIX_STAND_IN}"


def render_rayservice(
    *, service: RayService, options: RenderOptions, include_redis_cleanup_job: bool = True
) -> tuple[tuple[JSONObject, ...], tuple[str, ...]]:
    """The objects, and notes on what is stood in for or left out.

    Raises ``RenderError`` (or ``InvalidObjectError`` for a RayCluster the RayCluster
    controller would refuse) as the controllers would fail.
    """
    notes: list[str] = []
    if service.spec.suspend:
        notes.append("spec.suspend is true: KubeRay creates nothing until it is false")
        return (), tuple(notes)
    name = _cluster_name(service, notes)
    document = build_rayservice_cluster(service=service, cluster_name=name, options=options)
    cluster = RayCluster.model_validate(document)
    validate_raycluster(cluster, options.feature_gates)
    children = render_cluster(
        params=ClusterRenderParams(
            cluster=cluster, options=options, include_redis_cleanup_job=include_redis_cleanup_job
        )
    )
    rendered = [document, *children]
    if incremental_upgrade_enabled(service, options.feature_gates):
        try:
            serve = build_cluster_serve_service(service=service, cluster=cluster)
        except RenderError as error:
            notes.append(f"nothing more is created (KubeRay fails every pass): {error}")
            return tuple(rendered), tuple(notes)
        backend = (serve_service_name(name), 100)
        route = build_httproute(
            service=service, backends=[backend], serve_port=cluster_serve_port(cluster)
        )
        rendered.extend((serve, build_gateway(service=service), route))
        rendered.append(
            build_rayservice_head_service(service=service, cluster=cluster, options=options)
        )
        notes.append(
            "incremental upgrade: the serve Service is the cluster's own; the HTTPRoute is "
            "shown at rest (all traffic on this cluster); during an upgrade it also carries "
            "the pending cluster's serve Service and the weights move in steps"
        )
    else:
        rendered.append(
            build_rayservice_head_service(service=service, cluster=cluster, options=options)
        )
        try:
            rendered.append(
                build_rayservice_serve_service(service=service, cluster=cluster, options=options)
            )
        except RenderError as error:
            notes.append(f"no serve Service, so the RayService never becomes Ready: {error}")
    notes.append(
        "the head and serve Services appear once the Serve applications of the cluster "
        "run; serveConfigV2 is sent to the Ray dashboard, not rendered"
    )
    return tuple(rendered), tuple(notes)
