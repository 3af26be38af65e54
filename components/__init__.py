"""Pulumi ComponentResources for Ray on Kubernetes (RayOperator, RayCluster, RayJob,
RayService, RayCronJob). Thin and typed: their arguments are the models of
``operator_runtime.api`` and their objects come from ``operator_runtime.render``; no
component talks to a cluster itself. Each is ``Component(name, args, opts)`` with one
``<Component>Args`` dataclass, the package schema's definition too (``schema.json``)."""

from .cluster import RayCluster, RayClusterArgs
from .cronjob import RayCronJob, RayCronJobArgs
from .edges import GatewayEdgeArgs, IngressEdgeArgs, PathType
from .job import RayJob, RayJobArgs
from .operator import RayOperator, RayOperatorArgs
from .operator.args import LogFormat, LogLevel, OperatorServiceAccount, PullPolicy
from .service import RayService, RayServiceArgs

__all__: list[str] = [
    "GatewayEdgeArgs",
    "IngressEdgeArgs",
    "LogFormat",
    "LogLevel",
    "OperatorServiceAccount",
    "PathType",
    "PullPolicy",
    "RayCluster",
    "RayClusterArgs",
    "RayCronJob",
    "RayCronJobArgs",
    "RayJob",
    "RayJobArgs",
    "RayOperator",
    "RayOperatorArgs",
    "RayService",
    "RayServiceArgs",
]
