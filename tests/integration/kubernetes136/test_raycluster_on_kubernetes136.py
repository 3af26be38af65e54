"""The RayCluster basics on Kubernetes 1.36: side by side with KubeRay's operator on the
sample clusters (``conformance/test_kuberay_conformance.py``), and a cluster of one head
and five workers coming up with its status, conditions and Services
(``raycluster/test_raycluster_provisioning.py``). The tests are those modules' own,
imported; the control plane is this directory's (``conftest.py``)."""

from __future__ import annotations

from tests.integration.conformance.test_kuberay_conformance import (  # noqa: F401
    operators,
    test_pods_and_services_match_kuberay,
)
from tests.integration.raycluster.test_raycluster_provisioning import (  # noqa: F401
    test_one_head_and_five_workers_become_ready,
)
