"""Pulumi ComponentResources for Ray on Kubernetes (RayOperator, RayCluster, RayJob,
RayService, RayCronJob). Thin and typed: their arguments are the models of
``operator_runtime.api`` and their objects come from ``operator_runtime.render``; no
component talks to a cluster itself."""

from components.cluster import RayCluster
from components.cronjob import RayCronJob
from components.edges import GatewayEdgeArgs, IngressEdgeArgs
from components.job import RayJob
from components.operator import RayOperator, RayOperatorArgs
from components.service import RayService

__all__: list[str] = [
    "GatewayEdgeArgs",
    "IngressEdgeArgs",
    "RayCluster",
    "RayCronJob",
    "RayJob",
    "RayOperator",
    "RayOperatorArgs",
    "RayService",
]
