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
    "kueue-rayjob": "RayJob",
    "rayservice-gateway": "RayService",
    "nightly-raycronjob": "RayCronJob",
    "operator-only": "RayOperator",
    "platform-multi-namespace": "RayOperator",
}
"""Each Python example and the component it is about (its preview must plan to create one)."""
YAML_EXAMPLES: Final = {"yaml-quickstart": "quickstart"}
"""Each YAML example and the Python example it mirrors: its preview must register the same
child resources with the same inputs (tests/e2e/test_consumers.py)."""
SDK_EXAMPLES: Final = {"typescript-quickstart": "quickstart", "go-quickstart": "quickstart"}
"""The quickstart in TypeScript and Go, through the SDKs generated from the schema, and the
Python example each mirrors: ``tests/e2e/test_sdk_*.py`` type-check and build them, and
``tests/e2e/test_consumers.py`` holds their previews, like the YAML ones, to the Python's."""
WORKLOAD_EXAMPLES: Final = {name: kind for name, kind in COMPONENT.items() if kind != "RayOperator"}
SECRETS: Final = {"gcs-ft-redis": {"redisPassword": "pw-example-not-a-default"}}
"""Secret config an example requires (``config.require_secret``: no default password), as
its README tells a user to set it; tests set these before running or previewing one."""
CONFIG: Final = {
    name: {"operatorImage": NEVER_PULLED_IMAGE}
    for name in (
        "quickstart",
        "operator-only",
        "platform-multi-namespace",
        *YAML_EXAMPLES,
        *SDK_EXAMPLES,
    )
}
"""Config an example requires: the operator image, which a user builds and pushes to a
registry of their own (its README says so); there is no default."""
