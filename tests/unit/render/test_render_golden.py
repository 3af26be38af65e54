"""Every case under ``cases/`` renders byte for byte to its golden file."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from operator_runtime.api import validate_raycluster
from operator_runtime.render import ClusterRenderParams, render_cluster
from tests.unit.render.conftest import CASES, case_names, dump, load_case


@pytest.mark.parametrize("case", case_names())
def test_case_matches_golden(case: str, check_golden: Callable[[str, str], None]) -> None:
    cluster, options = load_case(CASES / f"{case}.yaml")
    validate_raycluster(cluster, options.feature_gates)  # cases must be real, valid input
    objects = render_cluster(params=ClusterRenderParams(cluster=cluster, options=options))
    check_golden(case, dump(objects))


@pytest.mark.parametrize("case", case_names())
def test_render_is_deterministic_and_leaves_the_model_alone(case: str) -> None:
    cluster, options = load_case(CASES / f"{case}.yaml")
    before = cluster.model_dump()
    first = dump(render_cluster(params=ClusterRenderParams(cluster=cluster, options=options)))
    second = dump(render_cluster(params=ClusterRenderParams(cluster=cluster, options=options)))
    assert first == second
    assert cluster.model_dump() == before


def test_there_are_cases() -> None:
    assert len(case_names()) >= 8
