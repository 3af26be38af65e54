"""The gang schedulers built from their Go modules (``hack/gang``) run against the local
control plane and bind a gang's pods only once all of its ``minMember`` exist.

The schedulers themselves, without our operator (``test_gang_operator.py`` has it): a
PodGroup of three and pods that name it, each scheduler beside the control plane's
kube-scheduler under the ``schedulerName`` KubeRay v1.7.0 gives pods
(``scheduler-plugins-scheduler``, the second scheduler of scheduler-plugins' chart, and
``volcano``), two members created, then the third.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack import gang, processes
from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_ports
from operator_runtime.render.batchscheduler import SCHEDULER_PLUGINS_SCHEDULER_NAME
from tests.waiting import wait_for

VOLCANO_CONF = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {
            "plugins": [
                {"name": name}
                for name in ("overcommit", "drf", "predicates", "proportion", "nodeorder")
            ]
        },
    ],
}
"""Volcano's default scheduler configuration, less binpack."""


def coscheduling_config(kubeconfig: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "profiles": [
            {
                "schedulerName": SCHEDULER_PLUGINS_SCHEDULER_NAME,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "*"}],
                    },
                },
                "pluginConfig": [
                    {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}
                ],
            }
        ],
    }


@contextlib.contextmanager
def scheduler(
    cluster: LocalCluster, name: str, state: Path, arguments: list[str]
) -> Iterator[Path]:
    """Install ``name``'s CRDs and run its scheduler until the block ends; yields its log."""
    built = gang.ensure_built(name)
    crds = gang.SCHEDULERS[name].crd_names
    cluster.apply_crds(*(built.path(c) for c in crds))
    # wait_for_crds: a plain kubectl wait right after the apply can fail at once, seen
    # here as ".status.conditions accessor error" on a CRD with no status yet.
    cluster.wait_for_crds(
        *[yaml.safe_load(built.path(c).read_text())["metadata"]["name"] for c in crds]
    )
    log_path = state / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(built.path(gang.BINARY)), *arguments],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield log_path
    finally:
        processes.stop(process, grace=10)


@pytest.fixture(scope="module")
def coscheduler(
    local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("coscheduler")
    config = state / "config.yaml"
    config.write_text(yaml.safe_dump(coscheduling_config(local_cluster.kubeconfig)))
    kubeconfig = local_cluster.kubeconfig
    with scheduler(
        local_cluster, "scheduler-plugins", state,
        [f"--config={config}", "--secure-port=0", f"--authentication-kubeconfig={kubeconfig}",
         f"--authorization-kubeconfig={kubeconfig}", "--v=2",
         # A pod last refused by Coscheduling's PreFilter is retried on a PodGroup or pod
         # event, or when the scheduler flushes its unschedulable pool: every 5 minutes by
         # default, which one gang test then waited out (331 s in a whole run). Honoured
         # with --config (kube-scheduler applies it apart from the component config).
         "--pod-max-in-unschedulable-pods-duration=20s"],
    ) as log:  # fmt: skip
        yield log


@pytest.fixture(scope="module")
def volcano(
    local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("volcano")
    # A directory of its own: the scheduler reloads its conf on any write in the conf's
    # directory, and each reload writes a log line; with its log beside the conf that was
    # a reload loop (a core's worth of CPU, 86 MB of log in a minute).
    conf = state / "conf" / "scheduler.conf"
    conf.parent.mkdir()
    conf.write_text(yaml.safe_dump(VOLCANO_CONF))
    listen, health = free_ports(2)
    with scheduler(
        local_cluster, "volcano", state,
        [f"--kubeconfig={local_cluster.kubeconfig}", f"--scheduler-conf={conf}",
         "--leader-elect=false", f"--listen-address=127.0.0.1:{listen}",
         f"--healthz-address=127.0.0.1:{health}", f"--cache-dump-dir={state}",
         "--schedule-period=200ms", "--v=2"],
    ) as log:  # fmt: skip
        open_default_queue(local_cluster)
        yield log
    loads = log.read_text(errors="replace").count(CONF_LOADED)
    assert loads == 1, f"Volcano loaded its conf {loads} times (a reload loop?): {log}"


CONF_LOADED = "Finished loading scheduler config"
"""Volcano's log line (``--v=2``) for each load of its ``--scheduler-conf``."""


def open_default_queue(cluster: LocalCluster) -> None:
    """The scheduler creates queue ``default`` but leaves its state to Volcano's controller
    (not run here), and schedules nothing from a queue that is not ``Open``."""
    wait_for(
        "Volcano's default queue",
        lambda: cluster.kubectl("get", "queue.scheduling.volcano.sh", "default", check=False)
        .returncode == 0,
        60, 0.2,
    )  # fmt: skip
    cluster.kubectl(
        "patch", "queue.scheduling.volcano.sh", "default", "--subresource=status",
        "--type=merge", "--patch", '{"status": {"state": "Open"}}',
    )  # fmt: skip


def member(name: str, namespace: str, scheduler_name: str, group: dict[str, str]) -> str:
    """A pod of one CPU in the gang: ``group`` is the label or annotation naming it."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": scheduler_name,
            "containers": [
                {"name": "c", "image": "rayproject/ray", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
    }
    pod["metadata"].update(group)
    return yaml.safe_dump(pod)


def nodes_of(cluster: LocalCluster, namespace: str) -> dict[str, str]:
    items = cluster.get_json("-n", namespace, "pods")["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in items}


def gang_of_three(
    cluster: LocalCluster,
    namespace: str,
    scheduler_name: str,
    group: dict[str, str],
    tried: Callable[[], bool],
) -> tuple[dict[str, str], dict[str, str], float]:
    """Two members; once the scheduler says it tried both and held them (``tried``), the
    third: (nodes after two, nodes after three, seconds from the third's creation to all
    bound). A fixed pause here once let the third come before a scheduler that started
    late under load had looked at the first two: nothing was held, nothing was shown."""
    for index in range(2):
        cluster.kubectl(
            "apply", "-f", "-", input=member(f"p{index}", namespace, scheduler_name, group)
        )
    wait_for("the scheduler to try the first two members and hold them", tried, 60, 0.2)
    two = nodes_of(cluster, namespace)
    last = time.monotonic()
    cluster.kubectl("apply", "-f", "-", input=member("p2", namespace, scheduler_name, group))
    three = wait_for(
        "all three bound",
        lambda: all((found := nodes_of(cluster, namespace)).values()) and found,
        60, 0.1,
    )  # fmt: skip
    return two, three, time.monotonic() - last


def test_coscheduling_binds_a_gang_only_once_all_its_members_exist(
    local_cluster: LocalCluster, coscheduler: Path, namespace: str
) -> None:
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "gang", "namespace": namespace},
        "spec": {"minMember": 3},
    }
    local_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(group))
    label = {"labels": {"scheduling.x-k8s.io/pod-group": "gang"}}

    def both_held() -> bool:
        """The scheduler's log has refused p0 and p1 for want of siblings."""
        refusals = [
            line
            for line in coscheduler.read_text().splitlines()
            if "cannot find enough sibling pods" in line
        ]
        return all(any(f'pod="{namespace}/p{i}"' in line for line in refusals) for i in (0, 1))

    two, three, seconds = gang_of_three(
        local_cluster, namespace, SCHEDULER_PLUGINS_SCHEDULER_NAME, label, both_held
    )
    print(f"\nscheduler-plugins: third member created -> all bound in {seconds:.2f} s")
    assert two == {"p0": "", "p1": ""}, two
    assert sorted(three) == ["p0", "p1", "p2"]


def test_volcano_binds_a_gang_only_once_all_its_members_exist(
    local_cluster: LocalCluster, volcano: Path, namespace: str
) -> None:
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "gang", "namespace": namespace},
        "spec": {"minMember": 3, "queue": "default"},
    }
    local_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(group))
    annotation = {"annotations": {"scheduling.k8s.io/group-name": "gang"}}

    def both_held() -> bool:
        """The PodGroup says its two pending members are unschedulable as a gang
        ("... 2 Pending, 3 minAvailable; ...")."""
        found = local_cluster.get_json(
            "-n", namespace, "podgroups.scheduling.volcano.sh", "gang"
        )  # fmt: skip
        return any(
            c.get("type") == "Unschedulable" and c.get("status") == "True"
            and "2 Pending" in str(c.get("message"))
            for c in (found.get("status") or {}).get("conditions") or ()
        )  # fmt: skip

    two, three, seconds = gang_of_three(local_cluster, namespace, "volcano", annotation, both_held)
    status = local_cluster.get_json("-n", namespace, "podgroups.scheduling.volcano.sh", "gang")
    print(f"\nvolcano: third member created -> all bound in {seconds:.2f} s")
    assert two == {"p0": "", "p1": ""}, two
    assert sorted(three) == ["p0", "p1", "p2"]
    assert status["status"]["phase"] in ("Inqueue", "Running"), status["status"]
