"""The ``spec.managedBy`` hand-off, one rule for the RayCluster, RayJob and RayService
controllers."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from operator_runtime.controllers.managedby import managed_elsewhere


@pytest.mark.parametrize(
    "spec",
    [{}, {"managedBy": None}, {"managedBy": ""}, {"managedBy": "ray.io/kuberay-operator"}],
)
def test_unset_empty_or_kuberay_is_ours(spec: dict[str, Any]) -> None:
    assert not managed_elsewhere("ns/x", {"metadata": {}, "spec": spec})


def test_an_object_without_a_spec_is_ours() -> None:
    assert not managed_elsewhere("ns/x", {"metadata": {}})


def test_another_manager_is_left_alone_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    raw = {"metadata": {}, "spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}
    with caplog.at_level(logging.INFO):
        assert managed_elsewhere("ns/x", raw)
    assert "ns/x: managed by kueue.x-k8s.io/multikueue; skipped" in caplog.text
