"""The components as a Pulumi package, consumed by a Pulumi YAML program through the real
engine on the local control plane (issue 28).

The YAML program's ``ray:index:RayOperator`` and ``ray:index:RayCluster`` are constructed
by our component provider (``components/provider``), run as the executable plugin
``pulumi-resource-ray`` (hack/pulumi/componentplugin.py): the Python host we can build
cannot run the plugin directory. The check here: the schema the engine gets from the
plugin is the committed one. The YAML quickstart's preview, up and destroy are
test_consumers.py's, with the TypeScript and Go quickstarts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.schema import COMPONENTS, PACKAGE_NAME, SCHEMA_FILE
from hack.pulumi.componentplugin import write_provider_plugin
from tests.e2e.conftest import PulumiEngine
from tests.examples import EXAMPLES

pytestmark = pytest.mark.timeout(1200)

YAML_QUICKSTART = EXAMPLES / "yaml-quickstart"


def test_the_engine_gets_the_committed_schema_from_the_plugin(
    pulumi_engine: PulumiEngine, tmp_path: Path
) -> None:
    """``pulumi package get-schema`` of the executable plugin answers what it answers for
    the committed ``schema.json``: the CLI reads both into its own schema types, which
    drop what the schema language has no place for (a description on a map's values,
    empty lists), so both sides go through the same reading."""
    plugin = write_provider_plugin(tmp_path / "bin")
    served = pulumi_engine.cli(tmp_path, "package", "get-schema", str(plugin), timeout=300).stdout
    committed = pulumi_engine.cli(
        tmp_path, "package", "get-schema", str(SCHEMA_FILE), timeout=300
    ).stdout
    assert json.loads(served) == json.loads(committed)
    tokens = {f"{PACKAGE_NAME}:index:{c.__name__}" for c in COMPONENTS}
    assert set(json.loads(served)["resources"]) == tokens
