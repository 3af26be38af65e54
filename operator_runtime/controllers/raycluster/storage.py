"""The RocksDB GCS volume (``gcsFaultToleranceOptions.storage``, embedded backend).

An operator-managed claim is created once and never rebuilt: size, class and access
modes of a bound PVC cannot change in place, so drift is reported, not "fixed". Only
its owner reference follows ``deletionPolicy`` (Retain = no owner, so the data
outlives the cluster). A user's ``claimName`` is only checked for existence.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Final

from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.reasons import Action, Reason
from operator_runtime.controllers.raycluster.children import create_child
from operator_runtime.controllers.raycluster.run import ClusterRun, loose, need
from operator_runtime.render import GcsStoragePvcParams, build_gcs_storage_pvc, owner_reference
from operator_runtime.render.gcsft import ft_embedded, ft_enabled
from operator_runtime.render.names import gcs_storage_pvc_name
from operator_runtime.render.quantity import QuantityError, parse_quantity
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import PERSISTENT_VOLUME_CLAIM, Object

PVC_NEEDS: Final = (
    need(
        "",
        "persistentvolumeclaims",
        ("list", "watch", "create", "update"),
        "the RocksDB GCS volume; its owner reference follows deletionPolicy",
    ),
    need("", "persistentvolumeclaims", ("get",), "a user's claimName must exist"),
)


def reconcile_gcs_storage_pvc(run: ClusterRun) -> None:
    cluster = run.cluster
    options = cluster.spec.gcs_fault_tolerance_options
    if options is None or not (ft_enabled(cluster) and ft_embedded(cluster)):
        return
    name = gcs_storage_pvc_name(cluster)
    if options.storage is not None and options.storage.claim_name:
        try:
            run.tools.client.get(PERSISTENT_VOLUME_CLAIM, name, run.namespace)
        except NotFound:
            run.event(
                "Warning",
                Reason.FAILED_TO_CREATE_PVC,
                f"GcsFaultToleranceOptions.Storage.ClaimName {name!r} not found in "
                f"namespace {run.namespace}; the head Pod will not start until it exists",
                Action.VALIDATE,
            )
        return
    desired = loose(build_gcs_storage_pvc(params=GcsStoragePvcParams(cluster=cluster)))
    existing = run.tools.caches.pvcs.get(run.namespace, name)
    if existing is None:
        marked = copy.deepcopy(desired)
        marked["metadata"].setdefault("annotations", {})[
            AnnotationKey.GCS_STORAGE_CREATOR_UID.value
        ] = run.uid
        create_child(
            run,
            marked,
            what="GCS storage PVC",
            created=Reason.CREATED_PVC,
            failed=Reason.FAILED_TO_CREATE_PVC,
        )
        return
    drift = pvc_drift(desired, existing)
    if drift:
        run.event(
            "Warning",
            Reason.FAILED_TO_CREATE_PVC,
            f"GCS storage PVC {run.namespace}/{name} already exists and cannot be "
            f"reconfigured in place ({drift}); delete the PVC to recreate it with the "
            "new settings",
            Action.UPDATE,
        )
    _align_owner(run, existing, retain="ownerReferences" not in desired["metadata"])


def _align_owner(run: ClusterRun, pvc: Object, *, retain: bool) -> None:
    owned = run.controls(pvc)
    if owned == (not retain):
        return
    if not owned and not _created_by(run, pvc):
        # KubeRay adopts any claim of this name; one someone else made (or one a
        # deleted namesake retained) would then be garbage-collected with this
        # cluster. It is used as it is, never owned.
        run.event(
            "Warning",
            Reason.FAILED_TO_CREATE_PVC,
            f"GCS storage PVC {run.namespace}/{pvc['metadata']['name']} was not created by "
            "this RayCluster; it is used but not adopted (deletionPolicy has no effect on "
            "it)",
            Action.UPDATE,
        )
        return
    updated = copy.deepcopy(pvc)
    refs = [r for r in updated["metadata"].get("ownerReferences") or () if r.get("uid") != run.uid]
    if not retain:
        refs.append(owner_reference(run.cluster))
    updated["metadata"]["ownerReferences"] = refs
    run.tools.client.update(updated)


def _created_by(run: ClusterRun, pvc: Object) -> bool:
    annotations = pvc["metadata"].get("annotations") or {}
    return bool(run.uid) and annotations.get(AnnotationKey.GCS_STORAGE_CREATOR_UID) == run.uid


def pvc_drift(desired: Object, existing: Object) -> str:
    """What differs in the fields a bound claim cannot change, or ""."""
    want, have = desired.get("spec") or {}, existing.get("spec") or {}
    diffs: list[str] = []
    want_size = ((want.get("resources") or {}).get("requests") or {}).get("storage")
    have_size = ((have.get("resources") or {}).get("requests") or {}).get("storage")
    try:
        same = parse_quantity(str(want_size)) == parse_quantity(str(have_size))
    except QuantityError:
        same = want_size == have_size
    if not same:
        diffs.append(f"requested size {want_size} != current {have_size}")
    # Unset means "the default class"; the live claim then names the resolved default.
    if want.get("storageClassName") is not None and want.get("storageClassName") != have.get(
        "storageClassName"
    ):
        diffs.append(
            f"storageClassName {want.get('storageClassName')} != current "
            f"{have.get('storageClassName') or '<default>'}"
        )
    if Counter(want.get("accessModes") or ()) != Counter(have.get("accessModes") or ()):
        diffs.append(f"accessModes {want.get('accessModes')} != current {have.get('accessModes')}")
    return "; ".join(diffs)
