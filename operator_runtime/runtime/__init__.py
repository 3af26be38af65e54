"""The controller framework: the only code that talks to the API server.

The pipeline, in the order data flows (see docs/architecture.md):
``Informer`` (list + watch into a ``Cache``) -> handlers from ``Watch`` declarations
-> ``WorkQueue`` (dedup, backoff, delays) -> workers -> ``Controller.reconcile(key)``
-> ``KubeClient`` writes -> ``Result``. ``Manager`` wires it, with leader election
(``LeaseElector``), ``EventRecorder``, ``RuntimeMetrics`` and the probe endpoints.

The names below load on first use (PEP 562), not when the package is imported: the
components import ``configuration`` and ``commandline`` (RayOperator checks an
``operator_config`` file with the operator's own parser), and importing any submodule
runs this file first, which must not pull in the Kubernetes client, httpx or
prometheus-client that only the ``operator`` extra installs.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

_HOMES = {
    "AlreadyExists": "errors",
    "ApiError": "errors",
    "BY_CLUSTER": "cache",
    "BY_NAMESPACE": "cache",
    "BY_OWNER_UID": "cache",
    "Cache": "cache",
    "Clock": "clock",
    "Conflict": "errors",
    "Controller": "reconcile",
    "ControllerContext": "context",
    "ControllerRegistry": "registry",
    "EventRecorder": "events",
    "Expectations": "expectations",
    "FakeClock": "clock",
    "Gone": "errors",
    "Informer": "informer",
    "InformerSet": "context",
    "KindRegistry": "kinds",
    "KubeClient": "client",
    "LeaderElectionConfig": "leader",
    "LeaseElector": "leader",
    "Manager": "manager",
    "ManagerOptions": "manager",
    "NotFound": "errors",
    "Object": "kinds",
    "ObjectKey": "reconcile",
    "PermanentError": "errors",
    "ResourceKind": "kinds",
    "Result": "reconcile",
    "RetryPolicy": "client",
    "RuntimeMetrics": "metrics",
    "SystemClock": "clock",
    "TemporaryError": "errors",
    "TokenBucket": "ratelimit",
    "Watch": "reconcile",
    "WorkQueue": "workqueue",
    "generation_changed": "reconcile",
    "keep_paths": "cache",
    "mapped": "reconcile",
    "own": "reconcile",
    "owned": "reconcile",
    "strip_managed_fields": "cache",
}
"""Each exported name and the submodule that defines it."""


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


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
