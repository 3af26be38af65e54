"""Pinned versions of the Pulumi engine pieces we build, and why these and no newer.

Each binary is built from a wrapper Go module under ``gomod/<binary>/`` whose go.mod and
go.sum pin the same versions, and the PyPI pins in pyproject.toml must name the same
releases; a change here goes with a change there (``tests/e2e/test_engine_pins.py`` checks).

The Go module proxy reachable here serves only part of the public proxy's files, and its
checksum database only part of the public one's records, so the pins are the newest that
are actually served (checked 2026-11-25 with ``go list -m -versions`` and the proxy's
``.info``/``.zip`` URLs):

- the CLI: pkg/v3 v3.274.1 is the newest pkg/v3 whose module zip is served (of v3.260.0
  to v3.274.1 only v3.260.0, v3.274.0 and v3.274.1 are; v3.261.0, v3.265.0, v3.268.0 to
  v3.272.0 answer 403); sdk/v3 goes with it at the same tag.
- the Python SDK on PyPI: its newest release there is 3.272.0 (no 3.274.x is published),
  so the SDK runs two minor releases behind the CLI, as it does for any user who
  upgrades the CLI first. The ``-exec`` script beside the language host is taken from
  the CLI's sdk/v3 (v3.274.1), whose copy is byte for byte that of v3.272.0.
- the language hosts: since mid-2023 each lives in a module of its own
  (sdk/python/cmd/pulumi-language-python/v3, sdk/nodejs/cmd/pulumi-language-nodejs/v3,
  sdk/go/pulumi-language-go/v3), and the proxy here answers 403 ("This module version is
  not available.") for their version lists and for every version asked (v3.274.1 and
  pseudo-versions alike). So each is built from the last sdk/v3 release that still
  carried it as a package: Python v3.79.0, Node.js v3.68.0, Go v3.66.0. The engine falls
  back to the older RPCs such hosts answer (GetRequiredPlugins instead of
  GetRequiredPackages). What that costs: a Python *plugin* (a component provider,
  ``PulumiPlugin.yaml`` with ``runtime: python``) cannot run through the v3.79 host, whose
  RunPlugin runs ``python <RunPluginRequest.program>``, a field the engine stopped
  setting (it sends ``info.program_directory`` instead).
- the YAML host: pulumi-yaml is a module of its own; v1.25.0 is the newest listed and
  served. It keeps the pkg/v3 and sdk/v3 its go.mod asks for (v3.206.0): hosts and
  engine share only the gRPC protocol.
- the Kubernetes provider: provider/v4 is untagged too; the newest release commit whose
  zip is served is that of pulumi-kubernetes v4.25.0. Its pkg/v3 and sdk/v3 are raised
  from v3.215.0 (unknown to the checksum database here) to v3.216.0, the release
  crd2pulumi v1.6.1 builds this same provider commit with; newer engines do not
  compile it (pkg/v3 codegen/schema changed ``Provider`` to a pointer in v3.247.0).
  Provider and engine only share the plugin gRPC protocol, so their SDKs may differ,
  as in upstream releases.
- the SDK generator (``gomod/pulumi-gen-sdk``, a main of ours): the CLI's pkg/v3, whose
  ``codegen/nodejs`` and ``codegen/go`` it calls. ``pulumi package gen-sdk`` cannot be
  used: it asks the language host's GeneratePackage RPC, which the 2023 hosts above
  answer with "method GeneratePackage not implemented".
"""

from __future__ import annotations

from typing import Final

PULUMI: Final = "v3.274.1"
"""The CLI and engine: github.com/pulumi/pulumi/pkg/v3 and sdk/v3 at this tag."""

LANGUAGE_PYTHON: Final = "v3.79.0"
"""The Python language host: the package python/cmd/pulumi-language-python of sdk/v3."""

PYTHON_SDK: Final = "3.272.0"
"""The Python SDK (PyPI ``pulumi``): its newest release, two minor releases behind the CLI."""

EXEC_SCRIPT_SDK: Final = PULUMI
"""The sdk/v3 release whose python/cmd/pulumi-language-python-exec is copied beside the host.

It is in the CLI wrapper's build list; its script is identical to that of PYTHON_SDK.
"""

LANGUAGE_NODEJS: Final = "v3.68.0"
"""The Node.js language host: the package nodejs/cmd/pulumi-language-nodejs of sdk/v3."""

LANGUAGE_GO: Final = "v3.66.0"
"""The Go language host: the package go/pulumi-language-go of sdk/v3."""

LANGUAGE_YAML: Final = "v1.25.0"
"""The YAML language host: github.com/pulumi/pulumi-yaml, package cmd/pulumi-language-yaml."""

KUBERNETES_PROVIDER: Final = "4.25.0"
"""pulumi-kubernetes release; the provider reports it and the PyPI SDK pins it."""

KUBERNETES_PROVIDER_MODULE_VERSION: Final = "v4.0.0-20260115033456-f47bc2d6f199"
"""github.com/pulumi/pulumi-kubernetes/provider/v4 at the v4.25.0 release commit."""

KUBERNETES_PROVIDER_PULUMI_SDK: Final = "v3.216.0"
"""pkg/v3 and sdk/v3 in the provider's build (its own go.mod asks for v3.215.0)."""

PYPI_PINS: Final = {
    "pulumi": PYTHON_SDK,
    "pulumi-kubernetes": KUBERNETES_PROVIDER,
}
"""The pyproject.toml pins that must match the engine and the provider."""

WRAPPER_MODULES: Final = {
    "pulumi": ("github.com/pulumi/pulumi/pkg/v3", PULUMI),
    "pulumi-language-python": ("github.com/pulumi/pulumi/sdk/v3", LANGUAGE_PYTHON),
    "pulumi-language-nodejs": ("github.com/pulumi/pulumi/sdk/v3", LANGUAGE_NODEJS),
    "pulumi-language-go": ("github.com/pulumi/pulumi/sdk/v3", LANGUAGE_GO),
    "pulumi-language-yaml": ("github.com/pulumi/pulumi-yaml", LANGUAGE_YAML),
    "pulumi-resource-kubernetes": (
        "github.com/pulumi/pulumi-kubernetes/provider/v4",
        KUBERNETES_PROVIDER_MODULE_VERSION,
    ),
    "pulumi-gen-sdk": ("github.com/pulumi/pulumi/pkg/v3", PULUMI),
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
