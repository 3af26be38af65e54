"""Controller plugins for ``operator_rss.py``: a no-op controller whose informer caches
every pod labelled ``ray.io/cluster`` and nothing else, to separate the pod cache from the
rest of the RayCluster controller, and to price a slimmer projection."""

from __future__ import annotations

from collections.abc import Sequence

from operator_runtime.runtime.cache import keep_paths
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.kinds import POD
from operator_runtime.runtime.reconcile import ObjectKey, Result, Watch, own
from operator_runtime.runtime.registry import ControllerRegistry

SELECTOR = "ray.io/cluster"
# What a RayCluster reconciler reads from its pods (phase, readiness, node, restarts).
SLIM = keep_paths(
    [
        "metadata.annotations",
        "spec.nodeName",
        "status.phase",
        "status.conditions",
        "status.containerStatuses",
        "status.podIP",
    ]
)


class PodCache:
    name = "pod-cache"

    def __init__(self, context: ControllerContext, *, slim: bool) -> None:
        self.slim = slim

    def watches(self) -> Sequence[Watch]:
        return (own(POD, label_selector=SELECTOR, projection=SLIM if self.slim else None),)

    def reconcile(self, key: ObjectKey) -> Result:
        return Result()


def register(registry: ControllerRegistry) -> None:
    """Default projection: everything except managedFields and last-applied."""
    registry.register("pod-cache", lambda context: PodCache(context, slim=False))


def register_slim(registry: ControllerRegistry) -> None:
    """Only the fields a RayCluster reconciler reads."""
    registry.register("pod-cache", lambda context: PodCache(context, slim=True))
