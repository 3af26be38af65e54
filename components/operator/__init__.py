"""``RayOperator``, one component in one package, a module per part of what it makes:

- ``component.py``: the ``RayOperator`` class, which calls the others in order;
- ``args.py``: ``RayOperatorArgs`` (what a user gives) and ``Plan`` (every default decided);
- ``checks.py``: ``settle``, the one pass that checks the arguments and makes the ``Plan``,
  with ``podchecks.py`` (the pod's and the ServiceAccount's options) and ``config.py``
  (the operator's configuration file, checked with the operator's own parser);
- ``rbac.py``: the ServiceAccount's ClusterRole (or Roles) and bindings, and the
  leader-election Role;
- ``deployment.py``: the Deployment, its ConfigMap, metrics Service and PodDisruptionBudget;
- ``monitoring.py``: the ServiceMonitor and the PrometheusRule with its alerts.
"""

from .args import (
    DEFAULT_NAMESPACE,
    SELF_DELETING_RAYJOB_ENV,
    OperatorServiceAccount,
    RayOperatorArgs,
)
from .component import TYPE_TOKEN, RayOperator, load_crds
from .deployment import OPERATOR_COMMAND

__all__ = [
    "DEFAULT_NAMESPACE",
    "OPERATOR_COMMAND",
    "SELF_DELETING_RAYJOB_ENV",
    "TYPE_TOKEN",
    "OperatorServiceAccount",
    "RayOperator",
    "RayOperatorArgs",
    "load_crds",
]
