"""``spec.managedBy``: a RayCluster, RayJob or RayService that names another controller
(e.g. MultiKueue) is left to it; the operator does nothing with it at all."""

from __future__ import annotations

import logging

from operator_runtime.api import MANAGED_BY_KUBERAY
from operator_runtime.runtime.kinds import Object

log = logging.getLogger(__name__)


def managed_elsewhere(key: object, raw: Object) -> bool:
    """Whether ``raw`` is another controller's (logged): unset, empty or KubeRay's own
    value is ours."""
    managed_by = (raw.get("spec") or {}).get("managedBy")
    if managed_by and managed_by != MANAGED_BY_KUBERAY:
        log.info("%s: managed by %s; skipped", key, managed_by)
        return True
    return False
