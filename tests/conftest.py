"""Session fixtures shared by every tier.

``local_cluster`` starts one real control plane (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok) for the whole session, on first use.
It never skips: if the control plane cannot be built or started, every test that needs
it fails with the reason.

The tiers that start a control plane, a Ray head or the Pulumi engine run only inside
the sandbox (``hack/sandbox``): a session that collects any of them outside stops before
the first test, with one line saying how to run it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hack import sandbox
from hack.localcluster import TEST_GO_RUNTIME, LocalCluster, start_for_tests
from hack.localcluster.versions import KUBERNETES, KUBERNETES_WRAPPERS
from tests import scratch, tierscope, waiting
from tests.kept import Keeper, keeping, stop_unwanted
from tests.kubeclient import fresh_namespace

pytest_plugins = ("tests.cputime",)

REPO_ROOT = Path(__file__).resolve().parents[1]
SANDBOXED_TIERS = ("integration", "contract", "e2e", "node", "node136")
OUTSIDE_SANDBOX_EXIT = 4
"""pytest's own code for a usage error: the tests were started the wrong way."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_dir = REPO_ROOT / "tests"
    tiers = {
        item.path.relative_to(tests_dir).parts[0]
        for item in items
        if item.path.is_relative_to(tests_dir)
    }
    needing = sorted(tiers.intersection(SANDBOXED_TIERS))
    if needing and not sandbox.inside():
        pytest.exit(
            f"the {', '.join(needing)} tiers run only inside the sandbox: use `make test` "
            "or `python -m hack.sandbox -- python -m pytest ...`",
            returncode=OUTSIDE_SANDBOX_EXIT,
        )
    left = [item for item in items if tierscope.left_to_node_compare(item.nodeid)]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if item not in left]
    wanting = [item for item in items if KEPT_HEAD in getattr(item, "fixturenames", ())]
    modules, groups = {item.path for item in wanting}, {work_group(i.nodeid) for i in wanting}
    items.sort(
        key=lambda item: run_rank(
            item.nodeid,
            group_wants_head=work_group(item.nodeid) in groups,
            module_wants_head=item.path in modules,
        )
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    """Say which real-node proofs a run without the whole node tier leaves out."""
    if tierscope.full_node_tier():
        return None
    return (f"left to `make node-compare` ({tierscope.FULL_NODE_ENV}=1): "
            + ", ".join(tierscope.NODE_COMPARE_ONLY))  # fmt: skip


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After pytest's own teardown of ``item``: the tiers it leaves end what they kept
    (``tests/tierscope.py``)."""
    tierscope.after_test(item, nextitem)


TIER_ORDER = ("node", "node136", "e2e", "integration", "contract", "components", "unit")
KEPT_HEAD = "module_ray_head"
"""The fixture of the Ray head a worker keeps from module to module (``tests/rayhead.py``)."""
HEAD_STRETCH_TIERS = ("integration", "contract")


def tier_rank(nodeid: str) -> int:
    tier = nodeid.split("/", 2)[1] if nodeid.startswith("tests/") else ""
    return TIER_ORDER.index(tier) if tier in TIER_ORDER else len(TIER_ORDER)


def run_rank(
    nodeid: str, *, group_wants_head: bool, module_wants_head: bool
) -> tuple[int, int, int]:
    """Where a test runs in the session (stable: pytest's order where ranks are equal).

    Slowest tier first, so that on pytest-xdist's workers the long groups start at once
    and the short ones fill the end. The work groups of the integration and contract
    tiers that want the kept Ray head run in one stretch between those two tiers' other
    groups, so that a worker goes from one to the next with its head rather than
    stopping it for a module between and starting another (some 16 CPU-s a head); in a
    group, its modules that do not want the head come first."""
    tier = tier_rank(nodeid)
    if group_wants_head and TIER_ORDER[tier] in HEAD_STRETCH_TIERS:
        return (TIER_ORDER.index("integration"), 1, int(module_wants_head))
    return (tier, 0, 0)


GROUPS = (
    "tests/node",
    "tests/e2e/",
    "tests/components/",
    "tests/integration/batch/test_kueue_",
    "tests/integration/kubernetes136/",
)
"""What one worker runs whole, in pytest's order: the real node's tiers (``tests/node``
and, after it, ``tests/node136``: one real node per sandbox, so never at once), whose
control plane and node of their own (``tests/node/conftest.py``) one worker then starts
once each; e2e,
whose control plane of its own
(``tests/e2e/conftest.py``) one worker then starts once; components, whose in-process
program runs (``components._program``) leave the thread without an event loop, which
Pulumi's mocks in a later module of the same worker need (a module order that happens
to hold in pytest's order, not on any worker's); the Kueue modules, which then start
Kueue once (``tests/kept.py``); the second Kubernetes version's modules, whose control
plane of its own (``tests/integration/kubernetes136/conftest.py``) one worker then starts
once."""


def work_group(nodeid: str) -> str:
    """What one pytest-xdist worker runs together: a module, so that its fixtures (its
    Ray head, its operator) start once; or one of ``GROUPS``."""
    for prefix in GROUPS:
        if nodeid.startswith(prefix):
            return prefix
    return nodeid.split("::", 1)[0]


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``make test``'s scheduler: groups (``work_group``) handed out in collection order.

    Our own because ``--dist loadgroup`` silently stopped grouping on pytest 9.2
    (pytest-xdist issue 1386: it marks a group by editing node ids, which pytest no
    longer reads back); ``_split_scope`` is the documented extension point of xdist's
    scope scheduler."""
    from xdist.scheduler import LoadScopeScheduling

    class WorkGroups(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return work_group(nodeid)

    config.option.loadscopereorder = False  # keep the tier order above
    return WorkGroups(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before a module's first test, stop what is kept from the module before (a Ray
    head, Kueue) that none of its tests asks for (``tests/kept.py``)."""
    if item.session.stash.get(_CURRENT_MODULE, None) == item.path:
        return
    item.session.stash[_CURRENT_MODULE] = item.path
    stop_unwanted(
        name
        for other in item.session.items
        if other.path == item.path
        for name in getattr(other, "fixturenames", ())
    )


_CURRENT_MODULE = pytest.StashKey[Path]()


@pytest.fixture(scope="session", autouse=True)
def _helpers_scratch(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The test helpers' files (operator logs, pod runners' work) under this run's base
    temporary directory, which pytest prunes (``tests/scratch.py``)."""
    scratch.use_root(tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True)
def _timeouts_see_only_this_test() -> Iterator[None]:
    """What a test left registered for timeouts to report goes with it (``tests/waiting.py``)."""
    with waiting.one_tests_sources():
        yield


@pytest.fixture(scope="session")
def ray_head_keeper() -> Iterator[Keeper[Any]]:
    """Keeps the worker's Ray head between modules (``tests/rayhead.py``
    ``module_ray_head``); a head needs nothing else to stop."""
    yield from keeping("module_ray_head")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kubernetes",
        choices=tuple(KUBERNETES_WRAPPERS),
        default=KUBERNETES,
        help="the Kubernetes version of the session's control plane (`local_cluster`; "
        f"default {KUBERNETES}); built by `make localcluster` or `make localcluster-1.36`",
    )


@pytest.fixture(scope="session")
def local_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """The session's control plane, of ``--kubernetes`` (the default version unless the
    run asks for another: docs/testing.md)."""
    with start_for_tests(
        tmp_path_factory.mktemp("localcluster"), go_runtime=TEST_GO_RUNTIME,
        kubernetes=request.config.getoption("kubernetes"),
    ) as cluster:  # fmt: skip
        yield cluster


@pytest.fixture
def namespace(local_cluster: LocalCluster) -> Iterator[str]:
    """A fresh namespace whose ``default`` ServiceAccount exists (pods need it)."""
    with fresh_namespace(local_cluster) as name:
        yield name
