"""What one tier's session fixtures started, ended as soon as a worker leaves the tier.

pytest ends a session-scoped fixture at the end of the session, and its ``package``
scope means the same here (the test directories are not packages). The real node's
control plane and node, and the e2e tier's control plane, each serve one tier that a
single worker runs as one block (``tests/conftest.py`` ``GROUPS``); kept to the end, each
idle control plane took some 10 % of a core from the other workers for the rest of the
run (three to five API servers at once on two cores, the CPU saturated throughout).

A fixture is ended the way pytest itself ends it, so every fixture that uses it (a
session's stacks on the e2e control plane, whose teardown destroys them through its API
server) ends first, in pytest's order; ending only the control plane left those to
their session end, against an API server that was gone.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

import pytest

FULL_NODE_ENV = "PULUMI_RAY_NODE_COMPARE"
"""Set (``make node-compare``): the real node's whole tier runs, every scenario under both
operators; unset (``make test``), the modules of ``NODE_COMPARE_ONLY`` are left out
(deselected, and named in the run's header) and the rest run under ours alone."""

NODE_COMPARE_ONLY = (
    "tests/node/test_gcs_embedded_storage_on_the_node.py",
    "tests/node/test_mtls_on_the_node.py",
    "tests/node/test_network_policy_on_the_node.py",
    "tests/node136/",
)
"""The real node's proofs of KubeRay v1.7.0's alpha gates (each off by default), which
``make test`` leaves to ``make node-compare``: the node's tier is the suite's critical
path, on one worker, and these add a newer Ray image, cert-manager, a firewall and a
second node of Kubernetes 1.36 to it. Each gate's own tests (unit, the control plane's
integration tier, 1.36's included) stay in ``make test``."""


def full_node_tier() -> bool:
    return bool(os.environ.get(FULL_NODE_ENV))


def left_to_node_compare(nodeid: str) -> bool:
    """Whether the test ``nodeid`` is one ``make test`` leaves to ``make node-compare``."""
    return not full_node_tier() and nodeid.startswith(NODE_COMPARE_ONLY)


_ENDING: dict[Path, list[Callable[[], None]]] = {}
"""By tier directory, how to end the fixtures that asked to end with it."""


def end_with_tier(request: pytest.FixtureRequest, tier: Path) -> None:
    """End the fixture ``request`` sets up (and, before it, each fixture using it) when
    the worker's next test is outside ``tier``, or there is none. Its own teardown is the
    usual one after its ``yield``; pytest skips it at the session's end once it has run.
    """
    # pytest has no public call that ends one fixture early; FixtureDef.finish is what
    # its SetupState calls at a scope's end, and it runs the dependents' finalizers first.
    fixturedef = request._fixturedef  # type: ignore[attr-defined]
    when_leaving(tier, functools.partial(fixturedef.finish, request))


def when_leaving(tier: Path, end: Callable[[], None]) -> None:
    """Call ``end`` once, when the worker's next test is outside ``tier``."""
    _ENDING.setdefault(tier, []).append(end)


def left(test: Path, next_test: Path | None) -> None:
    """``test`` has ended and ``next_test`` runs next: end what each tier ``test`` is in and
    ``next_test`` is not keeps, latest started first."""
    for tier in [t for t in _ENDING if test.is_relative_to(t)]:
        if next_test is None or not next_test.is_relative_to(tier):
            for end in reversed(_ENDING.pop(tier)):
                end()


def after_test(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """The body of a ``pytest_runtest_teardown`` hook run after pytest's own teardown of
    ``item`` (``trylast``)."""
    left(item.path, nextitem.path if nextitem is not None else None)
