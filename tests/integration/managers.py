"""An operator's manager run on a thread for the length of a ``with`` block, as
integration tests drive it in-process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from operator_runtime.runtime.manager import Manager
from tests.waiting import wait_for


@dataclass
class ManagerRun:
    """The thread running a manager, the event that stops it, and its exit code once
    it has returned."""

    stop: threading.Event
    thread: threading.Thread
    exit_codes: list[int] = field(default_factory=list)


@contextmanager
def manager_running(manager: Manager, *, synced: bool = True) -> Iterator[ManagerRun]:
    """Run ``manager`` until the block ends, then stop it and require it to drain and
    exit 0.

    With ``synced`` the block starts only once the manager leads and every informer has
    listed: a test that creates and deletes an object at once would otherwise race the
    first list (the object in neither the list nor a watch event), which a loaded
    machine lost once in a CI run."""
    run = ManagerRun(threading.Event(), threading.Thread())
    run.thread = threading.Thread(
        target=lambda: run.exit_codes.append(manager.run(run.stop)), daemon=True
    )
    run.thread.start()
    try:
        if synced:
            wait_for("the operator's caches", lambda: manager.leading.is_set() and manager.ready())
        yield run
    finally:
        run.stop.set()
        run.thread.join(60)
    assert run.exit_codes == [0], "the operator must drain and exit 0"
