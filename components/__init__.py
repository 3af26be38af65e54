"""Pulumi ComponentResources for Ray on Kubernetes (RayOperator, RayCluster, RayJob,
RayService, RayCronJob). Thin and typed: their arguments are the models of
``operator_runtime.api`` and their objects come from ``operator_runtime.render``; no
component talks to a cluster itself."""

__all__: list[str] = []
