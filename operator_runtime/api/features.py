"""Operator feature gates (``--feature-gates=A=true,B=false``), as in KubeRay v1.7.

Validation depends on them (e.g. a rocksdb GCS backend needs
GCSFaultToleranceEmbeddedStorage), so they are an explicit, immutable input rather
than process-wide state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from operator_runtime.api.errors import FeatureGateError

# KubeRay gate name -> (attribute of FeatureGates, maturity). Beta gates default to on,
# alpha gates to off; the defaults themselves are the dataclass field defaults below.
GATES: Final[Mapping[str, tuple[str, str]]] = MappingProxyType(
    {
        "RayClusterStatusConditions": ("ray_cluster_status_conditions", "Beta"),
        "RayJobDeletionPolicy": ("ray_job_deletion_policy", "Beta"),
        "RayMultiHostIndexing": ("ray_multi_host_indexing", "Beta"),
        "RayServiceIncrementalUpgrade": ("ray_service_incremental_upgrade", "Beta"),
        "RayCronJob": ("ray_cron_job", "Alpha"),
        "SidecarSubmitterRestart": ("sidecar_submitter_restart", "Alpha"),
        "RayClusterNetworkPolicy": ("ray_cluster_network_policy", "Alpha"),
        "GCSFaultToleranceEmbeddedStorage": ("gcs_fault_tolerance_embedded_storage", "Alpha"),
        "RayClusterMTLS": ("ray_cluster_mtls", "Alpha"),
        "RayClusterHistoryServer": ("ray_cluster_history_server", "Alpha"),
        "KubernetesWAS": ("kubernetes_was", "Alpha"),
    }
)

_TRUE = frozenset({"true", "1", "t"})
_FALSE = frozenset({"false", "0", "f"})


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The state of every KubeRay feature gate; ``FeatureGates()`` is the default set."""

    ray_cluster_status_conditions: bool = True
    ray_job_deletion_policy: bool = True
    ray_multi_host_indexing: bool = True
    ray_service_incremental_upgrade: bool = True
    ray_cron_job: bool = False
    sidecar_submitter_restart: bool = False
    ray_cluster_network_policy: bool = False
    gcs_fault_tolerance_embedded_storage: bool = False
    ray_cluster_mtls: bool = False
    ray_cluster_history_server: bool = False
    kubernetes_was: bool = False

    @classmethod
    def parse(cls, flag: str) -> FeatureGates:
        """Parse the ``--feature-gates`` value, e.g. ``"RayCronJob=true,KubernetesWAS=false"``.

        ``AllAlpha=true`` / ``AllBeta=false`` set every gate of that maturity first, as
        Kubernetes components do; explicit gates win. Raises ``FeatureGateError`` on an
        unknown gate or a value that is not a boolean.
        """
        explicit: dict[str, bool] = {}
        bulk: dict[str, bool] = {}
        for item in (part.strip() for part in flag.split(",")):
            if not item:
                continue
            key, sep, raw = item.partition("=")
            key, raw = key.strip(), raw.strip().lower()
            if not sep or raw not in _TRUE | _FALSE:
                raise FeatureGateError(
                    f"feature gate {item!r} must look like Name=true or Name=false"
                )
            value = raw in _TRUE
            if key in ("AllAlpha", "AllBeta"):
                bulk[key.removeprefix("All")] = value
            elif key in GATES:
                explicit[key] = value
            else:
                known = ", ".join(sorted(GATES))
                raise FeatureGateError(f"unknown feature gate {key!r}; known gates: {known}")
        defaults = cls()
        states = {
            attr: bulk.get(maturity, getattr(defaults, attr)) for attr, maturity in GATES.values()
        }
        states.update({GATES[name][0]: value for name, value in explicit.items()})
        return cls(**states)

    def enabled(self, gate: str) -> bool:
        """Whether the gate with this KubeRay name (e.g. ``"RayCronJob"``) is on."""
        if gate not in GATES:
            raise FeatureGateError(f"unknown feature gate {gate!r}")
        return bool(getattr(self, GATES[gate][0]))

    def as_flag(self) -> str:
        """The ``--feature-gates`` string that reproduces this set."""
        return ",".join(f"{name}={str(self.enabled(name)).lower()}" for name in sorted(GATES))
