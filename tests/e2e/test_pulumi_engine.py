"""The real engine, language host and Kubernetes provider against the local control plane.

preview --diff shows the creates, up creates what preview showed (read back from the API
server), a one-field change previews as exactly that update, destroy removes it all; and
a RayCluster with a ``pulumi.com/waitFor`` annotation holds ``up`` until its status says so.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pulumi.automation as auto
import pytest

from hack.localcluster import LocalCluster
from tests.e2e.stacks import ProgramStack, crd_names

# The first test's setup may build the engine (about 15 minutes on a cold 2-core machine)
# unless `python -m hack.pulumi build` ran before pytest; the default 600 s would cut it.
pytestmark = pytest.mark.timeout(2400)

NAMESPACE = "kubernetes:core/v1:Namespace"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
RAY_CLUSTER = "kubernetes:ray.io/v1:RayCluster"


def _ops_by_type(steps: list[auto.StepEventMetadata]) -> dict[str, list[str]]:
    ops: dict[str, list[str]] = {}
    for step in steps:
        ops.setdefault(step.type, []).append(step.op.value)
    return ops


def _tail(text: str, lines: int = 80) -> str:
    """The end of an engine transcript: the whole one repeats the CRDs, 80k lines."""
    return "\n".join(text.splitlines()[-lines:])


def _exists(cluster: LocalCluster, *args: str) -> bool:
    result = cluster.kubectl("get", *args, "-o", "name", check=False)
    if result.returncode and "NotFound" not in result.stderr:
        raise AssertionError(f"kubectl get {' '.join(args)} failed: {result.stderr}")
    return result.returncode == 0


def test_preview_up_update_destroy(program_stack: Callable[..., ProgramStack]) -> None:
    program = program_stack()
    cluster, namespace = program.cluster, program.namespace
    crds = crd_names()

    preview, steps = program.preview()
    ops = _ops_by_type(steps)
    assert ops[NAMESPACE] == ["create"], ops
    assert ops[CONFIG_MAP] == ["create"], ops
    assert ops[CRD] == ["create"] * len(crds), ops
    assert ops[RAY_CLUSTER] == ["create"], ops
    assert set(preview.change_summary) == {auto.OpType.CREATE}, preview.change_summary
    for resource_type in (NAMESPACE, CONFIG_MAP, CRD, RAY_CLUSTER):
        assert f"+ {resource_type}" in preview.stdout, _tail(preview.stdout)
    for crd in crds:
        assert crd in preview.stdout, f"the diff does not name {crd}"

    up = program.up()
    assert up.summary.result == "succeeded", _tail(program.text)
    assert not _exists(cluster, "namespace", "no-such-namespace")
    assert _exists(cluster, "namespace", namespace)
    config_map = cluster.get_json("-n", namespace, "configmap", "settings")
    assert config_map["data"] == {"greeting": "hello"}
    for crd in crds:
        assert _exists(cluster, "crd", crd)
    ray_cluster = cluster.get_json("-n", namespace, "raycluster", program.ray_cluster_name)
    assert ray_cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["name"] == (
        "ray-head"
    )

    program.set_config("greeting", "world")
    preview, steps = program.preview()
    changed = [step for step in steps if step.op != auto.OpType.SAME]
    assert [(step.type, step.op) for step in changed] == [(CONFIG_MAP, auto.OpType.UPDATE)], [
        (step.urn, step.op, step.diffs) for step in changed
    ]
    # The provider reports the changed property in the detailed diff (`diffs` stays empty).
    detailed_diff = changed[0].detailed_diff or {}
    assert list(detailed_diff) == ["data.greeting"], detailed_diff
    assert detailed_diff["data.greeting"].diff_kind == auto.DiffKind.UPDATE, detailed_diff
    assert preview.change_summary.get(auto.OpType.UPDATE) == 1, preview.change_summary
    assert set(preview.change_summary) == {auto.OpType.UPDATE, auto.OpType.SAME}
    assert '~ greeting: "hello" => "world"' in preview.stdout, _tail(preview.stdout)
    program.up()
    config_map = cluster.get_json("-n", namespace, "configmap", "settings")
    assert config_map["data"] == {"greeting": "world"}

    destroy = program.destroy()
    assert destroy.summary.result == "succeeded", _tail(program.text)
    assert not _exists(cluster, "namespace", namespace)
    for crd in crds:
        assert not _exists(cluster, "crd", crd)


def _set_head_pod_ready(cluster: LocalCluster, namespace: str, name: str) -> None:
    """Write the condition through the status subresource, as the operator would."""
    generation = cluster.get_json("-n", namespace, "raycluster", name)["metadata"]["generation"]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": "HeadPodReady",
        "status": "True",
        "reason": "HeadPodRunningAndReady",
        "message": "set by the e2e test",
        "lastTransitionTime": now,
        "observedGeneration": generation,
    }
    patch = {"status": {"state": "ready", "conditions": [condition]}}
    cluster.kubectl(
        "-n", namespace, "patch", "raycluster", name,
        "--subresource=status", "--type=merge", "-p", json.dumps(patch),
    )  # fmt: skip


def test_up_waits_for_raycluster_condition(program_stack: Callable[..., ProgramStack]) -> None:
    program = program_stack(ray_cluster_wait_for="condition=HeadPodReady", crds_apart=True)
    cluster, namespace, name = program.cluster, program.namespace, program.ray_cluster_name
    held_seconds = 5.0
    up_finished = threading.Event()
    observations: dict[str, Any] = {}

    def operator_stand_in() -> None:
        try:
            deadline = time.monotonic() + 240
            while not _exists(cluster, "-n", namespace, "raycluster", name):
                if time.monotonic() > deadline or up_finished.is_set():
                    observations["error"] = "the RayCluster never appeared"
                    return
                time.sleep(0.5)
            # up must still be waiting once the object exists and for as long as nobody
            # reports the condition.
            time.sleep(held_seconds)
            observations["up_finished_before_condition"] = up_finished.is_set()
            _set_head_pod_ready(cluster, namespace, name)
            observations["condition_set_at"] = time.monotonic()
        except (subprocess.SubprocessError, OSError, KeyError) as error:
            observations["error"] = repr(error)

    helper = threading.Thread(target=operator_stand_in, name="operator-stand-in", daemon=True)
    helper.start()
    try:
        up = program.up()
    finally:
        up_finished.set()
        finished_at = time.monotonic()
        helper.join(timeout=60)
    assert "error" not in observations, observations
    assert observations["up_finished_before_condition"] is False, _tail(program.text)
    assert finished_at >= observations["condition_set_at"], observations
    assert up.summary.result == "succeeded", _tail(program.text)
    status = cluster.get_json("-n", namespace, "raycluster", name)["status"]
    assert status["conditions"][0]["type"] == "HeadPodReady"
