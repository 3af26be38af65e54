"""The stack template of ``Pulumi.yaml``: our ray.io/v1 CRDs and the Ray workloads that
stack config names. Each manifest goes through the API models and their validation first,
so ``pulumi preview`` fails on a bad manifest with the object and the field path."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pydantic import ValidationError

import operator_runtime.api
from operator_runtime.api import (
    RayApiError,
    RayCluster,
    RayCronJob,
    RayJob,
    RayService,
    validate,
)

# The CRDs ship inside the package, so the template works wherever it is copied to.
CRD_DIR = Path(operator_runtime.api.__file__).resolve().parent / "crds"
KINDS: dict[str, type[RayCluster | RayJob | RayService | RayCronJob]] = {
    "RayCluster": RayCluster,
    "RayJob": RayJob,
    "RayService": RayService,
    "RayCronJob": RayCronJob,
}

config = pulumi.Config()
namespace = config.get("namespace") or "default"
manifest_paths: list[str] = config.get_object("manifests") or []
kubeconfig = config.get("kubeconfig")
provider = k8s.Provider("kubernetes", kubeconfig=kubeconfig) if kubeconfig else None


def load(path: str) -> list[RayCluster | RayJob | RayService | RayCronJob]:
    """Every ray.io/v1 object in a manifest file, parsed and validated."""
    objects = []
    # Relative paths are relative to the project directory, where the engine runs us.
    for document in yaml.safe_load_all(Path(path).read_text()):
        kind = document.get("kind") if isinstance(document, dict) else None
        if kind not in KINDS:
            raise pulumi.RunError(f"{path}: kind {kind!r} is not one of {', '.join(KINDS)}")
        try:
            model = KINDS[kind].model_validate(document)
            validate(model)
        except (ValidationError, RayApiError) as error:
            # RunError: the engine shows the message alone, not a Python traceback.
            raise pulumi.RunError(f"{path}: {error}") from None
        objects.append(model)
    return objects


crds = None
if config.get_bool("installCrds") is not False:
    crds = k8s.yaml.v2.ConfigGroup(
        "ray-crds",
        files=[str(path) for path in sorted(CRD_DIR.glob("*.yaml"))],
        opts=pulumi.ResourceOptions(provider=provider),
    )

for path in manifest_paths:
    for ray_object in load(path):
        object_namespace = ray_object.metadata.namespace or namespace
        k8s.apiextensions.CustomResource(
            f"{ray_object.kind.lower()}-{object_namespace}-{ray_object.metadata.name}",
            api_version="ray.io/v1",
            kind=ray_object.kind,
            metadata={**ray_object.metadata.to_dict(), "namespace": object_namespace},
            spec=ray_object.spec.to_dict(),
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[crds] if crds else []),
        )

pulumi.export("crdsInstalled", crds is not None)
