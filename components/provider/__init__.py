"""The components as a Pulumi component provider: the package ``ray`` that YAML,
TypeScript, Go and .NET programs consume (``pulumi package add``).

Pulumi's component provider host (``pulumi.provider.experimental``) infers the schema
from the args classes' annotations, the same analysis ``components.schema`` commits as
``schema.json``, so what a consumer sees is exactly what review saw. Each component a
consumer declares is constructed here, in this process, with the same Python code a
Python program would run; its child resources are registered with the consumer's engine.

Two ways in, one server:

- ``PulumiPlugin.yaml`` (``runtime: python``) beside this file: a current Pulumi CLI runs
  this directory through its Python language host (``python <this directory> <engine>``).
- ``python -m pulumi_ray.provider <engine>``: what an executable plugin named
  ``pulumi-resource-ray`` of an installed ``pulumi-ray`` runs, for an engine whose Python
  host cannot run plugins, as the one built here (docs/components.md). The tests' plugin
  (``hack.pulumi.write_provider_plugin``) runs this directory instead, so that it serves
  the checkout under test whatever the virtualenv's editable install points at.
"""

import json
import sys

from ..schema import COMPONENTS, PACKAGE_NAME, package_version, with_sdk_settings

__all__ = ["serve"]


def serve() -> None:
    """Serve the provider's gRPC API until the engine stops it.

    The engine's address is the first command-line argument (``pulumi.provider.main``
    reads ``sys.argv`` itself); the port served on is printed on stdout for the engine.
    The host is Pulumi's (``component_provider_host`` in parts), with a component's
    input error reported as a check failure (``checked``). Its provider infers the
    schema; the schema it answers with is the provider's own analysis plus the SDK
    settings the analyzer cannot say (npm name, Go import path), so ``pulumi package add``
    generates the SDKs the committed ``schema.json`` describes.
    """
    # Imported here: the analyzer and the gRPC server are only needed by a process that
    # serves.
    from pulumi.provider import main

    from .checked import CheckedComponentProvider

    provider = CheckedComponentProvider(list(COMPONENTS), PACKAGE_NAME, None, package_version())
    # The provider has analyzed the components already: add the SDK settings to its
    # schema rather than analyze them a second time at every start.
    provider.schema = json.dumps(with_sdk_settings(json.loads(provider.schema or "{}")))
    main(provider, sys.argv[1:])
