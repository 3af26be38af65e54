"""The generated `ray start` command: flag rendering and derived parameters."""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from operator_runtime.api.labels import NodeType
from operator_runtime.render._json import go_json_float, go_json_float_map
from operator_runtime.render.raystart import (
    RayStartInput,
    build_ray_start,
    head_port,
    is_gpu_resource,
    render_flags,
)

FACT_SHEET_HEAD = (
    "ray start --head  --block  --dashboard-agent-listen-port=52365  "
    "--dashboard-host=0.0.0.0  --metrics-export-port=8080  --num-cpus=1 "
)


def limits(**values: Any) -> dict[str, Any]:
    return {"limits": {k.replace("_", "/"): v for k, v in values.items()}}


def test_head_command_matches_the_fact_sheet_character_for_character() -> None:
    start = build_ray_start(
        spec=RayStartInput(node_type=NodeType.HEAD, container_resources={"limits": {"cpu": "1"}})
    )
    assert start.command == FACT_SHEET_HEAD


def test_worker_gets_address_and_no_dashboard_host() -> None:
    start = build_ray_start(
        spec=RayStartInput(node_type=NodeType.WORKER, head_address="h.ns.svc.cluster.local:6379")
    )
    assert start.command == (
        "ray start  --address=h.ns.svc.cluster.local:6379  --block  "
        "--dashboard-agent-listen-port=52365  --metrics-export-port=8080 "
    )


@pytest.mark.parametrize(
    ("params", "flags"),
    [
        ({"block": "true"}, " --block "),
        ({"verbose": "False"}, ""),
        ({"x": "TRUE"}, " --x "),
        ({"log-color": "false"}, " --log-color=false "),
        ({"include-dashboard": "true"}, " --include-dashboard=true "),
        ({"include-log-monitor": "False"}, " --include-log-monitor=False "),
        ({"b": "1", "a": "yes"}, " --a=yes  --b=1 "),
    ],
)
def test_flag_rendering(params: dict[str, str], flags: str) -> None:
    assert render_flags(params) == flags


def test_user_params_are_kept_and_block_is_forced() -> None:
    start = build_ray_start(
        spec=RayStartInput(
            node_type=NodeType.HEAD,
            params={
                "block": "false",
                "dashboard-host": "127.0.0.1",
                "metrics-export-port": "9090",
                "dashboard-agent-listen-port": "1234",
            },
        )
    )
    assert start.params["block"] == "true"
    assert start.params["dashboard-host"] == "127.0.0.1"
    assert start.params["metrics-export-port"] == "9090"
    assert start.params["dashboard-agent-listen-port"] == "1234"


@pytest.mark.parametrize(
    ("resources", "num_cpus"),
    [
        ({"limits": {"cpu": "500m"}}, "1"),
        ({"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}, "2"),
        ({"requests": {"cpu": "1500m"}}, "2"),
        ({"limits": {"cpu": "0"}, "requests": {"cpu": "3"}}, "3"),
        ({"limits": {"memory": "1Gi"}}, None),
    ],
)
def test_num_cpus_rounds_up_limit_then_request(
    resources: dict[str, Any], num_cpus: str | None
) -> None:
    start = build_ray_start(
        spec=RayStartInput(node_type=NodeType.WORKER, container_resources=resources)
    )
    assert start.params.get("num-cpus") == num_cpus


def test_memory_comes_from_the_limit_only() -> None:
    only_request = {"requests": {"memory": "1Gi"}}
    start = build_ray_start(
        spec=RayStartInput(node_type=NodeType.WORKER, container_resources=only_request)
    )
    assert "memory" not in start.params
    start = build_ray_start(
        spec=RayStartInput(node_type=NodeType.WORKER, container_resources=limits(memory="2Gi"))
    )
    assert start.params["memory"] == str(2 * 2**30)


@pytest.mark.parametrize(
    ("key", "is_gpu"),
    [
        ("nvidia.com/gpu", True),
        ("amd.com/gpu", True),
        ("nvidia.com/mig-1g.5gb", True),
        ("nvidia.com/mig-3g.40gb", True),
        ("nvidia.com/mig-1g.5gbx", False),
        ("google.com/tpu", False),
        ("cpu", False),
    ],
)
def test_gpu_key_rule(key: str, is_gpu: bool) -> None:
    assert is_gpu_resource(key) is is_gpu


def test_num_gpus_takes_the_first_nonzero_gpu_key_in_sorted_order() -> None:
    resources = {"limits": {"nvidia.com/gpu": "4", "amd.com/gpu": "0", "b.io/gpu": "2"}}
    start = build_ray_start(
        spec=RayStartInput(node_type=NodeType.WORKER, container_resources=resources)
    )
    assert start.params["num-gpus"] == "2"


def test_user_num_gpus_wins() -> None:
    start = build_ray_start(
        spec=RayStartInput(
            node_type=NodeType.WORKER,
            params={"num-gpus": "0"},
            container_resources={"limits": {"nvidia.com/gpu": "1"}},
        )
    )
    assert start.params["num-gpus"] == "0"


def test_first_accelerator_only_goes_into_resources_json() -> None:
    resources = {"limits": {"google.com/tpu": "4", "aws.amazon.com/neuroncore": "2"}}
    start = build_ray_start(
        spec=RayStartInput(node_type=NodeType.WORKER, container_resources=resources)
    )
    assert start.params["resources"] == """'{"neuron_cores":2}'"""


def test_accelerator_already_declared_is_left_alone() -> None:
    start = build_ray_start(
        spec=RayStartInput(
            node_type=NodeType.WORKER,
            params={"resources": '"{"TPU": 8}"'},
            container_resources={"limits": {"aws.amazon.com/neuroncore": "2"}},
        )
    )
    assert start.params["resources"] == '"{"TPU": 8}"'


def test_malformed_resources_json_skips_gpus_and_accelerators() -> None:
    start = build_ray_start(
        spec=RayStartInput(
            node_type=NodeType.WORKER,
            params={"resources": "not json"},
            container_resources={"limits": {"nvidia.com/gpu": "1", "google.com/tpu": "4"}},
        )
    )
    assert "num-gpus" not in start.params
    assert start.params["resources"] == "not json"


def test_group_resources_override_params_and_replace_resources_json() -> None:
    start = build_ray_start(
        spec=RayStartInput(
            node_type=NodeType.WORKER,
            params={"num-cpus": "8", "resources": "'{\"x\": 1}'"},
            group_resources={"CPU": "2500m", "Memory": "1Ki", "nvidia.com/GPU": "1", "tpu": "4"},
            container_resources={"limits": {"cpu": "16"}},
        )
    )
    assert start.params["num-cpus"] == "3"
    assert start.params["memory"] == "1024"
    assert start.params["num-gpus"] == "1"
    assert start.params["resources"] == """'{"tpu":4}'"""


def test_group_labels_render_sorted() -> None:
    start = build_ray_start(
        spec=RayStartInput(node_type=NodeType.HEAD, group_labels={"zone": "b", "accel": "x"})
    )
    assert start.params["labels"] == "accel=x,zone=b"


def test_head_autoscaling_and_redis_params() -> None:
    start = build_ray_start(
        spec=RayStartInput(
            node_type=NodeType.HEAD,
            params={"no-monitor": "false"},
            autoscaling=True,
            redis_username_env=True,
            redis_password_env=True,
        )
    )
    assert start.params["no-monitor"] == "true"
    assert start.params["redis-username"] == "$REDIS_USERNAME"
    assert start.params["redis-password"] == "$REDIS_PASSWORD"


def test_head_port() -> None:
    assert head_port(None) == "6379"
    assert head_port({"port": "6380"}) == "6380"


@pytest.mark.parametrize(
    ("value", "text"),
    [(4.0, "4"), (0.5, "0.5"), (1e21, "1e+21"), (1.5e-7, "1.5e-7"), (1e-10, "1e-10"), (0.0, "0")],
)
def test_go_float_format(value: float, text: str) -> None:
    assert go_json_float(value) == text


def test_go_float_map_is_sorted_and_compact() -> None:
    assert go_json_float_map({"b": 1.0, "a": 2.5}) == '{"a":2.5,"b":1}'


@pytest.mark.parametrize(
    "value",
    ["a b", "1; touch /tmp/pwned", "$(id)", "`id`", "x && y", "a'b", '"unclosed', "*"],
)
def test_a_value_is_exactly_one_word_of_the_command(value: str) -> None:
    """A value with a space or ``;`` must neither break nor extend ``ray start``."""
    start = build_ray_start(spec=RayStartInput(node_type=NodeType.HEAD, params={"temp-dir": value}))
    words = shlex.split(start.command)
    assert f"--temp-dir={value}" in words
    assert words[:3] == ["ray", "start", "--head"]
    assert len(words) == 3 + len(start.params)


@pytest.mark.parametrize(
    "value",
    [
        "$REDIS_PASSWORD",
        "${MY_POD_IP}",
        "'{\"TPU\":4}'",
        '"{\\"CPU\\": 1, \\"Custom\\": 5}"',
        "k1=v1,k2=v2",
        "/tmp/ray",
        "100000000",
        "",
    ],
)
def test_what_bash_already_reads_as_one_word_stays_byte_identical(value: str) -> None:
    assert render_flags({"k": value}) == f" --k={value} "
