"""The one reader of user YAML: bombs refused quickly, legitimate anchors read, and
the same go-yaml v2 dialect on every path that reads a user's YAML."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from operator_runtime.api import (
    ErrorCode,
    FeatureGates,
    InvalidSpecError,
    RayCronJob,
    RayJob,
    RayService,
    validate_raycronjob,
    validate_rayjob,
    validate_rayservice,
)
from operator_runtime.api.useryaml import UserYamlError, YamlLimits, load_yaml, load_yaml_all
from operator_runtime.controllers.rayjob.states import _runtime_env
from operator_runtime.render import load_documents
from operator_runtime.render._gofmt import go_yaml_to_json
from operator_runtime.runtime.configuration import ConfigurationError, decode_configuration


def nested_bomb(levels: int = 9, width: int = 9) -> str:
    """Billion laughs: each anchor is a list of ``width`` aliases of the one before."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        refs = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


def refused(text: str, **limits: int) -> UserYamlError:
    started = time.monotonic()
    with pytest.raises(UserYamlError) as caught:
        load_yaml(text, limits=YamlLimits(**limits))
    assert time.monotonic() - started < 1.0
    return caught.value


def test_a_nested_alias_bomb_is_refused_at_once() -> None:
    bomb = nested_bomb()
    assert len(bomb) < 500
    error = refused(bomb)
    assert error.code is ErrorCode.YAML_TOO_LARGE
    assert "aliases expand the document" in str(error) and error.line is not None


def test_a_bomb_by_alias_count_is_refused() -> None:
    # Each alias adds one node (well within the expansion bound); their number is not.
    text = "a: &a x\nb: [" + ", ".join(["*a"] * 1_001) + "]\n"
    error = refused(text)
    assert error.code is ErrorCode.YAML_TOO_LARGE and "more than 1000 aliases" in str(error)


def test_a_bomb_by_expanded_size_under_the_alias_count_is_refused() -> None:
    # 30 aliases of a 1,000-node list: 30,000 nodes from about 3,000 written.
    base = "base: &b [" + ", ".join(["1"] * 1_000) + "]\n"
    text = base + "copies: [" + ", ".join(["*b"] * 30) + "]\n"
    assert refused(text).code is ErrorCode.YAML_TOO_LARGE
    # The same document with a few copies is fine: the floor allows 10,000 nodes.
    few = base + "copies: [" + ", ".join(["*b"] * 5) + "]\n"
    loaded = load_yaml(few)
    assert isinstance(loaded, dict) and len(loaded["copies"]) == 5  # type: ignore[arg-type]


def test_merge_key_bombs_are_refused() -> None:
    lines = ["a0: &a0 {k0: v, k1: v, k2: v, k3: v, k4: v, k5: v, k6: v, k7: v}"]
    for level in range(1, 12):
        lines.append(f"a{level}: &a{level} {{x: *a{level - 1}, y: *a{level - 1}, <<: *a0}}")
    assert refused("\n".join(lines)).code is ErrorCode.YAML_TOO_LARGE


def test_size_depth_and_self_reference_are_bounded() -> None:
    assert refused("a: " + "x" * 2_000, max_bytes=1_000).code is ErrorCode.YAML_TOO_LARGE
    assert refused("é" * 600, max_bytes=1_000).code is ErrorCode.YAML_TOO_LARGE  # bytes, not chars
    deep = "[" * 101 + "]" * 101
    assert "deeper than 100" in str(refused(deep))
    load_yaml("[" * 100 + "]" * 100)
    assert refused("a: &a [1, *a]").code is ErrorCode.YAML_INVALID
    assert refused("a: *nowhere").code is ErrorCode.YAML_INVALID


def test_legitimate_anchors_are_read() -> None:
    text = (
        "defaults: &opts {num_cpus: 1, memory: 100}\n"
        "applications:\n"
        "  - name: a\n    ray_actor_options: *opts\n"
        "  - name: b\n    ray_actor_options:\n      <<: *opts\n      num_cpus: 2\n"
    )
    assert load_yaml(text) == {
        "defaults": {"num_cpus": 1, "memory": 100},
        "applications": [
            {"name": "a", "ray_actor_options": {"num_cpus": 1, "memory": 100}},
            {"name": "b", "ray_actor_options": {"num_cpus": 2, "memory": 100}},
        ],
    }


def test_refusals_and_syntax_errors_are_one_error_type() -> None:
    for text in ("a: [1", "a: !!binary aGk=", "a: .nan", "{[1]: 2}", nested_bomb()):
        with pytest.raises(UserYamlError):
            load_yaml(text)


# The go-yaml v2 dialect (decoding into interface{}, then sigs.k8s.io/yaml's JSON).
DIALECT = (
    "START: 2024-01-01\nAT: 12:30\nFLAG: y\nSWITCH: on\nHEX: 0x1F\nOCT: 0755\nUND: 1_000\n"
    "F: 1e3\nQ: '12:30'\nNIL: ~\n1.5: float key\nn: a key n is false\n"
)
EXPECTED: dict[str, Any] = {
    "START": "2024-01-01", "AT": "12:30", "FLAG": True, "SWITCH": True, "HEX": 31, "OCT": 493,
    "UND": 1000, "F": 1000.0, "Q": "12:30", "NIL": None, "1.5": "float key",
    "false": "a key n is false",
}  # fmt: skip


def test_the_dialect_is_go_yaml_v2() -> None:
    assert load_yaml(DIALECT) == EXPECTED
    assert load_yaml_all(DIALECT + "---\n") == [EXPECTED, None]


def test_every_path_reads_the_same_dialect() -> None:
    # The HTTPMode submit path (a date and 12:30 were a date object and 750 there).
    assert _runtime_env(DIALECT) == EXPECTED
    # The K8sJobMode submit line and the serve config PUT (render).
    assert json.loads(go_yaml_to_json(DIALECT)) == EXPECTED
    # The render CLI's input and the stack template's manifests.
    assert load_documents(DIALECT, "<stdin>") == [EXPECTED]


def test_the_http_mode_path_refuses_a_bomb_with_the_typed_error() -> None:
    with pytest.raises(UserYamlError):
        _runtime_env(nested_bomb())


def test_the_operator_configuration_is_bounded() -> None:
    with pytest.raises(ConfigurationError, match="aliases expand"):
        decode_configuration(nested_bomb())


JOB: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "metadata": {"name": "bomb", "namespace": "tenant"},
    "spec": {
        "entrypoint": "python -c 'print(1)'",
        "rayClusterSpec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "h", "image": "ray"}]}},
            }
        },
    },
}


def test_a_rayjob_bomb_is_a_spec_violation_with_the_field_path() -> None:
    job = RayJob.model_validate({**JOB, "spec": {**JOB["spec"], "runtimeEnvYAML": nested_bomb()}})
    started = time.monotonic()
    with pytest.raises(InvalidSpecError) as caught:
        validate_rayjob(job, FeatureGates())
    assert time.monotonic() - started < 1.0
    assert caught.value.code is ErrorCode.YAML_TOO_LARGE
    assert caught.value.path == "spec.runtimeEnvYAML"
    assert str(caught.value).startswith("RayJob tenant/bomb: spec.runtimeEnvYAML: ")


def test_a_rayservice_bomb_is_a_spec_violation_with_the_field_path() -> None:
    cluster = JOB["spec"]["rayClusterSpec"]
    service = RayService.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayService",
            "metadata": {"name": "bomb", "namespace": "tenant"},
            "spec": {"rayClusterConfig": cluster, "serveConfigV2": nested_bomb()},
        }
    )
    with pytest.raises(InvalidSpecError) as caught:
        validate_rayservice(service, FeatureGates())
    assert caught.value.code is ErrorCode.YAML_TOO_LARGE
    assert caught.value.path == "spec.serveConfigV2"


def test_a_raycronjob_template_bomb_is_a_spec_violation_with_the_field_path() -> None:
    cron = RayCronJob.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCronJob",
            "metadata": {"name": "bomb", "namespace": "tenant"},
            "spec": {
                "schedule": "* * * * *",
                "jobTemplate": {**JOB["spec"], "runtimeEnvYAML": nested_bomb()},
            },
        }
    )
    with pytest.raises(InvalidSpecError) as caught:
        validate_raycronjob(cron, FeatureGates.parse("RayCronJob=true"))
    assert caught.value.code is ErrorCode.YAML_TOO_LARGE
    assert caught.value.path == "spec.jobTemplate.runtimeEnvYAML"
