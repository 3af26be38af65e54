"""Resource steps for the objects around the pods: autoscaler RBAC, Ingress, auth
Secret and Services. Each builds its object with ``render`` and creates it when the
cache has none; only the Ingress is also corrected when it drifts (KubeRay's rules).
The RocksDB PVC step lives in ``storage.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from operator_runtime.api import JSONObject
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.api.reasons import Action, Reason
from operator_runtime.controllers.raycluster.run import ClusterRun, loose, need
from operator_runtime.render import (
    AuthSecretParams,
    AutoscalerRbacParams,
    IngressParams,
    ServiceParams,
    build_auth_secret,
    build_autoscaler_role,
    build_autoscaler_role_binding,
    build_autoscaler_service_account,
    build_head_ingress,
    build_head_service,
    build_headless_service,
    build_serve_service,
    check_name,
)
from operator_runtime.render.names import (
    auth_secret_name,
    autoscaler_service_account_name,
    cluster_name,
    serve_service_name,
)
from operator_runtime.render.services import needs_headless_service
from operator_runtime.render.storage import auth_secret_needed
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.errors import AlreadyExists, ApiError, NotFound
from operator_runtime.runtime.kinds import SECRET, SERVICE_ACCOUNT, Object

log = logging.getLogger(__name__)
_CACHE = ("list", "watch")


def create_child(
    run: ClusterRun,
    obj: JSONObject,
    *,
    what: str,
    created: Reason | None,
    failed: Reason | None,
) -> Object | None:
    """Create an object this cluster owns; an existing namesake is left alone (None).
    Events are recorded only where KubeRay records them (``None``: no event)."""
    metadata = obj["metadata"]
    assert isinstance(metadata, dict)
    ref = f"{metadata.get('namespace')}/{metadata.get('name') or metadata.get('generateName')}"
    try:
        result = run.tools.client.create(obj)
    except AlreadyExists:
        log.info("%s %s already exists", what, ref)
        return None
    except ApiError as exc:
        if failed is not None:
            run.event("Warning", failed, f"Failed creating {what} {ref}, {exc}", Action.CREATE)
        raise
    name = result["metadata"]["name"]
    if created is not None:
        run.event(
            "Normal", created, f"Created {what} {metadata.get('namespace')}/{name}", Action.CREATE
        )
    return result


def create_missing(
    run: ClusterRun,
    cache: Cache,
    name: str,
    render: Callable[[], JSONObject],
    *,
    what: str,
    created: Reason | None,
    failed: Reason | None,
) -> None:
    """Create what ``render`` builds unless ``cache`` already holds ``name``. Rendering
    waits until then: it may draw a random token."""
    if cache.get(run.namespace, name) is None:
        create_child(run, render(), what=what, created=created, failed=failed)


def _autoscaling(run: ClusterRun) -> bool:
    return bool(run.cluster.spec.enable_in_tree_autoscaling)


AUTOSCALER_SERVICE_ACCOUNT_NEEDS: Final = (
    need("", "serviceaccounts", (*_CACHE, "create"), "the autoscaler's ServiceAccount"),
    need("", "serviceaccounts", ("get",), "a user-named autoscaler ServiceAccount must exist"),
)


def reconcile_autoscaler_service_account(run: ClusterRun) -> None:
    if not _autoscaling(run):
        return
    cluster = run.cluster
    name = check_name(autoscaler_service_account_name(cluster))
    if run.tools.caches.service_accounts.get(run.namespace, name) is not None:
        return
    head_spec = cluster.spec.head_group_spec.template.get("spec")
    user_named = isinstance(head_spec, dict) and head_spec.get("serviceAccountName") == name
    if user_named:
        # Not ours, so not in our label-filtered cache: ask the API server once.
        try:
            run.tools.client.get(SERVICE_ACCOUNT, name, run.namespace)
        except NotFound:
            run.event(
                "Warning",
                Reason.AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND,
                f"Failed to reconcile RayCluster {run.namespace}/{run.name}. The head pod names "
                f"the ServiceAccount {name}, which does not exist; create it (the operator only "
                "creates one when the head pod names none).",
                Action.VALIDATE,
            )
            raise
        return
    create_child(
        run,
        build_autoscaler_service_account(params=AutoscalerRbacParams(cluster)),
        what="service account",
        created=Reason.CREATED_SERVICE_ACCOUNT,
        failed=Reason.FAILED_TO_CREATE_SERVICE_ACCOUNT,
    )


AUTOSCALER_ROLE_NEEDS: Final = (
    need("rbac.authorization.k8s.io", "roles", (*_CACHE, "create"), "the autoscaler's Role"),
    # RBAC lets a Role (and its binding) grant only what its creator holds.
    need("", "pods", ("get", "list", "watch", "patch"), "granted to the autoscaler Role"),
    need("", "pods/resize", ("patch",), "granted to the autoscaler Role"),
    need("ray.io", "rayclusters", ("get", "patch"), "granted to the autoscaler Role"),
)


def reconcile_autoscaler_role(run: ClusterRun) -> None:
    if not _autoscaling(run):
        return
    create_missing(
        run,
        run.tools.caches.roles,
        check_name(run.name),
        lambda: build_autoscaler_role(params=AutoscalerRbacParams(run.cluster)),
        what="role",
        created=Reason.CREATED_ROLE,
        failed=Reason.FAILED_TO_CREATE_ROLE,
    )


AUTOSCALER_ROLE_BINDING_NEEDS: Final = (
    need(
        "rbac.authorization.k8s.io",
        "rolebindings",
        (*_CACHE, "create"),
        "binds the autoscaler Role to its ServiceAccount",
    ),
)


def reconcile_autoscaler_role_binding(run: ClusterRun) -> None:
    if not _autoscaling(run):
        return
    create_missing(
        run,
        run.tools.caches.role_bindings,
        check_name(run.name),
        lambda: build_autoscaler_role_binding(params=AutoscalerRbacParams(run.cluster)),
        what="role binding",
        created=Reason.CREATED_ROLE_BINDING,
        failed=Reason.FAILED_TO_CREATE_ROLE_BINDING,
    )


INGRESS_NEEDS: Final = (
    need(
        "networking.k8s.io",
        "ingresses",
        (*_CACHE, "create", "update"),
        "the dashboard Ingress, corrected when it drifts",
    ),
)


def reconcile_ingress(run: ClusterRun) -> None:
    if not run.cluster.spec.head_group_spec.enable_ingress:
        return
    desired = loose(build_head_ingress(params=IngressParams(cluster=run.cluster)))
    name = str(desired["metadata"]["name"])
    existing = run.tools.caches.ingresses.get(run.namespace, name)
    if existing is None:
        if (
            create_child(
                run,
                desired,
                what="ingress",
                created=Reason.CREATED_INGRESS,
                failed=Reason.FAILED_TO_CREATE_INGRESS,
            )
            is None
        ):
            _foreign_ingress(run, name)
        return
    if not run.controls(existing):
        _foreign_ingress(run, name)
        return
    updated = _ingress_update(existing, desired)
    if updated is None:
        return
    try:
        run.tools.client.update(updated)
    except ApiError as exc:
        run.event(
            "Warning",
            Reason.FAILED_TO_UPDATE_INGRESS,
            f"Failed updating ingress {run.namespace}/{name}, {exc}",
            Action.UPDATE,
        )
        raise
    run.event(
        "Normal", Reason.UPDATED_INGRESS, f"Updated ingress {run.namespace}/{name}", Action.UPDATE
    )


def _foreign_ingress(run: ClusterRun, name: str) -> None:
    run.event(
        "Warning",
        Reason.FAILED_TO_CREATE_INGRESS,
        f"Ingress {run.namespace}/{name} already exists and is not owned by this "
        "RayCluster; not modifying it",
        Action.CREATE,
    )


def _ingress_update(existing: Object, desired: Object) -> Object | None:
    """The existing Ingress with the desired labels, annotations and spec, or None."""
    meta, want_meta = existing["metadata"], desired["metadata"]
    spec = dict(desired["spec"])
    # Without a class of ours, keep what an admission plugin may have set.
    if "ingressClassName" not in spec and "ingressClassName" in (existing.get("spec") or {}):
        spec = {"ingressClassName": existing["spec"]["ingressClassName"], **spec}
    want = {
        "labels": want_meta.get("labels") or {},
        "annotations": want_meta.get("annotations") or {},
    }
    if (
        (meta.get("labels") or {}) == want["labels"]
        and (meta.get("annotations") or {}) == want["annotations"]
        and existing.get("spec") == spec
    ):
        return None
    return {**existing, "metadata": {**meta, **want}, "spec": spec}


AUTH_SECRET_NEEDS: Final = (
    need("", "secrets", ("get", "create"), "the generated auth token Secret, by name"),
)


def reconcile_auth_secret(run: ClusterRun) -> None:
    """Read the one Secret by name instead of caching Secrets: a cache would need
    list/watch on every Secret of every watched namespace, and hold them all in memory,
    to know about one."""
    if not auth_secret_needed(run.cluster):
        return
    name = auth_secret_name(run.cluster)
    try:
        run.tools.client.get(SECRET, name, run.namespace)
        return
    except NotFound:
        pass
    secret = build_auth_secret(params=AuthSecretParams(run.cluster, run.tools.new_token()))
    create_child(run, secret, what="secret", created=None, failed=None)


SERVICE_NEEDS: Final = (
    need("", "services", (*_CACHE, "create"), "head, headless and serve Services"),
)


def head_services(run: ClusterRun) -> list[Object]:
    """Services carrying this cluster's head labels (KubeRay finds the head Service by
    labels, not by name, so a renamed ``headService`` is still found)."""
    wanted = {LabelKey.CLUSTER.value: run.name, LabelKey.NODE_TYPE.value: NodeType.HEAD.value}
    return _services_labelled(run, wanted)


def _services_labelled(run: ClusterRun, wanted: dict[str, str]) -> list[Object]:
    return [
        s
        for s in run.tools.caches.services.list(run.namespace)
        if all((s["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())
    ]


def reconcile_head_service(run: ClusterRun) -> None:
    found = head_services(run)
    if len(found) > 1:
        names = sorted(s["metadata"]["name"] for s in found)
        raise RuntimeError(f"{len(found)} head Services found {names}; delete the extra ones")
    if found:
        return
    service = loose(build_head_service(params=ServiceParams(run.cluster, run.tools.options.render)))
    if not (service.get("spec") or {}).get("ports"):
        raise RuntimeError("the head Service would have no ports; name the head ports")
    _create_service(run, service)


def reconcile_headless_service(run: ClusterRun) -> None:
    if not needs_headless_service(run.cluster):
        return
    if _services_labelled(run, {LabelKey.HEADLESS_WORKER_SVC.value: run.name}):
        return
    _create_service(run, build_headless_service(params=ServiceParams(run.cluster)))


def reconcile_serve_service(run: ClusterRun) -> None:
    annotations = run.cluster.metadata.annotations or {}
    if annotations.get(AnnotationKey.ENABLE_SERVE_SERVICE) != "true":
        return
    # KubeRay records no event for this one.
    create_missing(
        run,
        run.tools.caches.services,
        serve_service_name(cluster_name(run.cluster)),
        lambda: build_serve_service(params=ServiceParams(run.cluster)),
        what="service",
        created=None,
        failed=None,
    )


def _create_service(run: ClusterRun, service: JSONObject) -> None:
    create_child(
        run,
        service,
        what="service",
        created=Reason.CREATED_SERVICE,
        failed=Reason.FAILED_TO_CREATE_SERVICE,
    )
