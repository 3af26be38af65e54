"""What a pytest-xdist worker keeps from one module to its next: a service that is slow to
start (a Ray head, Kueue) and that the next module wants too.

Each kind of service has a session fixture holding its ``Keeper``; that fixture depends
on whatever the service needs in order to stop (Kueue uninstalls its webhooks from the
control plane), so pytest ends it, and stops what it keeps, before those. The
module-scoped fixture that hands the service out is ``yield from keeper.kept(start,
stop=..., reset=...)``: the module gets what the worker kept from the module before,
reset to a fresh start's state, or a new one. The root conftest stops what is kept before
the first test of a module that does not want it (``stop_unwanted``), and orders the
modules so that those wanting the same kept service run one after another
(``tests/conftest.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

Service = TypeVar("Service")


class Keeper(Generic[Service]):
    """Keeps the service of the module-scoped fixture ``fixture`` between modules."""

    def __init__(self, fixture: str) -> None:
        self.fixture = fixture
        self._held: tuple[Service, Callable[[Service], None]] | None = None

    def kept(
        self,
        start: Callable[[], Service],
        *,
        stop: Callable[[Service], None],
        reset: Callable[[Service], bool],
    ) -> Iterator[Service]:
        """The body of the module-scoped fixture: the service kept from the worker's
        module before, or ``start()``; at the module's end it is kept for the next if
        ``reset`` makes it fresh, or stopped if ``reset`` says it cannot (it returns
        False, or it raises)."""
        held, self._held = self._held, None
        service = held[0] if held else start()
        try:
            yield service
        finally:
            try:
                fresh = reset(service)
            except Exception as error:  # dead or wedged: the next module starts one
                print(f"\n{self.fixture}: not handed on ({error}); stopping it")
                fresh = False
            if fresh:
                self._held = (service, stop)
            else:
                stop(service)

    def stop(self) -> None:
        """Stop the service kept, if one is."""
        held, self._held = self._held, None
        if held is not None:
            service, stop = held
            stop(service)


_keepers: dict[str, Keeper[Any]] = {}
"""This worker's keepers, by the module-scoped fixture each serves."""


def keeping(fixture: str) -> Iterator[Keeper[Any]]:
    """The body of the session fixture holding the ``Keeper`` of ``fixture``: what it
    keeps is stopped when the session ends."""
    keeper: Keeper[Any] = Keeper(fixture)
    _keepers[fixture] = keeper
    try:
        yield keeper
    finally:
        del _keepers[fixture]
        keeper.stop()


def stop_unwanted(wanted: Iterable[str]) -> None:
    """Stop what is kept for each fixture not in ``wanted`` (a module's fixture names)."""
    names = set(wanted)
    for fixture, keeper in list(_keepers.items()):
        if fixture not in names:
            keeper.stop()
