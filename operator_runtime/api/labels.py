"""Label keys and fixed label values KubeRay puts on the objects it creates.

Controllers select their children by these labels (``ray.io/cluster`` and
``ray.io/node-type`` above all), so a key spelled differently anywhere would orphan
pods; every module reads them from here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class LabelKey(StrEnum):
    """Every label key the operator reads or writes."""

    CLUSTER = "ray.io/cluster"
    NODE_TYPE = "ray.io/node-type"
    GROUP = "ray.io/group"
    IDENTIFIER = "ray.io/identifier"
    IS_RAY_NODE = "ray.io/is-ray-node"
    SERVE = "ray.io/serve"
    HEADLESS_WORKER_SVC = "ray.io/headless-worker-svc"
    ORIGINATED_FROM_CR_NAME = "ray.io/originated-from-cr-name"
    ORIGINATED_FROM_CRD = "ray.io/originated-from-crd"
    JOB_SUBMISSION_MODE = "ray.io/job-submission-mode"
    CRONJOB_NAME = "ray.io/cronjob-name"
    WORKER_GROUP_REPLICA_INDEX = "ray.io/worker-group-replica-index"
    WORKER_GROUP_REPLICA_NAME = "ray.io/worker-group-replica-name"
    REPLICA_HOST_INDEX = "ray.io/replica-host-index"
    APP_NAME = "app.kubernetes.io/name"
    CREATED_BY = "app.kubernetes.io/created-by"
    GANG_SCHEDULING_ENABLED = "ray.io/gang-scheduling-enabled"
    """A RayCluster's opt-in to a gang (scheduler-plugins and YuniKorn: present; the
    KubernetesWAS gate's scheduler: ``true`` in any case)."""


class NodeType(StrEnum):
    """Values of ``ray.io/node-type``; the operator's pod cache keeps only these."""

    HEAD = "head"
    WORKER = "worker"
    REDIS_CLEANUP = "redis-cleanup"


HEAD_GROUP: Final = "headgroup"
"""``ray.io/group`` of the head pod."""
IS_RAY_NODE_YES: Final = "yes"
APP_NAME_KUBERAY: Final = "kuberay"
"""Default ``app.kubernetes.io/name``."""
CREATED_BY_KUBERAY: Final = "kuberay-operator"
"""``app.kubernetes.io/created-by``; the operator's Job cache filters on it."""
CREATED_BY_SELECTOR: Final = f"{LabelKey.CREATED_BY.value}={CREATED_BY_KUBERAY}"
"""The label selector of the caches of what the operator created (Jobs, RBAC, Ingresses)."""
POD_SELECTOR: Final = (
    f"{LabelKey.NODE_TYPE.value} in "
    f"({NodeType.HEAD.value},{NodeType.WORKER.value},{NodeType.REDIS_CLEANUP.value})"
)
"""KubeRay's pod cache filter (``ray.io/node-type in (head,worker,redis-cleanup)``): only
Ray pods are cached, so memory stays flat."""
