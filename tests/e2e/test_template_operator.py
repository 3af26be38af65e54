"""The stack template with its operator, through the real engine on the local control plane.

kwok pods run no containers, so each test runs the operator the template's RayOperator
deployed as a local process, with the Deployment's arguments and a token of the
ServiceAccount the component created: every request it makes is checked against the
RBAC the component rendered, and a refused one fails the test.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi.automation as auto
import pytest

from hack.localcluster import LocalCluster
from tests.e2e.stacks import ProgramStack
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(1800)

RAY_CLUSTER = "kubernetes:ray.io/v1:RayCluster"
IMAGE = "rayproject/ray:2.52.0"
GCS_FT_FINALIZER = "ray.io/gcs-ft-redis-cleanup-finalizer"
PASSWORD = "pw-" + uuid.uuid4().hex
"""A Redis password that must never appear in plain text in output or state."""


def _spec(*, replicas: int = 1, autoscaling: bool = False, **extra: Any) -> dict[str, Any]:
    group: dict[str, Any] = {
        "groupName": "workers",
        "replicas": replicas,
        "minReplicas": 1,
        "maxReplicas": 5,
        "template": {"spec": {"containers": [{"name": "ray-worker", "image": IMAGE}]}},
    }
    return {
        "rayVersion": "2.52.0",
        **({"enableInTreeAutoscaling": True} if autoscaling else {}),
        "headGroupSpec": {
            "template": {"spec": {"containers": [{"name": "ray-head", "image": IMAGE}]}}
        },
        "workerGroupSpecs": [group],
        **extra,
    }


def _template_stack(
    program_stack: Callable[..., ProgramStack],
    tmp_path: Path,
    cluster: dict[str, Any],
    *,
    secret_path: str | None = None,
    secret_value: str = "",
) -> tuple[ProgramStack, str]:
    """A template stack with an operator of its own and one RayCluster ``c`` in a
    namespace it creates; the operator runs locally once deployed. ``secret_path`` (in the
    cluster's entry) is then set to ``secret_value`` as ``pulumi config set --secret
    --path`` does, which makes the whole workloads key secret."""
    suffix = uuid.uuid4().hex[:6]
    operator_name, operator_namespace = f"ray-op-{suffix}", f"ray-op-{suffix}"
    program = program_stack(
        template_config={"operator": {"name": operator_name, "namespace": operator_namespace}},
        crds_apart=True,
    )
    program.write_config({"workloads": _workloads(program.namespace, cluster)})
    if secret_path is not None:
        program.stack.set_config(
            f'pulumi-ray:workloads["{program.namespace}"].rayClusters[0].{secret_path}',
            auto.ConfigValue(value=secret_value, secret=True),
            path=True,
        )
    program.run_operator(namespace=operator_namespace, name=operator_name, work_dir=tmp_path)
    return program, operator_namespace


def _workloads(namespace: str, *clusters: dict[str, Any]) -> dict[str, Any]:
    """The ``workloads`` key: ``clusters`` in ``namespace``, each named ``c`` unless its
    entry names it."""
    return {
        namespace: {
            "createNamespace": True,
            "rayClusters": [{"name": "c", "timeout": 300, **entry} for entry in clusters],
        }
    }


def _ray_cluster(cluster: LocalCluster, namespace: str, name: str = "c") -> dict[str, Any]:
    return cluster.get_json("-n", namespace, "raycluster", name)


def _workers(cluster: LocalCluster, namespace: str, name: str = "c") -> list[dict[str, Any]]:
    pods = cluster.get_json(
        "-n", namespace, "pods", "-l", f"ray.io/cluster={name},ray.io/node-type=worker"
    )
    return [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]


def _wait(what: str, check: Callable[[], bool]) -> None:
    """``wait_for`` a worker count: 90 s, a pod list every 0.5 s."""
    wait_for(what, check, 90, 0.5)


def _set_replicas(count: int) -> str:
    """A JSON patch of the first worker group's replicas."""
    path = "/spec/workerGroupSpecs/0/replicas"
    return json.dumps([{"op": "replace", "path": path, "value": count}])


def _changes(steps: list[auto.StepEventMetadata]) -> list[tuple[str, str, str]]:
    """(operation, type, resource name) of each step that changes something."""
    return [
        (s.op.value, s.type, s.urn.rsplit("::", 1)[1])
        for s in steps
        if s.op not in (auto.OpType.SAME, auto.OpType.READ)
    ]


def _cluster_resource(namespace: str, name: str) -> str:
    """The template's resource name of the RayCluster ``name`` of ``namespace``."""
    return f"raycluster-{namespace}-{name}"


def _assert_operator_healthy(program: ProgramStack) -> None:
    operator = program.operator
    assert operator is not None
    assert operator.error is None, operator.error
    assert operator.running(), operator.log_text()[-4000:]
    assert operator.forbidden_requests() == [], operator.forbidden_requests()[:5]


FIXED = "fixed"
"""The shared stack's RayCluster whose replicas Pulumi owns."""
AUTOSCALED = "autoscaled"
"""The shared stack's RayCluster with in-tree autoscaling: the autoscaler owns replicas."""


@dataclass
class SharedStack:
    """One template stack, one operator and two RayClusters in one namespace, that the two
    replicas tests share: each changes only its own cluster, so neither depends on the
    other having run, and one up, operator start and destroy serve both."""

    program: ProgramStack
    clusters: dict[str, dict[str, Any]]
    """Each cluster's entry as the stack's config has it now."""
    states_after_up: dict[str, str]
    """Each RayCluster's ``status.state``, read as soon as the first ``up`` returned."""

    def configure(self, name: str, entry: dict[str, Any]) -> None:
        self.clusters[name] = entry
        workloads = _workloads(
            self.program.namespace, *({"name": n, **e} for n, e in self.clusters.items())
        )
        self.program.write_config({"workloads": workloads})


@pytest.fixture(scope="class")
def shared_stack(
    class_program_stack: Callable[..., ProgramStack], tmp_path_factory: pytest.TempPathFactory
) -> SharedStack:
    suffix = uuid.uuid4().hex[:6]
    operator_name = f"ray-op-{suffix}"
    program = class_program_stack(
        template_config={"operator": {"name": operator_name, "namespace": operator_name}},
        crds_apart=True,
    )
    shared = SharedStack(program=program, clusters={}, states_after_up={})
    shared.configure(FIXED, {"spec": _spec(replicas=1)})
    shared.configure(AUTOSCALED, {"spec": _spec(replicas=1, autoscaling=True)})
    program.run_operator(
        namespace=operator_name, name=operator_name, work_dir=tmp_path_factory.mktemp("operator")
    )
    started = time.monotonic()
    program.up()
    up_seconds = time.monotonic() - started
    # Read at once: `pulumi up` must not have returned before the operator said ready.
    shared.states_after_up = {
        name: _ray_cluster(program.cluster, program.namespace, name)["status"]["state"]
        for name in shared.clusters
    }
    print(f"pulumi up of the template (operator + two clusters): {up_seconds:.1f}s")
    return shared


class TestOneStackTwoClusters:
    """The replicas tests, on one ``shared_stack``: its stack is destroyed (and its
    operator stopped) when the class ends, since two operators watching every namespace
    would both reconcile the next test's cluster."""

    def test_up_returns_once_the_cluster_is_ready_and_a_replicas_change_is_one_update(
        self, shared_stack: SharedStack
    ) -> None:
        program, name = shared_stack.program, FIXED
        resource = _cluster_resource(program.namespace, name)
        assert shared_stack.states_after_up == {FIXED: "ready", AUTOSCALED: "ready"}
        _assert_operator_healthy(program)

        shared_stack.configure(name, {"spec": _spec(replicas=2)})
        _, steps = program.preview()
        assert _changes(steps) == [("update", RAY_CLUSTER, resource)], _changes(steps)
        program.up()
        _wait("two workers", lambda: len(_workers(program.cluster, program.namespace, name)) == 2)

        # Not autoscaled, so Pulumi owns replicas: a change by hand shows in preview --refresh
        # and the next up puts it back, with no server-side apply conflict (patchForce).
        program.cluster.kubectl(
            "-n", program.namespace, "patch", "raycluster", name, "--type=json",
            "--field-manager=by-hand",
            "-p", _set_replicas(4),
        )  # fmt: skip
        _, steps = program.preview(refresh=True)
        assert ("update", RAY_CLUSTER, resource) in _changes(steps), _changes(steps)
        program.stack.up(color="never", refresh=True, on_output=program.output.append)
        spec = _ray_cluster(program.cluster, program.namespace, name)["spec"]
        assert spec["workerGroupSpecs"][0]["replicas"] == 2
        _assert_operator_healthy(program)

    def test_the_autoscalers_replicas_survive_preview_and_an_unrelated_up(
        self, shared_stack: SharedStack
    ) -> None:
        program, name = shared_stack.program, AUTOSCALED
        cluster = shared_stack.clusters[name]
        assert shared_stack.states_after_up[name] == "ready"
        # What the Ray autoscaler does: another field manager patches replicas.
        program.cluster.kubectl(
            "-n", program.namespace, "patch", "raycluster", name, "--type=json",
            "--field-manager=autoscaler", "-p", _set_replicas(3),
        )  # fmt: skip
        _, steps = program.preview(refresh=True)
        update = ("update", RAY_CLUSTER, _cluster_resource(program.namespace, name))
        assert update not in _changes(steps), _changes(steps)
        # An unrelated change: a label on the cluster.
        shared_stack.configure(name, {**cluster, "labels": {"team": "ml"}})
        program.up()
        live = _ray_cluster(program.cluster, program.namespace, name)
        assert live["metadata"]["labels"]["team"] == "ml"
        assert live["spec"]["workerGroupSpecs"][0]["replicas"] == 3
        _wait("three workers", lambda: len(_workers(program.cluster, program.namespace, name)) == 3)
        _assert_operator_healthy(program)


def test_gcs_ft_password_stays_secret_and_destroy_honours_the_finalizer(
    program_stack: Callable[..., ProgramStack], tmp_path: Path
) -> None:
    ft = {"gcsFaultToleranceOptions": {"redisAddress": "redis:6379"}}
    program, operator_namespace = _template_stack(
        program_stack,
        tmp_path,
        {"spec": _spec(replicas=1, **ft)},
        secret_path="spec.gcsFaultToleranceOptions.redisPassword.value",
        secret_value=PASSWORD,
    )
    assert PASSWORD not in program.config_file.read_text()

    program.preview()
    assert "[secret]" in program.text
    assert PASSWORD not in program.text
    program.up()
    assert PASSWORD not in program.text
    state = program.state_file_text()
    assert PASSWORD not in state and "ciphertext" in state
    live = _ray_cluster(program.cluster, program.namespace)
    assert GCS_FT_FINALIZER in live["metadata"]["finalizers"]
    assert live["status"]["state"] == "ready"
    # (Checked now: destroy deletes the operator's RoleBindings before the operator, and
    # its requests after that are refused, as they should be.)
    _assert_operator_healthy(program)

    owned = [
        ("namespace", program.namespace),
        ("namespace", operator_namespace),
        ("clusterrole", operator_namespace),
        ("clusterrolebinding", operator_namespace),
    ]
    for kind, name in owned:
        program.cluster.kubectl("get", kind, name, "-o", "name")  # there before destroy

    started = time.monotonic()
    program.destroy()
    print(f"pulumi destroy of a GCS-FT cluster and its operator: {time.monotonic() - started:.1f}s")
    assert "error" not in program.text.lower(), program.text[-3000:]
    # Nothing left: the namespaces (and so the cluster's pods and its cleanup Job), the
    # operator's cluster-scoped RBAC. (The operator is named after its namespace.)
    for kind, name in owned:
        found = program.cluster.kubectl("get", kind, name, "-o", "name", check=False)
        assert "NotFound" in found.stderr, f"{kind}/{name} left behind: {found.stdout}"


def test_an_invalid_workload_fails_up_before_anything_is_created(
    program_stack: Callable[..., ProgramStack],
) -> None:
    bad = _spec(replicas=1)
    bad["workerGroupSpecs"][0]["minReplicas"] = 9
    program = program_stack(
        template_config={"operator": {"name": "never", "namespace": "never"}}, crds_apart=True
    )
    program.write_config({"workloads": _workloads(program.namespace, {"spec": bad})})
    with pytest.raises(auto.CommandError) as failed:
        program.up()
    message = str(failed.value) + program.text
    entry = f"pulumi-ray:workloads.{program.namespace}.rayClusters[0]"
    key = f"{entry}.spec.workerGroupSpecs[0].minReplicas"
    assert key in message, message[-3000:]
    assert "Traceback" not in message
    resources = program.stack.export_stack().deployment.get("resources") or []
    assert [r["type"] for r in resources if r["type"] != "pulumi:pulumi:Stack"] == []
    assert program.cluster.kubectl("get", "namespace", "never", check=False).returncode != 0
