"""The committed CRDs' schemas for tests, read through ``crds.load_bundle()``: the same
manifests as the committed YAML files (test_crds holds the bundle to them), parsed once
per process from JSON instead of megabytes of YAML per test case."""

from __future__ import annotations

from typing import Any

from operator_runtime.api import crds


def committed_schema(file_name: str) -> dict[str, Any]:
    """The openAPIV3Schema of ``api/crds/<file_name>``. Shared between tests: read it,
    never modify it."""
    for manifest in crds.load_bundle():
        spec = manifest["spec"]
        if f"{spec['group']}_{spec['names']['plural']}.yaml" == file_name:
            schema: dict[str, Any] = spec["versions"][0]["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(f"no committed CRD {file_name} in {crds.BUNDLE}")
