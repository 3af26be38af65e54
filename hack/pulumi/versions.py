"""Pinned versions of the Pulumi engine pieces we build, and why these and no newer.

Each binary is built from a wrapper Go module under ``gomod/<binary>/`` whose go.mod and
go.sum pin the same versions, and the PyPI pins in pyproject.toml must name the same
releases; a change here goes with a change there (``tests/e2e/test_engine_pins.py`` checks).

The Go module proxy reachable here serves only part of the public proxy's files, and its
checksum database only part of the public one's records, so the pins are the newest that
are actually served:

- the CLI: pkg/v3 v3.259.0 is the newest pkg/v3 whose module zip is served (v3.260.0 and
  later answer 403); sdk/v3 goes with it at the same tag.
- the Python language host: its own module (sdk/python/cmd/pulumi-language-python/v3) is
  untagged and no pseudo-version of it is served (403), so it is built from the last sdk/v3
  release that still carried it as a package, v3.79.0. The v3.259 engine talks to it
  through the older RPCs it falls back to (GetRequiredPlugins instead of
  GetRequiredPackages); the ``-exec`` script it runs is the one of sdk/v3 v3.259.0, the
  release of the Python SDK it drives.
- the Kubernetes provider: provider/v4 is untagged too; the newest release commit whose
  zip is served is that of pulumi-kubernetes v4.25.0. Its pkg/v3 and sdk/v3 are raised
  from v3.215.0 (unknown to the checksum database here) to v3.216.0, the release
  crd2pulumi v1.6.1 builds this same provider commit with; the engine's v3.259.0 does
  not compile it (pkg/v3 codegen/schema changed ``Provider`` to a pointer in v3.247.0).
  Provider and engine only share the plugin gRPC protocol, so their SDKs may differ,
  as in upstream releases.
"""

from __future__ import annotations

from typing import Final

PULUMI: Final = "v3.259.0"
"""The CLI and engine: github.com/pulumi/pulumi/pkg/v3 and sdk/v3 at this tag."""

LANGUAGE_PYTHON: Final = "v3.79.0"
"""The Python language host: the package python/cmd/pulumi-language-python of sdk/v3."""

EXEC_SCRIPT_SDK: Final = PULUMI
"""The sdk/v3 release whose python/cmd/pulumi-language-python-exec is copied beside the host."""

KUBERNETES_PROVIDER: Final = "4.25.0"
"""pulumi-kubernetes release; the provider reports it and the PyPI SDK pins it."""

KUBERNETES_PROVIDER_MODULE_VERSION: Final = "v4.0.0-20260115033456-f47bc2d6f199"
"""github.com/pulumi/pulumi-kubernetes/provider/v4 at the v4.25.0 release commit."""

KUBERNETES_PROVIDER_PULUMI_SDK: Final = "v3.216.0"
"""pkg/v3 and sdk/v3 in the provider's build (its own go.mod asks for v3.215.0)."""

PYPI_PINS: Final = {
    "pulumi": PULUMI.removeprefix("v"),
    "pulumi-kubernetes": KUBERNETES_PROVIDER,
}
"""The pyproject.toml pins that must match the engine and the provider."""

WRAPPER_MODULES: Final = {
    "pulumi": ("github.com/pulumi/pulumi/pkg/v3", PULUMI),
    "pulumi-language-python": ("github.com/pulumi/pulumi/sdk/v3", LANGUAGE_PYTHON),
    "pulumi-resource-kubernetes": (
        "github.com/pulumi/pulumi-kubernetes/provider/v4",
        KUBERNETES_PROVIDER_MODULE_VERSION,
    ),
}
"""wrapper directory (= binary name) -> (the module it pins, its version)."""

NO_CHECKSUM_DATABASE: Final = (
    "github.com/pulumi/pulumi-kubernetes/provider",
    "github.com/pulumi/cloud-ready-checks",
)
"""Module prefixes the checksum database here does not know (lookups answer 404).

Only ``go mod tidy`` in the provider's wrapper needs them (as GONOSUMDB); the committed
go.sum then pins their hashes and every build verifies against it.
"""
