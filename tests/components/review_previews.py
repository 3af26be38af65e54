"""Builds hand-made ``pulumi preview --json`` fixtures of the review tests.

Two recorded outputs of the real engine sit beside them (``review_golden/*-preview.json``,
read in test_review_input.py); these hand-made ones follow the shape the engine documents
for ``--json`` (``steps`` with ``op``, ``urn``, ``oldState`` and ``newState`` as
serialized resources with ``type``, ``inputs`` and ``outputs``, ``detailedDiff`` and
``replaceReasons``), with secrets as the engine writes them (the secret signature and
``ciphertext: "[secret]"``) and unknowns as its sentinel.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from components.__main__ import main
from components.review import ObjectChange
from components.review.changes import changed_paths

SIG = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
STACK = "urn:pulumi:dev::ray-quickstart::"
SECRET_VALUE = "hunter2-do-not-print"


def secret(plain: bool = False) -> dict[str, Any]:
    if plain:
        return {SIG: SECRET_SIG, "plaintext": json.dumps(SECRET_VALUE)}
    return {SIG: SECRET_SIG, "ciphertext": "[secret]"}


def container(image: str, *, wire: bool) -> dict[str, Any]:
    """The Ray container: 1 CPU, 2Gi; in wire form its env holds a secret."""
    return {
        "name": "ray",
        "image": image,
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
        "env": [{"name": "API_TOKEN", "value": secret() if wire else "plain"}],
    }


def cluster(
    replicas: int = 2, *, image: str = "rayproject/ray:2.52.1", wire: bool = False, **spec: Any
) -> dict[str, Any]:
    """The quickstart's RayCluster: a head and one worker group ``cpu`` (min 0, max 4)."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {
            "rayVersion": "2.52.1",
            "headGroupSpec": {"template": {"spec": {"containers": [container(image, wire=wire)]}}},
            "workerGroupSpecs": [
                {
                    "groupName": "cpu",
                    "replicas": replicas,
                    "minReplicas": 0,
                    "maxReplicas": 4,
                    "template": {"spec": {"containers": [container(image, wire=wire)]}},
                }
            ],
            **spec,
        },
    }


def state(document: dict[str, Any], name: str = "demo") -> dict[str, Any]:
    """The engine's serialized state of ``document``, a child of its kind's component."""
    outputs = copy.deepcopy(document)
    outputs["status"] = {"state": "ready"}
    kind = str(document.get("kind") or "RayCluster")
    return {
        "urn": f"{STACK}ray:index:{kind}$kubernetes:ray.io/v1:{kind}::{name}",
        "custom": True,
        "type": f"kubernetes:ray.io/v1:{kind}",
        "inputs": document,
        "outputs": outputs,
        "parent": f"{STACK}ray:index:{kind}::{name}",
    }


def step(op: str, old: dict | None, new: dict | None, diff: dict | None = None, **extra: Any):
    one = state(new or old or {})
    result: dict[str, Any] = {"op": op, "urn": one["urn"], "provider": "urn:...::default"}
    if old is not None:
        result["oldState"] = state(old)
    if new is not None:
        result["newState"] = state(new)
    result["detailedDiff"] = diff
    result.update(extra)
    return result


def digest(*steps: dict[str, Any]) -> str:
    stack = {"op": "same", "urn": f"{STACK}pulumi:pulumi:Stack::ray-quickstart-dev"}
    counts: dict[str, int] = {}
    for each in steps:
        counts[each["op"]] = counts.get(each["op"], 0) + 1
    return json.dumps(
        {
            "config": {"ray-quickstart:operatorImage": "[secret]"},
            "steps": [stack, *steps],
            "duration": 1234567890,
            "changeSummary": {**counts, "same": 15},
        },
        indent=2,
    )


def quickstart_replicas() -> str:
    """The quickstart, worker replicas 2 -> 3."""
    diff = {"spec.workerGroupSpecs[0].replicas": {"kind": "update", "inputDiff": False}}
    before, after = cluster(2, wire=True), cluster(3, wire=True)
    return digest(step("update", before, after, diff, diffReasons=["spec"]))


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``python -m pulumi_ray ARGV`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def object_change(
    kind: str, before: dict[str, Any] | None, after: dict[str, Any] | None, **extra: Any
) -> ObjectChange:
    """One change of ``default/<name>`` (``name`` in ``extra``, else ``demo``), its op
    from the sides given unless ``extra`` names one."""
    op = extra.pop("op", "create" if before is None else "delete" if after is None else "update")
    return ObjectChange(
        kind=kind,
        namespace="default",
        name=extra.pop("name", "demo"),
        op=op,
        before=before,
        after=after,
        changed=tuple(changed_paths(before, after)),
        **extra,
    )


EXAMPLES = Path(__file__).parents[2] / "examples"


def example_sides(
    root: Path,
    example: str,
    config: Mapping[str, Mapping[str, str]],
    edit: Callable[[str], str] | None = None,
) -> tuple[str, str]:
    """Two copies of ``examples/<example>`` under ``root`` (``before``, ``after``), each
    with the stack ``dev`` config ``config[side]`` and the after program passed through
    ``edit``; their folders, for ``review --before --after --stack dev``."""
    project = yaml.safe_load((EXAMPLES / example / "Pulumi.yaml").read_text())["name"]
    for side in ("before", "after"):
        folder = root / side
        folder.mkdir()
        for name in ("Pulumi.yaml", "__main__.py"):
            text = (EXAMPLES / example / name).read_text()
            if name == "__main__.py" and side == "after" and edit is not None:
                text = edit(text)
            (folder / name).write_text(text)
        values = {f"{project}:{key}": value for key, value in config.get(side, {}).items()}
        (folder / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": values}))
    return str(root / "before"), str(root / "after")
