"""Which pods (or multi-host replicas) go when a worker group has more than it wants.

With the in-tree autoscaler the operator deletes none of them: the autoscaler names
its victims in ``scaleStrategy.workersToDelete`` (unless ``ENABLE_RANDOM_POD_DELETE``
lets the operator choose anyway). Otherwise the least valuable go first: those not yet
serving, then in the order given (KubeRay's rule).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from operator_runtime.controllers.raycluster.run import ClusterRun

log = logging.getLogger(__name__)
Unit = TypeVar("Unit")


def scale_down_victims(
    run: ClusterRun,
    group: str,
    candidates: Sequence[Unit],
    count: int,
    *,
    serving: Callable[[Unit], bool],
    unit: str = "pods",
) -> list[Unit]:
    """The ``count`` of ``candidates`` to delete (none while the autoscaler decides).
    ``serving`` tells a unit that is running and ready; the sort is stable."""
    if run.cluster.spec.enable_in_tree_autoscaling and not run.tools.options.random_pod_delete:
        log.info(
            "%s: group %s has %d %s too many; the autoscaler decides which go",
            run.key,
            group,
            count,
            unit,
        )
        return []
    return sorted(candidates, key=serving)[:count]
