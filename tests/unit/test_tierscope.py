"""tests/tierscope.py: a tier's fixtures end when a worker leaves the tier, the fixtures
using them first, once, and not while it stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import tierscope

pytest_plugins = ["pytester"]

TIER = Path("/repo/tests/node")


def test_a_tier_ends_when_the_next_test_is_elsewhere_and_only_once() -> None:
    ended: list[str] = []
    tierscope.when_leaving(TIER, lambda: ended.append("cluster"))
    tierscope.left(TIER / "test_a.py", TIER / "test_b.py")
    assert ended == []
    tierscope.left(TIER / "test_b.py", Path("/repo/tests/integration/test_c.py"))
    assert ended == ["cluster"]
    tierscope.left(TIER / "test_b.py", None)
    assert ended == ["cluster"]


def test_the_last_test_of_a_run_ends_it_latest_first() -> None:
    ended: list[str] = []
    tierscope.when_leaving(TIER, lambda: ended.append("first"))
    tierscope.when_leaving(TIER, lambda: ended.append("second"))
    tierscope.left(Path("/repo/tests/e2e/test_x.py"), None)
    assert ended == []
    tierscope.left(TIER / "test_a.py", None)
    assert ended == ["second", "first"]


CONFTEST = """
import pytest
from tests import tierscope

@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    tierscope.after_test(item, nextitem)
"""

TIER_CONFTEST = """
from pathlib import Path
import pytest
from tests import tierscope

LOG = Path(__file__).parents[1] / "log"

def note(line):
    with LOG.open("a") as log:
        log.write(line + "\\n")

@pytest.fixture(scope="session")
def control_plane(request):
    tierscope.end_with_tier(request, Path(__file__).parent)
    yield
    note("control plane stopped")

@pytest.fixture(scope="session")
def stacks(control_plane):
    yield
    note("stacks destroyed")
"""


def test_a_fixture_that_uses_the_tiers_ends_before_it_when_the_worker_leaves(
    pytester: pytest.Pytester,
) -> None:
    """The e2e tier's session stacks are destroyed through its control plane: they must
    end before it, not at the session's end against an API server that is gone."""
    pytester.makeconftest(CONFTEST)
    pytester.mkpydir("e2e").joinpath("conftest.py").write_text(TIER_CONFTEST)
    pytester.path.joinpath("e2e", "test_a.py").write_text("def test_a(stacks):\n    pass\n")
    pytester.mkpydir("unit").joinpath("test_b.py").write_text(
        "from pathlib import Path\n"
        "def test_b():\n"
        "    with (Path(__file__).parents[1] / 'log').open('a') as log:\n"
        "        log.write('unit test ran\\n')\n"
    )
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert pytester.path.joinpath("log").read_text().splitlines() == [
        "stacks destroyed",
        "control plane stopped",
        "unit test ran",
    ]


def test_make_test_leaves_the_gate_proofs_to_node_compare_and_node_compare_runs_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(tierscope.FULL_NODE_ENV, raising=False)
    proof = "tests/node/test_mtls_on_the_node.py::test_a_tls_cluster"
    assert tierscope.left_to_node_compare(proof)
    assert tierscope.left_to_node_compare("tests/node136/test_sidecar.py::test_x")
    assert not tierscope.left_to_node_compare("tests/node/test_ray_on_the_node.py::test_x")
    assert not tierscope.left_to_node_compare("tests/integration/mtls/test_cert_manager.py::t")
    monkeypatch.setenv(tierscope.FULL_NODE_ENV, "1")
    assert not tierscope.left_to_node_compare(proof)


def test_every_module_left_to_node_compare_exists() -> None:
    """A renamed module would otherwise drop out of the list and back into make test."""
    root = Path(__file__).resolve().parents[2]
    for path in tierscope.NODE_COMPARE_ONLY:
        assert (root / path).exists(), path
