"""The Recreate strategy's spec hash and its decisions."""

from __future__ import annotations

import copy
from typing import Any

from operator_runtime.api import RayCluster
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.controllers.raycluster.upgrade import Decision, decide, spec_hash

HASH_KEY = AnnotationKey.UPGRADE_STRATEGY_RECREATE_HASH.value
VERSION_KEY = AnnotationKey.KUBERAY_VERSION.value


def manifest() -> dict[str, Any]:
    return {
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {
            "upgradeStrategy": {"type": "Recreate"},
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "a"}]}}},
            "workerGroupSpecs": [
                {
                    "groupName": "g",
                    "replicas": 2,
                    "minReplicas": 1,
                    "maxReplicas": 5,
                    "template": {"spec": {"containers": [{"name": "w", "image": "a"}]}},
                }
            ],
        },
    }


def hash_of(raw: dict[str, Any]) -> str:
    return spec_hash(RayCluster.model_validate(raw).spec)


def changed(edit: Any) -> str:
    raw = manifest()
    edit(raw["spec"])
    return hash_of(raw)


BASE = hash_of(manifest())


def test_the_hash_is_stable_and_32_base32hex_characters() -> None:
    assert hash_of(manifest()) == BASE
    assert len(BASE) == 32 and set(BASE) <= set("0123456789ABCDEFGHIJKLMNOPQRSTUV")


def test_scaling_and_scheduling_edits_do_not_change_the_hash() -> None:
    group = lambda spec: spec["workerGroupSpecs"][0]  # noqa: E731
    head_pod = lambda spec: spec["headGroupSpec"]["template"]["spec"]  # noqa: E731
    edits = [
        lambda s: group(s).update(replicas=7, minReplicas=0, maxReplicas=9),
        lambda s: group(s).update(scaleStrategy={"workersToDelete": ["x"]}),
        lambda s: group(s).update(scaleStrategy={}),
        lambda s: group(s)["template"]["spec"].update(tolerations=[{"key": "k"}]),
        lambda s: head_pod(s).update(schedulingGates=[{"name": "kueue"}]),
        lambda s: s.update(upgradeStrategy={"type": "None"}),
        lambda s: s.pop("upgradeStrategy"),
    ]
    for edit in edits:
        assert changed(edit) == BASE


def test_pod_shaping_edits_change_the_hash() -> None:
    edits = [
        lambda s: s["workerGroupSpecs"][0]["template"]["spec"]["containers"][0].update(image="b"),
        lambda s: s["headGroupSpec"].update(rayStartParams={"num-cpus": "1"}),
        lambda s: s["workerGroupSpecs"].append(
            copy.deepcopy(s["workerGroupSpecs"][0]) | {"groupName": "h"}
        ),
    ]
    for edit in edits:
        assert changed(edit) != BASE


def head(version: str | None, hash_value: str | None) -> dict[str, Any]:
    annotations = {}
    if version is not None:
        annotations[VERSION_KEY] = version
    if hash_value is not None:
        annotations[HASH_KEY] = hash_value
    return {"metadata": {"name": "h", "annotations": annotations}}


def test_decisions() -> None:
    def run(pods: list[dict[str, Any]]) -> Decision:
        return decide(pods, expected_hash=BASE, operator_version="v1.7.0")

    assert run([]) is Decision.KEEP
    assert run([head("v1.7.0", BASE)]) is Decision.KEEP
    assert run([head("v1.7.0", "OTHER")]) is Decision.RECREATE
    # Another operator version may hash differently: restamp, never recreate.
    assert run([head("v1.6.0", "OTHER")]) is Decision.RESTAMP
    # Unstamped pods (e.g. created before the strategy was set) are not recreated.
    assert run([head(None, None)]) is Decision.KEEP
    assert run([head("v1.7.0", None)]) is Decision.KEEP
