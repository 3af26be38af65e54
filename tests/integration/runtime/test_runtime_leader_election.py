"""Two operator processes: one leads; SIGKILL and SIGTERM fail over (times reported)."""

from __future__ import annotations

import json
import signal
import time
from typing import Any

from hack.localcluster import LocalCluster
from tests.integration.runtime.conftest import OperatorProcess, source_manifest
from tests.waiting import wait_for

LEASE_FLAGS = (
    "--leader-election-lease-duration=6",
    "--leader-election-renew-deadline=4",
    "--leader-election-retry-period=1",
)


def holder(cluster: LocalCluster, namespace: str, lease: str) -> str:
    result = cluster.kubectl("-n", namespace, "get", "lease", lease, "-o",
                             "jsonpath={.spec.holderIdentity}", check=False)  # fmt: skip
    return result.stdout.strip() if result.returncode == 0 else ""


def reconciled_by(cluster: LocalCluster, namespace: str, name: str) -> str:
    result = cluster.kubectl("-n", namespace, "get", "configmap", name, "-o", "json", check=False)
    if result.returncode:
        return ""
    annotations = json.loads(result.stdout)["metadata"].get("annotations") or {}
    return str(annotations.get("runtime-test/reconciled-by", ""))


def test_one_leader_and_failover_after_sigkill_and_sigterm(
    local_cluster: LocalCluster, namespace: str, start_operator: Any
) -> None:
    lease = "runtime-test-leader"
    flags = (f"--watch-namespace={namespace}", f"--leader-election-namespace={namespace}",
             f"--leader-election-id={lease}", *LEASE_FLAGS)  # fmt: skip
    first: OperatorProcess = start_operator(*flags, name="first")
    second: OperatorProcess = start_operator(*flags, name="second")
    processes = {p.process.pid: p for p in (first, second)}
    wait_for("identities logged", lambda: all(_has_identity(p) for p in (first, second)), 30)
    identities = {p.identity(): p for p in (first, second)}
    leader_id = wait_for("a leader", lambda: holder(local_cluster, namespace, lease), 30)
    leader = identities[leader_id]
    standby = next(p for p in (first, second) if p is not leader)

    # Exactly one process reconciles: the one holding the Lease.
    local_cluster.kubectl(
        "apply", "-f", "-", input=json.dumps(source_manifest(namespace, "one", {"v": "1"}))
    )
    by = wait_for("reconciled", lambda: reconciled_by(local_cluster, namespace, "one"), 30)
    assert processes[int(by)] is leader
    time.sleep(3)  # several renew periods: the standby must stay a standby
    assert holder(local_cluster, namespace, lease) == leader_id
    assert all(p.process.poll() is None for p in (first, second))

    # SIGKILL: the standby takes over once the lease expires on its own clock.
    killed_at = time.monotonic()
    leader.process.send_signal(signal.SIGKILL)
    standby_id = standby.identity()
    wait_for("takeover after SIGKILL",
             lambda: holder(local_cluster, namespace, lease) == standby_id,
             30, 0.02)  # fmt: skip
    sigkill_failover = time.monotonic() - killed_at
    local_cluster.kubectl(
        "apply", "-f", "-", input=json.dumps(source_manifest(namespace, "two", {"v": "1"}))
    )
    by = wait_for("reconciled by the new leader",
                  lambda: reconciled_by(local_cluster, namespace, "two"), 30)  # fmt: skip
    assert processes[int(by)] is standby
    assert sigkill_failover <= 6 + 1 + 1.5, "lease duration + one retry period (+ slack)"

    # SIGTERM: the leader drains, releases the Lease and exits 0; a standby takes over
    # at once (it watches the Lease) instead of waiting out the lease duration.
    third: OperatorProcess = start_operator(*flags, name="third")
    wait_for("third started", lambda: _has_identity(third), 30)
    third_id = third.identity()
    wait_for("third is a warm standby", lambda: _logged(third, "waiting to lead"), 30)
    time.sleep(2)
    termed_at = time.monotonic()
    standby.process.send_signal(signal.SIGTERM)
    wait_for(
        "takeover after SIGTERM",
        lambda: holder(local_cluster, namespace, lease) == third_id,
        10,
        0.01,
    )
    sigterm_failover = time.monotonic() - termed_at
    assert standby.process.wait(30) == 0
    print(f"\n[report] failover after SIGKILL: {sigkill_failover:.2f}s (lease 6s, retry 1s); "
          f"after SIGTERM: {sigterm_failover:.2f}s")  # fmt: skip
    assert sigterm_failover < 2.0


def _has_identity(process: OperatorProcess) -> bool:
    try:
        process.identity()
    except AssertionError:
        return False
    return True


def _logged(process: OperatorProcess, text: str) -> bool:
    return any(text in str(line.get("msg", "")) for line in process.log_lines())
