"""Which pods or multi-host replicas a worker group loses when it has too many: one rule
(``scale_down_victims``) for both. The real-server proofs are in
tests/integration/raycluster."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from operator_runtime.controllers.raycluster.scaledown import scale_down_victims


def run_with(*, autoscaling: bool, random_pod_delete: bool = False) -> Any:
    """Only what the rule reads: the autoscaler switch, the option, the key."""
    return SimpleNamespace(
        key="ns/c",
        cluster=SimpleNamespace(spec=SimpleNamespace(enable_in_tree_autoscaling=autoscaling)),
        tools=SimpleNamespace(options=SimpleNamespace(random_pod_delete=random_pod_delete)),
    )


SERVING = {"a": True, "b": False, "c": True, "d": False}


def test_units_not_serving_go_first_then_in_the_order_given() -> None:
    victims = scale_down_victims(
        run_with(autoscaling=False), "g", ["a", "b", "c", "d"], 3, serving=SERVING.__getitem__
    )
    assert victims == ["b", "d", "a"]


def test_the_autoscaler_decides_alone(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        victims = scale_down_victims(
            run_with(autoscaling=True),
            "g",
            ["a", "b"],
            1,
            serving=SERVING.__getitem__,
            unit="replicas",
        )
    assert victims == []
    assert "group g has 1 replicas too many; the autoscaler decides" in caplog.text


def test_random_pod_delete_lets_the_operator_choose_under_the_autoscaler() -> None:
    victims = scale_down_victims(
        run_with(autoscaling=True, random_pod_delete=True),
        "g",
        ["a", "b"],
        1,
        serving=SERVING.__getitem__,
    )
    assert victims == ["b"]
