"""The pieces under the workload components: wire paths, wire form, timeouts, errors."""

from __future__ import annotations

import datetime
from typing import Any

import pulumi
import pytest

from components._inputs import (
    RayInputError,
    has_outputs,
    redact_secrets,
    to_wire,
    wire_path,
)
from components._workload import parse_timeout
from operator_runtime import api
from tests.components.workload_mocks import run, unknown


@pytest.mark.parametrize(
    ("loc", "expected"),
    [
        (("spec", "worker_group_specs", 0, "min_replicas"), "spec.workerGroupSpecs[0].minReplicas"),
        (("spec", "workerGroupSpecs", 2, "minReplicas"), "spec.workerGroupSpecs[2].minReplicas"),
        (("spec", "head_group_spec", "ray_start_params", "num-cpus"),
         "spec.headGroupSpec.rayStartParams.num-cpus"),
        (("spec", "headGroupSpec", "template", "spec", "dict[str,...]", "containers",
          "list[nullable[union[str,int]]]", 0, "str"),
         "spec.headGroupSpec.template.spec.containers[0]"),
        (("spec", "serve_config_v2"), "spec.serveConfigV2"),
    ],
)  # fmt: skip
def test_pydantic_locations_become_wire_paths(loc: tuple[Any, ...], expected: str) -> None:
    model = api.RayService if "serve_config_v2" in loc else api.RayCluster
    assert wire_path(model, loc) == expected


def test_has_outputs_looks_everywhere_but_in_models() -> None:
    assert not has_outputs({"a": [1, {"b": "c"}]})
    assert not has_outputs(api.ScaleStrategy(workers_to_delete=["x"]))

    @pulumi.runtime.test
    def check() -> None:
        assert has_outputs({"a": [1, {"b": pulumi.Output.from_input("c")}]})
        assert has_outputs([unknown()])

    check()


def test_to_wire_keeps_only_what_was_given_in_camel_case() -> None:
    group = {"group_name": "g", "min_replicas": "2", "template": {"spec": {"nodeSelector": {}}}}
    assert to_wire(api.WorkerGroupSpec, group) == {
        "groupName": "g",
        "minReplicas": 2,
        "template": {"spec": {"nodeSelector": {}}},
    }
    model = api.WorkerGroupSpec.model_validate(group)
    assert to_wire(api.WorkerGroupSpec, model) == to_wire(api.WorkerGroupSpec, group)


def test_to_wire_maps_keys_around_outputs_and_inside_them() -> None:
    def program() -> Any:
        image = pulumi.Output.from_input("ray:2")
        spec = {
            "head_group_spec": {"template": {"spec": {"containers": [{"image": image}]}}},
            "worker_group_specs": [pulumi.Output.from_input({"group_name": "g", "template": {}})],
        }
        return to_wire(api.RayClusterSpec, spec)

    assert run(program).value == {
        "headGroupSpec": {"template": {"spec": {"containers": [{"image": "ray:2"}]}}},
        "workerGroupSpecs": [{"groupName": "g", "template": {}}],
    }


def test_redaction_hides_secrets_keeps_the_rest_and_is_not_secret() -> None:
    facts: dict[str, Any] = {}

    def program() -> Any:
        redacted = pulumi.Output.from_input(
            redact_secrets({"a": pulumi.Output.secret("pw"), "b": [pulumi.Output.from_input(1)]})
        )

        async def record() -> None:
            facts["secret"] = await redacted.is_secret()

        return pulumi.Output.all(redacted, pulumi.Output.from_input(record()))

    result = run(program)
    assert result.value[0] == {"a": "<secret>", "b": [1]}
    assert facts == {"secret": False}


@pytest.mark.parametrize(
    ("given", "seconds"),
    [(600, 600), (90.5, 90), ("10m", 600), ("1h30m", 5400), ("45s", 45),
     (datetime.timedelta(minutes=2), 120), (None, None)],
)  # fmt: skip
def test_timeouts(given: Any, seconds: int | None) -> None:
    assert parse_timeout(given, "RayCluster demo") == seconds


@pytest.mark.parametrize("given", ["", "10 minutes", "m", 0, -5, True])
def test_bad_timeouts_name_the_argument(given: Any) -> None:
    with pytest.raises(RayInputError) as caught:
        parse_timeout(given, "RayCluster demo")
    assert caught.value.path == "timeout"
    assert str(caught.value).startswith("RayCluster demo: timeout: ")


def test_bad_feature_gates_are_an_input_error() -> None:
    from components import RayCluster
    from tests.components.workload_mocks import cluster_spec

    with pytest.raises(RayInputError) as caught:
        run(lambda: RayCluster("demo", feature_gates="RayCronJob=maybe", **cluster_spec()))
    assert caught.value.path == "feature_gates"
    assert str(caught.value).startswith("RayCluster demo: feature_gates: ")
    assert "RayCronJob=maybe" in str(caught.value)


def test_history_server_options_pass_with_their_gate_and_are_refused_without() -> None:
    from components import RayCluster
    from tests.components.workload_mocks import cluster_spec

    bucket = [{"name": "STORAGE_BACKEND", "value": "GCS"}, {"name": "GCS_BUCKET", "value": "b"}]
    spec = cluster_spec(
        history_server_options={"collector_options": {"image": "c:1", "env": bucket}}
    )
    run(lambda: RayCluster("demo", feature_gates="RayClusterHistoryServer=true", **spec))
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayCluster("demo", **spec))
    assert caught.value.path == "spec.historyServerOptions"
    assert "RayClusterHistoryServer" in str(caught.value)
