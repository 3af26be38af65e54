"""The components' Pulumi package schema, as Pulumi's analyzer infers it from the type
annotations, and the committed copy that guards the public API::

    python -m components.schema           # rewrite components/schema.json
    python -m components.schema --check   # exit 1 with a diff if it is stale

The schema is what every other language sees of the components (the SDKs ``pulumi
package add`` generates, a YAML program's property names), so a change to an args class
or an output shows up as a diff of ``schema.json`` in review. It is generated with the
analyzer of ``pulumi.provider.experimental``, the one the component provider host runs,
so the file is exactly what ``pulumi package get-schema`` answers.

The package is named ``ray`` (tokens ``ray:index:RayCluster``, as Pulumi packages read:
``kubernetes:apps/v1:Deployment``, ``eks:index:Cluster``); ``pulumi-ray:`` would repeat
the ``pulumi-`` prefix of the Python distribution's name in every token.
"""

import argparse
import importlib.metadata
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pulumi
from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.schema import generate_schema

from ._golden import write_or_check
from .cluster import RayCluster
from .cronjob import RayCronJob
from .job import RayJob
from .operator import RayOperator
from .service import RayService

__all__ = [
    "COMPONENTS",
    "PACKAGE_NAME",
    "SCHEMA_FILE",
    "main",
    "package_schema",
    "package_version",
    "with_sdk_settings",
    "write_or_check",
]

PACKAGE_NAME: Final = "ray"
COMPONENTS: Final[tuple[type[pulumi.ComponentResource], ...]] = (
    RayOperator,
    RayCluster,
    RayJob,
    RayService,
    RayCronJob,
)
SCHEMA_FILE: Final = Path(__file__).with_name("schema.json")

LANGUAGE_SETTINGS: Final[dict[str, dict[str, str]]] = {
    # npm: a scope of our own; the default, @pulumi/ray, is the Pulumi organisation's scope.
    # TypeScript: the compiler the SDK is tested with (examples/typescript-quickstart's
    # devDependency, tests/e2e/test_sdk_typescript.py), not the generator's ^4.7 default.
    "nodejs": {"packageName": "@pulumi-ray/ray", "typescriptVersion": "^5.9.3"},
    # Go: unpublished, so a path no proxy answers for (like the wrapper modules under
    # hack/); a consumer `replace`s it with the generated directory (module
    # pulumi-ray.local/sdk/go, whose go.mod hack/pulumi/gomod/pulumi-gen-sdk writes).
    "go": {"importBasePath": "pulumi-ray.local/sdk/go/ray"},
}
"""What the SDK generators need and the analyzer has no way to say (it writes only
``respectSchemaVersion``): merged into the schema's ``language`` section."""


def package_version() -> str:
    """The installed distribution's version, which the schema and the provider report."""
    try:
        return importlib.metadata.version("pulumi-ray")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


def package_schema() -> dict[str, Any]:
    """The schema the component provider serves; raises if the analyzer cannot type an
    annotation (a ``Literal``, a union other than Optional, an unknown class)."""
    analyzed = Analyzer(PACKAGE_NAME).analyze(list(COMPONENTS))
    spec = generate_schema(
        PACKAGE_NAME,
        package_version(),
        None,
        analyzed["component_definitions"],
        analyzed["type_definitions"],
        sorted(analyzed["dependencies"], key=lambda d: f"{d.name}{d.version}"),
    )
    document: dict[str, Any] = spec.to_json()
    return with_sdk_settings(document)


def with_sdk_settings(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (an analyzer-made schema) with ``LANGUAGE_SETTINGS`` merged in."""
    for language, settings in LANGUAGE_SETTINGS.items():
        document.setdefault("language", {}).setdefault(language, {}).update(settings)
    return document


def schema_text() -> str:
    return json.dumps(package_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.schema")
    parser.add_argument("--check", action="store_true", help="fail if schema.json is stale")
    args = parser.parse_args(argv)
    return write_or_check(
        SCHEMA_FILE, schema_text(), check=args.check, remedy="python -m components.schema"
    )


if __name__ == "__main__":
    sys.exit(main())
