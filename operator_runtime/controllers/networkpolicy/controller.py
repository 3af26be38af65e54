"""The NetworkPolicy controller: KubeRay v1.7.0's ``networkpolicy_controller.go``
(gate ``RayClusterNetworkPolicy``), a controller of its own beside the RayCluster one.

One pass over a RayCluster (``reconcile``):

1. gone, being deleted, or managed by another controller (``spec.managedBy``):
   nothing (a gone cluster's policies go with it, by owner reference);
2. no ``spec.networkPolicy``: the policies it had are deleted (step 5), no others;
3. the head's policy, then each worker group's, in spec order (``render.networkpolicy``):
   created when missing; one of that name the cluster does not control is a name
   collision (a Warning, the pass fails and is retried with backoff, never written);
   ours is updated when its spec or labels differ;
4. any failure ends the pass there with a Warning and is retried with backoff;
5. the policies labelled with the cluster's name that it controls and no longer wants
   (a removed group, the field removed) are deleted.

The cluster is not validated here, as in KubeRay: the RayCluster controller reports an
invalid spec, and a policy the API server refuses gets a FailedToCreateNetworkPolicy
event. The cluster's events and the policies' events start passes; a cluster's
status write does not (its generation is unchanged).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import pydantic

from operator_runtime.api import RayCluster
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.labels import LabelKey
from operator_runtime.api.reasons import Action
from operator_runtime.api.reasons import NetworkPolicyReason as R
from operator_runtime.controllers.managedby import managed_elsewhere
from operator_runtime.controllers.permissions import declarer
from operator_runtime.render import (
    NetworkPolicyParams,
    Permission,
    build_network_policies,
    network_policy_matches,
)
from operator_runtime.runtime import kinds
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.errors import AlreadyExists, ApiError, NotFound, TemporaryError
from operator_runtime.runtime.events import EventRecorder, EventType
from operator_runtime.runtime.kinds import Object, ResourceKind
from operator_runtime.runtime.reconcile import (
    ObjectKey,
    Result,
    Watch,
    controlled_by,
    generation_changed,
    own,
    owned,
)

log = logging.getLogger(__name__)
NAME: Final = "networkpolicy"
"""The controller's name, also in the permission table (render/operator_permissions.py)."""
EVENT_SOURCE: Final = "networkpolicy-controller"
GATE: Final = "RayClusterNetworkPolicy"
POLICY_SELECTOR: Final = LabelKey.CLUSTER.value
"""Policies carrying ``ray.io/cluster``: every one a stale-policy sweep may delete (it
lists by that label). A namesake without it is found by the create's AlreadyExists."""

# Every cache the controller reads: PolicyCaches field -> (kind, label selector).
WATCHED: Final[dict[str, tuple[ResourceKind, str | None]]] = {
    "clusters": (kinds.RAY_CLUSTER, None),
    "policies": (kinds.NETWORK_POLICY, POLICY_SELECTOR),
}

need: Final = declarer(NAME, only_with=GATE)

PERMISSIONS: Final[tuple[Permission, ...]] = (
    *(
        need(kind.group, kind.plural, ("list", "watch"), "informer cache")
        for kind, _ in WATCHED.values()
    ),
    need(
        "networking.k8s.io",
        "networkpolicies",
        ("get", "create", "update", "delete"),
        "the head's and each worker group's NetworkPolicy; a namesake read on AlreadyExists",
    ),
)
"""Everything the controller uses: the permission table (render/operator_permissions.py)
is generated from it."""


def enabled(gates: FeatureGates) -> bool:
    """KubeRay starts the controller only with the ``RayClusterNetworkPolicy`` gate on."""
    return gates.enabled(GATE)


class NameCollision(TemporaryError):
    """A NetworkPolicy of the name the cluster needs belongs to someone else. Retried
    with backoff, as KubeRay does: renaming or deleting the namesake lets the next try
    through."""


@dataclass(frozen=True, slots=True)
class PolicyCaches:
    clusters: Cache
    policies: Cache


class NetworkPolicyController:
    """``Controller`` of the NetworkPolicies of ``ray.io/v1`` RayClusters."""

    name = NAME

    def __init__(self, context: ControllerContext) -> None:
        self.caches = PolicyCaches(**context.caches(WATCHED))
        self.client: KubeClient = context.client
        self.events: EventRecorder = context.events(EVENT_SOURCE)

    def watches(self) -> Sequence[Watch]:
        return [
            own(kinds.RAY_CLUSTER, predicate=generation_changed),
            owned(kinds.NETWORK_POLICY, kinds.RAY_CLUSTER, label_selector=POLICY_SELECTOR),
        ]

    def reconcile(self, key: ObjectKey) -> Result:
        raw = self.caches.clusters.get(key.namespace, key.name)
        if raw is None or kinds.being_deleted(raw) or managed_elsewhere(key, raw):
            return Result()
        try:
            cluster = RayCluster.model_validate(raw)
        except pydantic.ValidationError:
            # The RayCluster controller records why it cannot be read.
            log.info("%s: the RayCluster cannot be read; no NetworkPolicies", key)
            return Result()
        desired = build_network_policies_for(cluster)
        for policy in desired:
            self._create_or_update(raw, policy)
        self._delete_stale(raw, {str(p["metadata"]["name"]) for p in desired})
        return Result()

    def _event(
        self, cluster: Object, type_: EventType, reason: R, note: str, action: Action
    ) -> None:
        self.events.record(cluster, type_, reason.value, note, action.value)

    def _create_or_update(self, cluster: Object, desired: Object) -> None:
        namespace = str(cluster["metadata"].get("namespace") or "")
        name = str(desired["metadata"]["name"])
        ref = f"{namespace}/{name}"
        existing = self.caches.policies.get(namespace, name)
        if existing is None:
            try:
                self.client.create(desired)
            except AlreadyExists:
                # Not in our cache: not labelled as ours, or created since it was filled.
                existing = self.client.get(kinds.NETWORK_POLICY, name, namespace)
            except ApiError as exc:
                self._event(
                    cluster, "Warning", R.FAILED_TO_CREATE,
                    f"Failed to create NetworkPolicy {ref}: {exc}", Action.CREATE,
                )  # fmt: skip
                raise
            else:
                self._event(
                    cluster, "Normal", R.CREATED, f"Created NetworkPolicy {ref}", Action.CREATE
                )
                return
        if not controlled_by(existing, str(cluster["metadata"].get("uid") or "")):
            self._event(
                cluster, "Warning", R.NAME_COLLISION,
                f"NetworkPolicy {ref} already exists and this RayCluster does not own it, so "
                "its pods are not isolated; rename that NetworkPolicy or the RayCluster",
                Action.VALIDATE,
            )  # fmt: skip
            raise NameCollision(f"NetworkPolicy {ref} exists and is not owned by this RayCluster")
        if network_policy_matches(existing, desired):
            return
        updated = _with_desired(existing, desired)
        try:
            self.client.update(updated)
        except ApiError as exc:
            self._event(
                cluster, "Warning", R.FAILED_TO_UPDATE,
                f"Failed to update NetworkPolicy {ref}: {exc}", Action.UPDATE,
            )  # fmt: skip
            raise
        self._event(cluster, "Normal", R.UPDATED, f"Updated NetworkPolicy {ref}", Action.UPDATE)

    def _delete_stale(self, cluster: Object, wanted: set[str]) -> None:
        cached = self.caches.policies.list(_namespace(cluster))
        for policy in stale_policies(cached, cluster, wanted):
            metadata = policy["metadata"]
            ref = f"{metadata.get('namespace')}/{metadata['name']}"
            try:
                # The UID precondition: never a namesake that replaced what we looked at.
                self.client.delete(
                    kinds.NETWORK_POLICY, metadata["name"], metadata.get("namespace"),
                    uid=metadata.get("uid"),
                )  # fmt: skip
            except NotFound:
                continue
            except ApiError as exc:
                self._event(
                    cluster, "Warning", R.FAILED_TO_DELETE,
                    f"Failed to delete NetworkPolicy {ref}: {exc}", Action.DELETE,
                )  # fmt: skip
                raise
            self._event(cluster, "Normal", R.DELETED, f"Deleted NetworkPolicy {ref}", Action.DELETE)


def _namespace(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def build_network_policies_for(cluster: RayCluster) -> list[Object]:
    """The policies the cluster wants: none without ``spec.networkPolicy``."""
    return [dict(p) for p in build_network_policies(params=NetworkPolicyParams(cluster))]


def stale_policies(policies: Sequence[Object], cluster: Object, wanted: set[str]) -> list[Object]:
    """Of ``policies`` (one namespace's), those to delete: labelled with the cluster's
    name, controlled by it, and not ``wanted``. A policy someone else controls is left
    alone even when it carries the label."""
    metadata = cluster["metadata"]
    name, uid = str(metadata.get("name") or ""), str(metadata.get("uid") or "")
    return [
        policy
        for policy in policies
        if ((policy.get("metadata") or {}).get("labels") or {}).get(LabelKey.CLUSTER) == name
        and policy["metadata"].get("name") not in wanted
        and controlled_by(policy, uid)
    ]


def _with_desired(existing: Object, desired: Object) -> dict[str, Any]:
    """``existing`` (its resourceVersion, owners and the rest of its metadata kept) with
    the desired spec and exactly the desired labels."""
    metadata = {**existing["metadata"], "labels": dict(desired["metadata"].get("labels") or {})}
    return {**existing, "metadata": metadata, "spec": desired["spec"]}
