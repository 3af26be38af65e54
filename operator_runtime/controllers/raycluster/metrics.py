"""KubeRay's ``kuberay_cluster_*`` metrics.

``kuberay_cluster_info`` and ``kuberay_cluster_condition_provisioned`` are computed on
scrape from the RayCluster cache, so they can never disagree with what exists (no
stale series for a deleted cluster). ``kuberay_cluster_provisioned_duration_seconds``
is an event, not a state: the reconciler records it once, when
``RayClusterProvisioned`` first turns True, and drops it with the cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric

from operator_runtime.api.labels import LabelKey
from operator_runtime.api.raycluster import PROVISIONED
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.kinds import Object

_INFO = "kuberay_cluster_info"
_PROVISIONED = "kuberay_cluster_condition_provisioned"
_DURATION = "kuberay_cluster_provisioned_duration_seconds"


class ClusterMetrics:
    """A prometheus collector over the RayCluster cache plus the recorded durations."""

    def __init__(self, clusters: Cache) -> None:
        self._clusters = clusters
        self._lock = threading.Lock()
        self._durations: dict[tuple[str, str, str], float] = {}

    def register(self, registry: CollectorRegistry) -> None:
        registry.register(self)

    def observe_provisioned(self, namespace: str, name: str, uid: str, seconds: float) -> None:
        with self._lock:
            self._durations[(namespace, name, uid)] = seconds

    def forget(self, namespace: str, name: str) -> None:
        """Drop the series of a deleted cluster (any UID: it is gone)."""
        with self._lock:
            for key in [k for k in self._durations if k[:2] == (namespace, name)]:
                del self._durations[key]

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def collect(self) -> Iterable[Metric]:
        info, provisioned, duration = self._families()
        for cluster in self._clusters.list():
            labels = _identity(cluster)
            owner = (cluster["metadata"].get("labels") or {}).get(
                LabelKey.ORIGINATED_FROM_CRD, "None"
            )
            info.add_metric([*labels, str(owner)], 1)
            provisioned.add_metric([*labels, "true" if _provisioned(cluster) else "false"], 1)
        with self._lock:
            durations = sorted(self._durations.items())
        for (namespace, name, uid), seconds in durations:
            duration.add_metric([name, namespace, uid], seconds)
        return [info, provisioned, duration]

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                _INFO,
                "Metadata information about RayCluster custom resources",
                labels=["name", "namespace", "uid", "owner_kind"],
            ),
            GaugeMetricFamily(
                _PROVISIONED,
                "Indicates whether the RayCluster is provisioned",
                labels=["name", "namespace", "uid", "condition"],
            ),
            GaugeMetricFamily(
                _DURATION,
                "The time, in seconds, when a RayCluster's `RayClusterProvisioned` status "
                "transitions from false (or unset) to true",
                labels=["name", "namespace", "uid"],
            ),
        )


def _identity(cluster: Object) -> list[str]:
    metadata = cluster["metadata"]
    return [
        str(metadata.get("name", "")),
        str(metadata.get("namespace", "")),
        str(metadata.get("uid", "")),
    ]


def _provisioned(cluster: Object) -> bool:
    conditions = (cluster.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == PROVISIONED and c.get("status") == "True" for c in conditions)
