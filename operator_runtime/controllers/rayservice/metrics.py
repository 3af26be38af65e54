"""KubeRay's ``kuberay_service_*`` metrics, computed on scrape from the RayService cache."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric

from operator_runtime.api.rayservice import READY, UPGRADE_IN_PROGRESS
from operator_runtime.controllers.conditions import is_true
from operator_runtime.runtime.cache import Cache

_LABELS = ["name", "namespace", "uid"]


class ServiceMetrics:
    def __init__(self, services: Cache) -> None:
        self._services = services

    def register(self, registry: CollectorRegistry) -> None:
        registry.register(self)

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def collect(self) -> Iterable[Metric]:
        info, ready, upgrading = self._families()
        for service in self._services.list():
            metadata = service["metadata"]
            labels = [str(metadata.get(k, "")) for k in ("name", "namespace", "uid")]
            info.add_metric(labels, 1)
            conditions = (service.get("status") or {}).get("conditions") or ()
            # Always one series each, "false" when the condition is absent (as KubeRay).
            for family, type_ in ((ready, READY), (upgrading, UPGRADE_IN_PROGRESS)):
                family.add_metric([*labels, str(is_true(conditions, type_)).lower()], 1)
        return [info, ready, upgrading]

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "kuberay_service_info",
                "Metadata information about RayService custom resources",
                labels=_LABELS,
            ),
            GaugeMetricFamily(
                "kuberay_service_condition_ready",
                "Describes whether the RayService is ready. Ready means users can send "
                "requests to the underlying cluster and the number of serve endpoints is "
                "greater than 0.",
                labels=[*_LABELS, "condition"],
            ),
            GaugeMetricFamily(
                "kuberay_service_condition_upgrade_in_progress",
                "Describes whether the RayService is performing a zero-downtime upgrade.",
                labels=[*_LABELS, "condition"],
            ),
        )
