"""The controller framework: the only code that talks to the API server.

The pipeline, in the order data flows (see docs/architecture.md):
``Informer`` (list + watch into a ``Cache``) -> handlers from ``Watch`` declarations
-> ``WorkQueue`` (dedup, backoff, delays) -> workers -> ``Controller.reconcile(key)``
-> ``KubeClient`` writes -> ``Result``. ``Manager`` wires it, with leader election
(``LeaseElector``), ``EventRecorder``, ``RuntimeMetrics`` and the probe endpoints.
"""

from operator_runtime.runtime.cache import (
    BY_CLUSTER,
    BY_NAMESPACE,
    BY_OWNER_UID,
    Cache,
    keep_paths,
    strip_managed_fields,
)
from operator_runtime.runtime.client import KubeClient, RetryPolicy
from operator_runtime.runtime.clock import Clock, FakeClock, SystemClock
from operator_runtime.runtime.context import ControllerContext, InformerSet
from operator_runtime.runtime.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    NotFound,
    PermanentError,
    TemporaryError,
)
from operator_runtime.runtime.events import EventRecorder
from operator_runtime.runtime.expectations import Expectations
from operator_runtime.runtime.informer import Informer
from operator_runtime.runtime.kinds import KindRegistry, Object, ResourceKind
from operator_runtime.runtime.leader import LeaderElectionConfig, LeaseElector
from operator_runtime.runtime.manager import Manager, ManagerOptions
from operator_runtime.runtime.metrics import RuntimeMetrics
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.reconcile import (
    Controller,
    ObjectKey,
    Result,
    Watch,
    generation_changed,
    mapped,
    own,
    owned,
)
from operator_runtime.runtime.registry import ControllerRegistry
from operator_runtime.runtime.workqueue import WorkQueue

__all__ = [
    "BY_CLUSTER",
    "BY_NAMESPACE",
    "BY_OWNER_UID",
    "AlreadyExists",
    "ApiError",
    "Cache",
    "Clock",
    "Conflict",
    "Controller",
    "ControllerContext",
    "ControllerRegistry",
    "EventRecorder",
    "Expectations",
    "FakeClock",
    "Gone",
    "Informer",
    "InformerSet",
    "KindRegistry",
    "KubeClient",
    "LeaderElectionConfig",
    "LeaseElector",
    "Manager",
    "ManagerOptions",
    "NotFound",
    "Object",
    "ObjectKey",
    "PermanentError",
    "ResourceKind",
    "Result",
    "RetryPolicy",
    "RuntimeMetrics",
    "SystemClock",
    "TemporaryError",
    "TokenBucket",
    "Watch",
    "WorkQueue",
    "generation_changed",
    "keep_paths",
    "mapped",
    "own",
    "owned",
    "strip_managed_fields",
]
