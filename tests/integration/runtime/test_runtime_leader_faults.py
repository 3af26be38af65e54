"""Leader election under faults: never two leaders acting at once.

Two operator processes run the ``Copier``; the first (the leader) reaches the API
server through the fault proxy, which records every request it forwards with the wall
time the server answered. The standby talks to the server directly. A write by the
old leader that the server answered after the standby's ``acquireTime`` is an
overlapping write; each test counts them and requires zero.
"""

from __future__ import annotations

import datetime
import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import CONFIG_MAP, LEASE
from tests.faultproxy import FaultProxy, Record, Request, match
from tests.integration.runtime.conftest import (
    OperatorProcess,
    make_client,
    source_manifest,
)
from tests.waiting import wait_for

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 6, 4, 1


def flags(
    namespace: str,
    lease: str,
    timing: tuple[int, int, int] = (LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD),
) -> tuple[str, ...]:
    """An operator of ``namespace`` electing its leader on ``lease``; ``timing``: the
    lease duration, renew deadline and retry period in seconds."""
    duration, deadline, retry = timing
    return (f"--watch-namespace={namespace}", f"--leader-election-namespace={namespace}",
            "--reconcile-concurrency=2",
            f"--leader-election-id={lease}",
            f"--leader-election-lease-duration={duration}",
            f"--leader-election-renew-deadline={deadline}",
            f"--leader-election-retry-period={retry}")  # fmt: skip


def lease_spec(client: KubeClient, namespace: str, lease: str) -> dict[str, Any]:
    try:
        return dict(client.get(LEASE, lease, namespace).get("spec") or {})
    except Exception:
        return {}


def wall(micro_time: str) -> float:
    return datetime.datetime.fromisoformat(micro_time.replace("Z", "+00:00")).timestamp()


def is_write(request: Request) -> bool:
    return request.method != "GET" and "/leases/" not in request.path


def overlapping(proxy: FaultProxy, acquired_at: float) -> list[Record]:
    """Writes of the old leader the server answered after the standby took the Lease."""
    return [r for r in proxy.records(is_write)
            if r.forwarded is not None and r.forwarded >= acquired_at]  # fmt: skip


@contextmanager
def leader_behind_proxy(
    cluster: LocalCluster, namespace: str, lease: str, tmp_path: Path, start_operator: Any
) -> Iterator[tuple[FaultProxy, OperatorProcess, OperatorProcess, KubeClient]]:
    client = make_client(cluster)
    with FaultProxy(cluster, tmp_path) as proxy:
        old = start_operator(*flags(namespace, lease), f"--kubeconfig={proxy.kubeconfig}",
                             name="old")  # fmt: skip
        wait_for("the first operator leads",
                 lambda: lease_spec(client, namespace, lease).get("holderIdentity"))  # fmt: skip
        new = start_operator(*flags(namespace, lease), name="new")
        wait_for("a warm standby", lambda: _logged(new, "waiting to lead"), 30)
        assert lease_spec(client, namespace, lease)["holderIdentity"] == old.identity()
        yield proxy, old, new, client


@pytest.mark.parametrize("fault", ["pause", "slow"])
def test_a_leader_cut_off_from_its_lease_stops_before_the_standby_takes_over(
    local_cluster: LocalCluster, namespace: str, tmp_path: Path, start_operator: Any, fault: str
) -> None:
    lease = f"fault-lease-{fault}"
    with leader_behind_proxy(local_cluster, namespace, lease, tmp_path, start_operator) as (
        proxy, old, new, client,
    ):  # fmt: skip
        names = [f"src-{i}" for i in range(3)]
        for name in names:
            client.create(source_manifest(namespace, name, {"v": "0"}))
        # A reconcile still running when the Lease lapses: its write must be refused,
        # and the process must not wait for it (no drain).
        client.create(source_manifest(namespace, "stuck", {"v": "0"},
                                      {"runtime-test/sleep": "30"}))  # fmt: skip
        churning = threading.Event()
        churner = threading.Thread(target=_churn, args=(client, namespace, names, churning))
        churner.start()
        try:
            wait_for("the leader writes", lambda: len(proxy.records(is_write)) >= 5, 30)
            # The API server stops answering this leader's Lease requests (or answers
            # each only after longer than the renew deadline), nothing else: its
            # workers could go on writing, which is the danger.
            paused_at = time.time()
            if fault == "pause":
                proxy.pause(match(suffix=f"/leases/{lease}"))
            else:
                proxy.slow(match(suffix=f"/leases/{lease}"), RENEW_DEADLINE + 1)
            exited: list[float] = []
            threading.Thread(
                target=lambda: (old.process.wait(), exited.append(time.time())), daemon=True
            ).start()
            spec = wait_for(
                "the standby takes the Lease",
                lambda: (s := lease_spec(client, namespace, lease)).get("holderIdentity")
                == new.identity() and s,
                LEASE_DURATION + RENEW_DEADLINE + 10, 0.02,
            )  # fmt: skip
            acquired_at = wall(spec["acquireTime"])
            time.sleep(2)  # the old leader's workers would keep going now
        finally:
            churning.set()
            churner.join()
        exit_code = _exit_code(old, 10)
        exited_after = (exited[0] if exited else time.time()) - paused_at
        writes = proxy.records(is_write)
        last_write = max(r.forwarded or 0.0 for r in writes)
        overlap = overlapping(proxy, acquired_at)
        print(f"\n[report] lease requests {fault}: old leader's last write "
              f"{last_write - paused_at:.2f}s after the pause, standby acquired after "
              f"{acquired_at - paused_at:.2f}s; old leader writes {len(writes)}, "
              f"overlapping {len(overlap)}; old exit code {exit_code} "
              f"{exited_after:.2f}s after the pause")  # fmt: skip
        assert overlap == [], [(r.request.method, r.request.path) for r in overlap]
        assert last_write - paused_at <= RENEW_DEADLINE + 1.0
        assert exit_code == 1, "lost the Lease: exit non-zero, to be restarted"
        assert not any(r.request.path.endswith("/stuck") for r in writes)
        # The stuck reconcile sleeps 30 s: a drain would exit after it. Leaving it shows
        # as an exit soon after the renew deadline (a few seconds more on a loaded machine).
        assert exited_after <= RENEW_DEADLINE + 10, "no drain: the stuck reconcile is left"
        assert _logged(old, "lost the leader Lease")
        # The new leader does the work now.
        wait_for("the new leader copies", lambda: _copied_by(client, namespace, names, new), 30)


def test_sigterm_during_a_reconcile_longer_than_the_lease_keeps_one_leader(
    local_cluster: LocalCluster, namespace: str, tmp_path: Path, start_operator: Any
) -> None:
    lease = "fault-lease-sigterm"
    reconcile_seconds = LEASE_DURATION + 4
    with leader_behind_proxy(local_cluster, namespace, lease, tmp_path, start_operator) as (
        proxy, old, new, client,
    ):  # fmt: skip
        client.create(source_manifest(namespace, "slow", {"v": "1"},
                                      {"runtime-test/sleep": str(reconcile_seconds)}))  # fmt: skip
        time.sleep(1)  # the leader is now inside the slow reconcile
        termed_at = time.time()
        old.process.send_signal(signal.SIGTERM)
        spec = wait_for(
            "the standby takes the Lease",
            lambda: (s := lease_spec(client, namespace, lease)).get("holderIdentity")
            == new.identity() and s,
            reconcile_seconds + LEASE_DURATION + 10, 0.02,
        )  # fmt: skip
        acquired_at = wall(spec["acquireTime"])
        exit_code = _exit_code(old, 30)
        source = client.get(CONFIG_MAP, "slow", namespace)
        writes = [r for r in proxy.records(is_write) if r.forwarded and r.forwarded >= termed_at]
        overlap = overlapping(proxy, acquired_at)
        print(f"\n[report] SIGTERM during a {reconcile_seconds}s reconcile (lease "
              f"{LEASE_DURATION}s): old leader wrote {len(writes)} time(s) while draining, "
              f"last {max((r.forwarded or 0.0) for r in writes) - termed_at:.2f}s after "
              f"SIGTERM; standby acquired {acquired_at - termed_at:.2f}s after SIGTERM; "
              f"overlapping writes {len(overlap)}; old exit code {exit_code}")  # fmt: skip
        assert overlap == [], [(r.request.method, r.request.path) for r in overlap]
        assert writes, "the drained reconcile finished its work"
        assert source["metadata"]["annotations"]["runtime-test/reconciled-by"] == str(
            old.process.pid
        )
        # Without renewals the Lease would have gone after LEASE_DURATION.
        assert acquired_at - termed_at >= LEASE_DURATION + 1.5, "renewed through the drain"
        assert exit_code == 0


def _exit_code(process: OperatorProcess, timeout: float) -> int | None:
    try:
        return process.process.wait(timeout)
    except subprocess.TimeoutExpired:
        return None  # still running


def _churn(client: KubeClient, namespace: str, names: list[str], done: threading.Event) -> None:
    value = 0
    while not done.wait(0.1):
        value += 1
        for name in names:
            client.patch(CONFIG_MAP, name, namespace, {"data": {"v": str(value)}})


def _copied_by(client: KubeClient, namespace: str, names: list[str],
               process: OperatorProcess) -> bool:  # fmt: skip
    client.patch(CONFIG_MAP, names[0], namespace, {"data": {"v": "after"}})
    time.sleep(0.5)
    annotations = client.get(CONFIG_MAP, names[0], namespace)["metadata"]["annotations"]
    return bool(annotations.get("runtime-test/reconciled-by") == str(process.process.pid))


def _logged(process: OperatorProcess, text: str) -> bool:
    return any(text in json.dumps(line) for line in process.log_lines())
