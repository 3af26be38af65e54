"""What a controller records while it closes reaches the API server."""

from __future__ import annotations

from collections.abc import Sequence

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.kinds import EVENT, Object
from operator_runtime.runtime.manager import Manager
from operator_runtime.runtime.reconcile import ObjectKey, Result, Watch
from tests.integration.runtime.conftest import make_client, running_manager, source_manifest


class Closer:
    """No reconciles; its ``close()`` records one event, as the RayCluster controller's
    create queue does for the creates it lets finish at shutdown."""

    name = "closer"

    def __init__(self, context: ControllerContext, regarding: Object) -> None:
        self.events = context.events(self.name)
        self.regarding = regarding
        self.closed = 0

    def watches(self) -> Sequence[Watch]:
        return ()

    def reconcile(self, key: ObjectKey) -> Result:
        return Result()

    def close(self) -> None:
        self.closed += 1
        self.events.record(self.regarding, "Normal", "ClosedCleanly", "closed at shutdown")


def test_events_recorded_by_close_are_flushed_before_the_sink_closes(
    local_cluster: LocalCluster, namespace: str, client: KubeClient
) -> None:
    regarding = client.create(source_manifest(namespace, "regarding", {"k": "v"}))
    closers: list[Closer] = []

    def add_closer(manager: Manager) -> None:
        closers.append(Closer(manager.context(), regarding))
        manager.add(closers[0])

    with running_manager(make_client(local_cluster), namespace, before_start=add_closer):
        pass
    assert [closer.closed for closer in closers] == [1]
    reasons = [event.get("reason") for event in client.list(EVENT, namespace)["items"]]
    assert "ClosedCleanly" in reasons, reasons
