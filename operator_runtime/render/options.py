"""Operator-wide settings that change what the builders produce.

KubeRay reads most of these from environment variables at the moment it builds an
object; here the operator reads them once at start-up and hands them in, so the
builders stay pure and a test can vary them without touching ``os.environ``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from operator_runtime.api import FeatureGates, JSONObject
from operator_runtime.api.common import KUBERAY_VERSION

DEFAULT_CLUSTER_DOMAIN: Final = "cluster.local"


def _frozen_map() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """Everything besides the custom resource that shapes the rendered objects."""

    kuberay_version: str = KUBERAY_VERSION
    """Stamped on what the operator creates; every controller writes and compares this
    one value."""
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN
    """``CLUSTER_DOMAIN``."""
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    default_container_envs: tuple[JSONObject, ...] = ()
    """Env vars added to every Ray container unless it sets the name itself."""
    head_sidecar_containers: tuple[JSONObject, ...] = ()
    worker_sidecar_containers: tuple[JSONObject, ...] = ()
    default_pod_annotations: Mapping[str, str] = field(default_factory=_frozen_map)
    """Added to every pod where the key is unset."""
    default_pod_labels: Mapping[str, str] = field(default_factory=_frozen_map)
    """Added to every pod where the key is unset."""
    enable_init_container_injection: bool = True
    """``ENABLE_INIT_CONTAINER_INJECTION``: the worker ``wait-gcs-ready`` init container."""
    enable_probes_injection: bool = True
    """``ENABLE_PROBES_INJECTION``."""
    enable_login_shell: bool = False
    """``ENABLE_LOGIN_SHELL``: ``/bin/bash -cl`` instead of ``-c``."""
    deterministic_head_pod_name: bool = False
    """``ENABLE_DETERMINISTIC_HEAD_POD_NAME``: head pod named ``<c>-head``."""
    head_cluster_ip_service: bool = False
    """``ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE``: a ClusterIP head Service, not headless."""
    batch_scheduler: str = ""
    """The batch scheduler the operator runs with (``--batch-scheduler``; volcano for the
    deprecated ``--enable-batch-scheduler``); "" = none. Pods, the submitter's pod
    template and a RayJob's cluster carry what it reads (``batchscheduler.py``)."""

    def bash_command(self, extra_flags: str = "") -> list[str]:
        """The shell every generated container runs its script with: ``-c``, then
        ``extra_flags`` (the submitter's ``e``), then ``l`` for a login shell."""
        flags = "-c" + extra_flags + ("l" if self.enable_login_shell else "")
        return ["/bin/bash", flags, "--"]
