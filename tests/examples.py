"""The examples under ``examples/`` and the component each is about; the components tier
runs each under mocks and the e2e tier previews each for real."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE

EXAMPLES: Final = Path(__file__).resolve().parents[1] / "examples"
COMPONENT: Final = {
    "quickstart": "RayCluster",
    "minimal-cluster": "RayCluster",
    "autoscaling-gpu-cluster": "RayCluster",
    "gcs-ft-redis": "RayCluster",
    "batch-rayjob": "RayJob",
    "rayservice-gateway": "RayService",
    "nightly-raycronjob": "RayCronJob",
    "operator-only": "RayOperator",
    "platform-multi-namespace": "RayOperator",
}
"""Each example and the component it is about (its preview must plan to create one)."""
SDK_EXAMPLES: Final = ("typescript-quickstart", "go-quickstart")
"""The quickstart in other languages, through the SDKs generated from the schema:
``tests/e2e/test_sdk_*.py`` type-check and build them; a preview needs the component
provider to run (issue 28), so the preview test leaves them out until then."""
WORKLOAD_EXAMPLES: Final = {name: kind for name, kind in COMPONENT.items() if kind != "RayOperator"}
SECRETS: Final = {"gcs-ft-redis": {"redisPassword": "pw-example-not-a-default"}}
"""Secret config an example requires (``config.require_secret``: no default password), as
its README tells a user to set it; tests set these before running or previewing one."""
CONFIG: Final = {
    name: {"operatorImage": NEVER_PULLED_IMAGE}
    for name in ("quickstart", "operator-only", "platform-multi-namespace")
}
"""Config an example requires: the operator image, which a user builds and pushes to a
registry of their own (its README says so); there is no default."""
