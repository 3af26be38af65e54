"""What a pytest-xdist worker keeps from one module to its next: a service that is slow to
start (a Ray head, Kueue) and that the next module wants too.

A module-scoped fixture's body is ``yield from kept(name, start, stop=..., reset=...)``:
the module gets what the worker kept from the module before, reset to a fresh start's
state, or a new one. The root conftest stops what is kept before the first test of a
module that does not want it (``stop_unwanted``) and at the session's end, and orders the
modules so that those wanting the same kept service run one after another
(``tests/conftest.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

Service = TypeVar("Service")
_kept: dict[str, tuple[Any, Callable[[Any], None]]] = {}
"""This worker's kept services between modules, by the fixture that hands them out: the
service and how to stop it."""


def kept(
    fixture: str,
    start: Callable[[], Service],
    *,
    stop: Callable[[Service], None],
    reset: Callable[[Service], bool],
) -> Iterator[Service]:
    """The body of the module-scoped fixture named ``fixture``: the service kept from the
    worker's module before (``reset`` to a fresh start's state first), or ``start()``; at
    the module's end it is kept for the next, or stopped if ``reset`` says it cannot be
    made fresh (it returns False, or it raises)."""
    found = _kept.pop(fixture, None)
    service = found[0] if found else start()
    try:
        yield service
    finally:
        try:
            fresh = reset(service)
        except Exception as error:  # dead or wedged: the next module starts one
            print(f"\n{fixture}: not handed on ({error}); stopping it")
            fresh = False
        if fresh:
            _kept[fixture] = (service, stop)
        else:
            stop(service)


def stop_unwanted(wanted: Iterable[str]) -> None:
    """Stop each kept service whose fixture is not in ``wanted`` (a module's fixture
    names, or nothing at the session's end)."""
    names = set(wanted)
    for fixture in [name for name in _kept if name not in names]:
        stop_kept(fixture)


def stop_kept(fixture: str) -> None:
    """Stop the service ``fixture`` keeps, if it keeps one. A service that needs a
    session fixture to stop (Kueue uninstalls its webhooks from the control plane) is
    stopped so from a session fixture that starts after that one, and so ends before it:
    ``pytest_sessionfinish`` comes after every session fixture has ended."""
    if (found := _kept.pop(fixture, None)) is not None:
        service, stop = found
        stop(service)
