"""RayJob under Pulumi mocks: a new spec is a new name, DeleteSelf is refused."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from components import RayJob
from components._inputs import RayInputError
from tests.components.workload_mocks import (
    Run,
    annotations,
    cluster_spec,
    container,
    run,
    secret_paths,
)

CR = "kubernetes:ray.io/v1:RayJob"
COMPONENT = "ray:index:RayJob"


def job_spec(**overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "entrypoint": "python /app/train.py",
        "ray_cluster_spec": cluster_spec(),
        "shutdown_after_job_finishes": True,
    }
    spec.update(overrides)
    return spec


def outputs(job: RayJob) -> dict[str, Any]:
    return {
        "name": job.name,
        "namespace": job.namespace,
        "head_service_name": job.head_service_name,
        "dashboard_url": job.dashboard_url,
        "status": job.status,
    }


def name_of(program: Any) -> str:
    name: str = run(program).one(CR).inputs["metadata"]["name"]
    return name


def test_registers_one_rayjob_named_after_its_spec() -> None:
    result = run(lambda: outputs(RayJob("train", namespace="team-a", **job_spec())))
    component, cr = result.registrations
    assert (component.type, cr.type) == (COMPONENT, CR)
    assert cr.parent == component.urn
    name = cr.inputs["metadata"]["name"]
    assert name.startswith("train-") and len(name) == len("train-") + 8
    assert cr.inputs["spec"]["entrypoint"] == "python /app/train.py"
    assert cr.inputs["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"] == "gpu"
    assert (
        annotations(cr)["pulumi.com/waitFor"] == "jsonpath={.status.jobDeploymentStatus}=Complete"
    )
    # A new name is what makes the change a replacement; create the new run first.
    assert not cr.request.deleteBeforeReplace
    assert list(cr.request.replaceOnChanges) == []
    assert result.value["name"] == name
    assert result.value["head_service_name"] == "op-made-x7k2p-head-svc"
    assert result.value["dashboard_url"] == (
        "http://op-made-x7k2p-head-svc.team-a.svc.cluster.local:8265"
    )
    assert "serve_url" not in result.value  # a RayJob serves nothing: no such output


def test_same_spec_same_name_changed_spec_new_name() -> None:
    first = name_of(lambda: RayJob("train", **job_spec()))
    again = name_of(lambda: RayJob("train", **job_spec()))
    changed = name_of(lambda: RayJob("train", **job_spec(entrypoint="python /app/v2.py")))
    assert first == again
    assert changed != first
    assert changed.startswith("train-")


def test_an_output_valued_spec_gets_the_name_of_the_same_literal_spec() -> None:
    literal = name_of(lambda: RayJob("train", **job_spec()))

    def program() -> Any:
        spec = job_spec()
        spec["entrypoint"] = pulumi.Output.from_input("python /app/train.py")
        return RayJob("train", **spec)

    assert name_of(program) == literal


def test_secrets_take_no_part_in_the_name_and_stay_secret() -> None:
    def program(password: str) -> Any:
        spec = job_spec()
        env = [{"name": "TOKEN", "value": pulumi.Output.secret(password)}]
        spec["ray_cluster_spec"]["head_group_spec"]["template"]["spec"]["containers"][0]["env"] = (
            env
        )
        return RayJob("train", **spec)

    one, other = run(lambda: program("a")).one(CR), run(lambda: program("b")).one(CR)
    assert one.inputs["metadata"]["name"] == other.inputs["metadata"]["name"]
    assert list(secret_paths(one.raw)) == [
        "spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].env[0].value"
    ]


@pytest.mark.parametrize(
    ("strategy", "path"),
    [
        (
            {"deletion_rules": [
                {"policy": "DeleteCluster", "condition": {"job_status": "FAILED"}},
                {"policy": "DeleteSelf", "condition": {"job_status": "SUCCEEDED"}},
            ]},
            "spec.deletionStrategy.deletionRules[1].policy",
        ),
        (
            {"on_success": {"policy": "DeleteSelf"}, "on_failure": {"policy": "DeleteCluster"}},
            "spec.deletionStrategy.onSuccess.policy",
        ),
    ],
)  # fmt: skip
def test_delete_self_is_refused_before_anything_is_registered(
    strategy: dict[str, Any], path: str
) -> None:
    seen = Run()
    spec = job_spec(deletion_strategy=strategy, shutdown_after_job_finishes=None)
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayJob("train", namespace="team-a", **spec), into=seen)
    assert seen.registrations == []
    assert caught.value.path == path
    message = str(caught.value)
    assert message.startswith("RayJob team-a/train-")
    assert "pulumi up --refresh" in message
    assert "DeleteCluster or DeleteWorkers" in message
    assert "[RAYJOB_DELETE_SELF_UNDER_PULUMI]" in message


def test_delete_cluster_rules_are_fine() -> None:
    strategy = {
        "deletion_rules": [{"policy": "DeleteCluster", "condition": {"job_status": "FAILED"}}]
    }
    spec = job_spec(deletion_strategy=strategy, shutdown_after_job_finishes=None)
    cr = run(lambda: RayJob("train", **spec)).one(CR)
    assert cr.inputs["spec"]["deletionStrategy"]["deletionRules"][0]["policy"] == "DeleteCluster"


def test_the_name_limit_counts_the_digest() -> None:
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayJob("a" * 40, **job_spec()))
    assert caught.value.path == "metadata.name"
    assert "at most 38 characters" in str(caught.value)


def test_the_job_cluster_leaves_replicas_to_the_autoscaler() -> None:
    spec = job_spec(ray_cluster_spec=cluster_spec(enable_in_tree_autoscaling=True))
    cr = run(lambda: RayJob("train", **spec)).one(CR)
    group = cr.inputs["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert "replicas" not in group
    assert "pulumi.com/patchForce" not in annotations(cr)


def test_a_selected_cluster_is_known_before_the_operator_reports() -> None:
    spec = {
        "entrypoint": "python job.py",
        "cluster_selector": {"ray.io/cluster": "shared"},
        "submitter_pod_template": {"spec": {"containers": [container("submitter")]}},
    }
    result = run(lambda: outputs(RayJob("adhoc", namespace="team-a", **spec)))
    assert result.value["head_service_name"] == "shared-head-svc"
    cr = result.one(CR)
    assert "rayClusterSpec" not in cr.inputs["spec"]
    assert annotations(cr)["pulumi.com/patchForce"] == "true"
