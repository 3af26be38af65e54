"""``tests/conftest.py``'s run order and work groups: what pytest-xdist's workers are
handed, in which order."""

from __future__ import annotations

from tests.conftest import run_rank, work_group

HEAD = "module_ray_head"


def ordered(modules: dict[str, bool]) -> list[str]:
    """Sort modules (path -> wants the kept head), given in pytest's collection order
    (by path), as the session does."""
    assert list(modules) == sorted(modules)
    groups = {work_group(path) for path, wants in modules.items() if wants}
    return sorted(
        modules,
        key=lambda path: run_rank(
            path, group_wants_head=work_group(path) in groups, module_wants_head=modules[path]
        ),
    )


def test_the_head_modules_of_integration_and_contract_run_in_one_stretch_between_them() -> None:
    modules = {
        "tests/components/test_cluster.py": False,
        "tests/contract/test_dashboard_jobs.py": True,
        "tests/contract/test_dashboard_token.py": False,
        "tests/e2e/test_engine.py": False,
        "tests/integration/raycluster/test_scaling.py": False,
        "tests/integration/rayjob/test_lifecycle.py": True,
        "tests/integration/test_tenant_isolation.py": True,
        "tests/unit/test_a.py": False,
    }
    assert ordered(modules) == [
        "tests/e2e/test_engine.py",
        "tests/integration/raycluster/test_scaling.py",
        "tests/contract/test_dashboard_jobs.py",
        "tests/integration/rayjob/test_lifecycle.py",
        "tests/integration/test_tenant_isolation.py",
        "tests/contract/test_dashboard_token.py",
        "tests/components/test_cluster.py",
        "tests/unit/test_a.py",
    ]


def test_the_kueue_modules_are_one_group_its_modules_without_the_head_first() -> None:
    modules = {
        "tests/integration/batch/test_gang_operator.py": True,
        "tests/integration/batch/test_kueue_cluster_selector.py": True,
        "tests/integration/batch/test_kueue_raycluster.py": False,
        "tests/integration/batch/test_kueue_rayjob.py": True,
        "tests/integration/raycluster/test_scaling.py": False,
    }
    assert {work_group(path) for path in modules if "kueue" in path} == {
        "tests/integration/batch/test_kueue_"
    }
    assert ordered(modules) == [
        "tests/integration/raycluster/test_scaling.py",
        "tests/integration/batch/test_kueue_raycluster.py",
        "tests/integration/batch/test_gang_operator.py",
        "tests/integration/batch/test_kueue_cluster_selector.py",
        "tests/integration/batch/test_kueue_rayjob.py",
    ]


def test_a_module_is_its_own_group_and_e2e_and_components_are_one_each() -> None:
    assert work_group("tests/integration/test_podrunner.py::test_x[a]") == (
        "tests/integration/test_podrunner.py"
    )
    assert work_group("tests/e2e/test_consumers.py::test_y") == "tests/e2e/"
    assert work_group("tests/components/test_cluster.py::test_z") == "tests/components/"
