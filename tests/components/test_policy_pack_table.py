"""The pack serves ``rules.CHECKS``, the table the review runs too: each policy's name,
description and config adapter live once. pulumi_policy lives in the pack's own
virtualenv, so a stand-in of it lets ``pack.policies()`` be built here; the real engine
runs the pack in tests/e2e/test_policy_pack.py."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from components.policy import image_lines
from components.policy.rules import CHECKS
from tests.components.review_previews import cluster

ALLOWED = {"allowedPrefixes": ["registry.example.com/ray/"]}


@pytest.fixture
def fake_pulumi_policy(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """Just enough of pulumi_policy (which lives in the pack's own virtualenv) for
    ``pack.policies()`` to build its policies here."""

    class Record:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.args, self.kwargs = args, kwargs

    module = types.ModuleType("pulumi_policy")
    for name in ("PolicyConfigSchema", "PolicyPack", "ResourceValidationPolicy"):
        setattr(module, name, type(name, (Record,), {}))
    module.EnforcementLevel = types.SimpleNamespace(MANDATORY="mandatory")  # type: ignore[attr-defined]
    module.ReportViolation = module.ResourceValidationArgs = object  # type: ignore[attr-defined]
    proxy = types.ModuleType("pulumi_policy.proxy")
    proxy.UnknownValueError = type("UnknownValueError", (Exception,), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pulumi_policy", module)
    monkeypatch.setitem(sys.modules, "pulumi_policy.proxy", proxy)
    monkeypatch.delitem(sys.modules, "components.policy.pack", raising=False)
    yield module
    sys.modules.pop("components.policy.pack", None)


def test_the_pack_serves_the_same_table(fake_pulumi_policy: types.ModuleType) -> None:
    from components.policy import pack

    policies = pack.policies()
    assert [p.kwargs["name"] for p in policies] == [check.name for check in CHECKS]
    assert [p.kwargs["description"] for p in policies] == [c.description for c in CHECKS]
    images = policies[[c.name for c in CHECKS].index("ray-image-allow-list")]
    reported: list[str] = []
    arguments = types.SimpleNamespace(
        resource_type="kubernetes:ray.io/v1:RayCluster",
        props=cluster(2),
        get_config=lambda: ALLOWED,
    )
    images.kwargs["validate"](arguments, lambda line, _urn: reported.append(line))
    assert reported == image_lines(cluster(2), ["registry.example.com/ray/"])
    assert all(type(line) is str for line in reported)
