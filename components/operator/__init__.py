"""``RayOperator``, one component in one package, a module per part of what it makes:

- ``component.py``: the ``RayOperator`` class, which calls the others in order;
- ``args.py``: ``RayOperatorArgs`` (what a user gives) and ``Plan`` (every default decided);
- ``checks.py``: ``settle``, the one pass that checks the arguments and makes the ``Plan``;
- ``rbac.py``: the ServiceAccount's ClusterRole (or Roles) and bindings, and the
  leader-election Role;
- ``deployment.py``: the Deployment, its metrics Service and PodDisruptionBudget;
- ``monitoring.py``: the ServiceMonitor and the PrometheusRule with its alerts.
"""

from components.operator.args import (
    DEFAULT_IMAGE,
    DEFAULT_NAMESPACE,
    SELF_DELETING_RAYJOB_ENV,
    RayOperatorArgs,
)
from components.operator.component import TYPE_TOKEN, RayOperator, load_crds
from components.operator.deployment import OPERATOR_COMMAND

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_NAMESPACE",
    "OPERATOR_COMMAND",
    "SELF_DELETING_RAYJOB_ENV",
    "TYPE_TOKEN",
    "RayOperator",
    "RayOperatorArgs",
    "load_crds",
]
