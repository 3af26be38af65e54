"""KubeRay's ``kuberay_job_*`` metrics.

``kuberay_job_info`` and ``kuberay_job_deployment_status`` are computed on scrape from
the RayJob cache (no stale series for a deleted RayJob).
``kuberay_job_execution_duration_seconds`` is recorded by the reconciler when a RayJob
leaves a non-terminal state for Complete, Failed or Retrying, and dropped with it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric

from operator_runtime.runtime.cache import Cache

_INFO = "kuberay_job_info"
_DEPLOYMENT_STATUS = "kuberay_job_deployment_status"
_DURATION = "kuberay_job_execution_duration_seconds"
DurationKey = tuple[str, str, str, str, str]
"""name, namespace, uid, job_deployment_status, retry_count."""


class JobMetrics:
    def __init__(self, jobs: Cache) -> None:
        self._jobs = jobs
        self._lock = threading.Lock()
        self._durations: dict[DurationKey, float] = {}

    def register(self, registry: CollectorRegistry) -> None:
        registry.register(self)

    def observe_execution(
        self, namespace: str, name: str, uid: str, status: str, retries: int, seconds: float
    ) -> None:
        with self._lock:
            self._durations[(name, namespace, uid, status, str(retries))] = seconds

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            for key in [k for k in self._durations if k[:2] == (name, namespace)]:
                del self._durations[key]

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def collect(self) -> Iterable[Metric]:
        info, deployment, duration = self._families()
        for job in self._jobs.list():
            metadata = job["metadata"]
            labels = [str(metadata.get(k, "")) for k in ("name", "namespace", "uid")]
            info.add_metric(labels, 1)
            state = str((job.get("status") or {}).get("jobDeploymentStatus") or "")
            deployment.add_metric([*labels, state], 1)
        with self._lock:
            durations = sorted(self._durations.items())
        for key, seconds in durations:
            duration.add_metric(list(key), seconds)
        return [info, deployment, duration]

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                _INFO,
                "Metadata information about RayJob custom resources",
                labels=["name", "namespace", "uid"],
            ),
            GaugeMetricFamily(
                _DEPLOYMENT_STATUS,
                "The RayJob's current deployment status",
                labels=["name", "namespace", "uid", "deployment_status"],
            ),
            GaugeMetricFamily(
                _DURATION,
                "Seconds from the RayJob's start until it reached Complete, Failed or "
                "Retrying (a failed attempt with spec.backoffLimit)",
                labels=["name", "namespace", "uid", "job_deployment_status", "retry_count"],
            ),
        )
