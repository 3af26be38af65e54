"""The package schema: Pulumi's analyzer accepts every component and args type, and the
committed ``components/schema.json`` is what it infers today (the public API's guard)."""

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from components import schema

REPO = Path(__file__).resolve().parents[2]


def test_every_component_and_args_type_is_in_the_schema() -> None:
    document = schema.package_schema()
    resources = document["resources"]
    assert sorted(resources) == sorted(f"ray:index:{c.__name__}" for c in schema.COMPONENTS)
    for component in schema.COMPONENTS:
        args = inspect.get_annotations(component.__init__)["args"]
        assert args.__name__ == f"{component.__name__}Args"
        spec = resources[f"ray:index:{component.__name__}"]
        # Every field of the args class is an input, every one optional.
        assert len(spec["inputProperties"]) == len(inspect.get_annotations(args))
        assert not spec.get("requiredInputs")
        assert spec["outputs"] if "outputs" in spec else spec["properties"]
    assert set(document["types"]) >= {
        "ray:index:IngressEdgeArgs",
        "ray:index:GatewayEdgeArgs",
        "ray:index:OperatorServiceAccount",
        "ray:index:PathType",
    }


def test_no_output_takes_pulumis_own_names() -> None:
    for spec in schema.package_schema()["resources"].values():
        assert "resourceName" not in spec["properties"]
        assert "urn" not in spec["properties"]


def test_the_analyzer_refuses_what_no_schema_carries() -> None:
    """The check can fail: a Literal in an args class is refused by the analyzer (with a
    bare ``issubclass`` TypeError that names no field, hence this project's rules)."""
    from dataclasses import dataclass
    from typing import Literal

    import pulumi
    from pulumi.provider.experimental.analyzer import Analyzer

    @dataclass
    class BadArgs:
        mode: Literal["a", "b"] | None = None

    class Bad(pulumi.ComponentResource):
        def __init__(self, name: str, args: BadArgs) -> None: ...

    with pytest.raises(TypeError, match="issubclass"):
        Analyzer("ray").analyze([Bad])


@pytest.mark.parametrize("generator", ["components.schema", "components.statustypes"])
def test_committed_generated_files_are_current(generator: str) -> None:
    """``schema.json`` and ``components/status.py`` are what their generators write from
    the code today (``make lint`` runs the same ``--check``)."""
    result = subprocess.run(
        [sys.executable, "-m", generator, "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr


def test_the_docs_reference_is_the_schemas_and_follows_a_change() -> None:
    """docs/components.md's reference is written from schema.json (``make schema``); a new
    input in the schema changes it, so ``--check`` in ``make lint`` catches a stale doc."""
    import json

    from hack import schemadocs

    committed = schemadocs.DOC.read_text(encoding="utf-8")
    document = json.loads(schemadocs.SCHEMA.read_text(encoding="utf-8"))
    assert schemadocs.updated(committed, document) == committed
    cluster = document["resources"]["ray:index:RayCluster"]
    cluster["inputProperties"]["brandNew"] = {"type": "integer", "description": "A | B."}
    changed = schemadocs.updated(committed, document)
    assert "| `brandNew` | integer | A \\| B. |" in changed
    # Only the reference moved: the hand-written prose before it is kept.
    assert changed.split(schemadocs.BEGIN)[0] == committed.split(schemadocs.BEGIN)[0]


def test_each_status_output_is_an_object_type_of_the_schema() -> None:
    """What a YAML, TypeScript or Go program reads: ``status`` is the kind's status type,
    keyed by KubeRay's wire names, not ``Any``."""
    document = schema.package_schema()
    wanted = {
        "RayCluster": ("RayClusterStatus", {"state", "readyWorkerReplicas", "desiredGPU"}),
        "RayJob": ("RayJobStatus", {"jobDeploymentStatus", "jobStatus", "dashboardURL"}),
        "RayService": ("RayServiceStatuses", {"conditions", "activeServiceStatus"}),
        "RayCronJob": ("RayCronJobStatus", {"lastScheduleTime"}),
    }
    for component, (type_name, fields) in wanted.items():
        status = document["resources"][f"ray:index:{component}"]["properties"]["status"]
        assert status["$ref"] == f"#/types/ray:index:{type_name}"
        assert fields <= set(document["types"][f"ray:index:{type_name}"]["properties"])
    head = document["types"]["ray:index:RayClusterStatus"]["properties"]["head"]
    assert head["$ref"] == "#/types/ray:index:HeadInfo"
    assert set(document["types"]["ray:index:HeadInfo"]["properties"]) >= {"podIP", "serviceIP"}


def test_the_status_generator_refuses_a_field_it_has_no_type_for() -> None:
    """The check can fail: a status field of a type no schema carries (a union) is a
    decision for the generator, never a silent ``Any``."""
    from pydantic import BaseModel

    from components import statustypes

    class OddStatus(BaseModel):
        either: int | list[int] | None = None

    with pytest.raises(TypeError, match="no status output type"):
        statustypes._class_text(OddStatus, [])
