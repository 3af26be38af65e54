"""RayService upgrades while a client calls it, on the real node, under both operators.

A client pod calls the Serve app through ``<name>-serve-svc`` ten times a second, and
logs each call's wall-clock time and outcome. Meanwhile, one after another: a
``serveConfigV2`` change (redeployed in place), a ``rayClusterConfig`` change (a new
cluster, traffic switched, the old one deleted after its delay), a worker pod deleted
and the head pod deleted. The promise of zero-downtime upgrades is zero failed calls in
the first two; the last two are reported as figures. The client's first answers, before
any change, are the tier's proof that a RayService answers through its serve Service
from another pod. KubeRay's users report the serve Service losing its endpoints during
upgrades (KubeRay #5148); a failed call in the first two windows would show it.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from operator_runtime.runtime.kinds import RAY_CLUSTER, RAY_SERVICE
from tests.kubeclient import pod_log, shared_client
from tests.node.harness import (
    OPERATOR_IMAGE,
    cluster_spec,
    operators,
    pod_states,
    pods,
    server_side_apply,
)
from tests.waiting import wait_for

OPERATORS = operators(compared_in_make_test=False)
"""KubeRay's side of these scenarios runs under ``make node-compare``."""

SERVE_SECONDS = 600.0
"""A RayService's cluster to Ready with its app RUNNING, on two loaded cores (a head and a
worker start, as RAY_READY_SECONDS in test_ray_on_the_node.py, then Serve deploys)."""
CLIENT_SECONDS = 1800
"""The client's own bound: it stops calling after this long whatever happens."""
RATE = 10.0
DELETION_DELAY = 10

ECHO_APP = textwrap.dedent("""
    import os
    from ray import serve

    @serve.deployment(num_replicas=1, ray_actor_options={"num_cpus": 0})
    class Echo:
        def __init__(self):
            self.message = "unset"

        def reconfigure(self, config):
            self.message = config["message"]

        async def __call__(self, request):
            return f"{self.message} from {os.environ.get('RAY_CLUSTER_NAME')}"

    app = Echo.bind()
""")

CONNECT_SECONDS = 10
"""A call's bound to reach a serve proxy: an endpoint of a pod that is gone shows here."""
ANSWER_SECONDS = 60
"""A reached proxy's bound to answer: on two loaded cores a new cluster's start starves
the replica for seconds (10 s bounds were seen to run out, spread over a whole upgrade,
with the proxy's connection accepted), which is the machine's speed and not downtime."""

CLIENT = textwrap.dedent("""
    import http.client, sys, time, urllib.parse
    url, rate, bound = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    connect, answer = float(sys.argv[4]), float(sys.argv[5])
    where = urllib.parse.urlsplit(url)
    end = time.monotonic() + bound
    while time.monotonic() < end:
        began, phase = time.time(), "connect"
        try:
            call = http.client.HTTPConnection(where.hostname, where.port, timeout=connect)
            call.connect()
            phase = "answer"
            call.sock.settimeout(answer)
            call.request("GET", where.path or "/")
            response = call.getresponse()
            body = " ".join(response.read().decode()[:80].split())
            call.close()
            if response.status != 200:
                request_id = response.getheader("x-request-id")
                raise RuntimeError(f"HTTP {response.status} {body} request {request_id}")
            print(f"{began:.3f} ok {time.time() - began:.2f} {body}", flush=True)
        except Exception as error:
            print(f"{began:.3f} fail {time.time() - began:.2f} {phase}: "
                  f"{type(error).__name__} {' '.join(str(error)[:80].split())}", flush=True)
        time.sleep(max(0.0, 1 / rate - (time.time() - began)))
""")


def serve_config(message: str) -> str:
    return (
        "applications:\n- name: echo\n  import_path: echo:app\n  route_prefix: /\n"
        f"  deployments:\n  - name: Echo\n    user_config:\n      message: {message}\n"
    )


def rayservice(message: str, generation: str) -> dict[str, Any]:
    mounted = {
        "volumeMounts": [{"name": "app", "mountPath": "/home/ray/app"}],
        "env": [{"name": "PYTHONPATH", "value": "/home/ray/app"},
                {"name": "GENERATION", "value": generation}],
    }  # fmt: skip
    spec = cluster_spec(1, **mounted)
    for group in (spec["headGroupSpec"], *spec["workerGroupSpecs"]):
        group["template"]["spec"]["volumes"] = [{"name": "app", "configMap": {"name": "echo"}}]
    return {
        "apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "echo"},
        "spec": {"serveConfigV2": serve_config(message), "rayClusterConfig": spec,
                 "rayClusterDeletionDelaySeconds": DELETION_DELAY},
    }  # fmt: skip


@dataclass(frozen=True)
class Window:
    what: str
    began: float
    ended: float


@dataclass(frozen=True)
class Call:
    at: float
    ok: bool
    seconds: float
    said: str


def made_in(window: Window, made: list[Call]) -> list[Call]:
    """The calls of ``made`` begun within ``window``."""
    return [c for c in made if window.began <= c.at <= window.ended]


def calls(cluster: LocalCluster, namespace: str) -> list[Call]:
    logs = pod_log(cluster, namespace, "client")
    if logs is None:  # not started yet
        return []
    found = []
    for line in logs.splitlines():
        at, outcome, seconds, said = [*line.split(" ", 3), "", "", ""][:4]
        found.append(Call(float(at), outcome == "ok", float(seconds), said))
    return found


def status(cluster: LocalCluster, namespace: str) -> dict[str, Any]:
    found: dict[str, Any] = shared_client(cluster).get(RAY_SERVICE, "echo", namespace)
    return found.get("status", {})


def ready(cluster: LocalCluster, namespace: str) -> bool:
    conditions = status(cluster, namespace).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def clusters(cluster: LocalCluster, namespace: str) -> set[str]:
    found = shared_client(cluster).list(RAY_CLUSTER, namespace)["items"]
    return {c["metadata"]["name"] for c in found}


def events_since(cluster: LocalCluster, namespace: str, since: float) -> list[str]:
    """The namespace's events from ``since`` on, oldest first, each with its offset: what
    the operator and the kubelet did around a failed call (a serve label that flipped, a
    probe that failed, the Services switched)."""
    found = []
    for event in cluster.get_json("-n", namespace, "events")["items"]:
        stamp = event.get("lastTimestamp") or event.get("eventTime") or ""
        if not stamp:
            continue
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        if at >= since - 1:
            found.append(
                (
                    at,
                    f"+{at - since:.0f} s {event['involvedObject'].get('name')} "
                    f"{event.get('reason')}: {str(event.get('message'))[:120]}",
                )
            )
    return [line for _, line in sorted(found)]


SERVE_LOG_FAILURES = (
    "grep -h -E ' 500 |Request failed|RayActorError|ActorDied|Traceback' "
    "/tmp/ray/session_latest/logs/serve/*.log | tail -n 30"
)
"""What each Ray pod's Serve proxies and replicas logged of a failed request: the
proxy's access log names the status it answered, and its warnings why (a replica that
died under a call answers 500)."""


def why_calls_failed(cluster: LocalCluster, namespace: str, since: float) -> str:
    """Everything a failed call can be traced by, printed in full before the assertion
    (pytest cuts an assertion message's long parts): the namespace's events, the Serve
    logs of each Ray pod still there, and the operator's log lines about the RayService."""
    lines = ["events:", *events_since(cluster, namespace, since), "serve logs:"]
    for pod in pods(cluster, namespace, "ray.io/cluster"):
        name = pod["metadata"]["name"]
        container = pod["spec"]["containers"][0]["name"]
        found = cluster.kubectl("-n", namespace, "exec", name, "-c", container, "--",
                                "sh", "-c", SERVE_LOG_FAILURES, check=False)  # fmt: skip
        lines += [f"{name}: {line}" for line in (found.stdout + found.stderr).splitlines()]
    operator = "app.kubernetes.io/name in (ray-operator,kuberay-operator)"
    logs = cluster.kubectl("-n", namespace, "logs", "-l", operator, "--tail=400",
                           check=False).stdout  # fmt: skip
    lines += ["operator:", *(line for line in logs.splitlines() if "echo" in line)]
    return "\n".join(lines)


def answered_lately(cluster: LocalCluster, namespace: str, since: float,
                    check: Callable[[str], bool]) -> bool:  # fmt: skip
    """The client's last five calls after ``since`` all succeeded and pass ``check``."""
    recent = [c for c in calls(cluster, namespace) if c.at >= since][-5:]
    return len(recent) == 5 and all(c.ok and check(c.said) for c in recent)


@pytest.mark.timeout(4 * SERVE_SECONDS)
def test_a_rayservice_keeps_answering_through_upgrades_and_says_what_pod_loss_costs(
    real_cluster: LocalCluster, ray_namespace: str, request: pytest.FixtureRequest
) -> None:
    ns = ray_namespace
    operator = request.node.callspec.params["ray_namespace"]
    app = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "echo"},
           "data": {"echo.py": ECHO_APP}}  # fmt: skip
    server_side_apply(real_cluster, ns, app)
    server_side_apply(real_cluster, ns, rayservice("one", "1"))
    explain = lambda: (status(real_cluster, ns), pod_states(real_cluster, ns))  # noqa: E731
    wait_for("the RayService to be Ready", lambda: ready(real_cluster, ns),
             timeout=SERVE_SECONDS, interval=2.0, explain=explain)  # fmt: skip
    (first_cluster,) = clusters(real_cluster, ns)
    url = f"http://echo-serve-svc.{ns}.svc.cluster.local:8000/"
    server_side_apply(real_cluster, ns, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "client", "image": OPERATOR_IMAGE, "imagePullPolicy": "IfNotPresent",
            "command": ["python3.11", "-c", CLIENT, url, str(RATE), str(CLIENT_SECONDS),
                        str(CONNECT_SECONDS), str(ANSWER_SECONDS)],
        }]},
    })  # fmt: skip
    started = time.time()
    wait_for("the client's first answers", lambda: answered_lately(
        real_cluster, ns, started, lambda said: said.startswith("one")),
        timeout=120, interval=1.0, explain=lambda: calls(real_cluster, ns)[-5:])  # fmt: skip

    windows: list[Window] = []

    def window(what: str, act: Callable[[], object], done: Callable[[float], bool]) -> None:
        """Do ``act``, then wait for ``done(since)``: the outcome, seen by the client."""
        began = time.time()
        act()
        wait_for(what, lambda: done(began), timeout=SERVE_SECONDS, interval=1.0,
                 explain=explain)  # fmt: skip
        windows.append(Window(what, began, time.time()))
        print(f"\n{operator}: {what}: done in {time.time() - began:.1f} s", flush=True)

    def serving(says: Callable[[str], bool]) -> Callable[[float], bool]:
        return lambda since: answered_lately(real_cluster, ns, since, says)

    answering = serving(lambda _: True)

    def replaced_and_running(gone: dict[str, Any]) -> bool:
        """A pod of ``gone``'s cluster and kind in its place, Running, and ``gone`` gone."""
        labels = gone["metadata"]["labels"]
        selector = ",".join(
            f"{key}={labels[key]}" for key in ("ray.io/cluster", "ray.io/node-type")
        )
        now = pods(real_cluster, ns, selector)
        return [
            p["metadata"]["uid"] != gone["metadata"]["uid"]
            and p["status"].get("phase") == "Running"
            for p in now
        ] == [True]

    window("serveConfigV2 change (in place)",
           lambda: server_side_apply(real_cluster, ns, rayservice("two", "1")),
           serving(lambda said: said == f"two from {first_cluster}"))  # fmt: skip
    old_pods_gone: list[float] = []

    def new_cluster_alone_serving(since: float) -> bool:
        """The old cluster and its pods gone, and the new one answering since: the
        old cluster's pods stopping is part of the upgrade, so the calls around it
        count in this window, not the next."""
        if not old_pods_gone:
            if first_cluster in clusters(real_cluster, ns) or pods(
                real_cluster, ns, f"ray.io/cluster={first_cluster}"
            ):
                return False
            old_pods_gone.append(time.time())
        return serving(lambda said: said.startswith("two") and first_cluster not in said)(
            max(since, old_pods_gone[0])
        )

    window("rayClusterConfig change (a new cluster)",
           lambda: server_side_apply(real_cluster, ns, rayservice("two", "2")),
           new_cluster_alone_serving)  # fmt: skip
    # The promise: no call fails while the app is upgraded. Checked here, while the
    # new cluster's pods (and their Serve logs) are still the ones that answered.
    made = calls(real_cluster, ns)
    for window_ in windows:
        lost = [
            f"+{c.at - window_.began:.1f} s {c.said}" for c in made_in(window_, made) if not c.ok
        ]
        if lost:
            print(
                f"\n{window_.what}: failed calls {lost[:10]}\n"
                f"{why_calls_failed(real_cluster, ns, window_.began)}",
                flush=True,
            )
        assert not lost, (window_.what, lost[:10])
    (second_cluster,) = clusters(real_cluster, ns)
    (worker,) = pods(real_cluster, ns, f"ray.io/cluster={second_cluster},ray.io/node-type=worker")
    # A RayService's worker is Ready only while a Serve proxy runs on it (its probe
    # asks the proxy), and the one replica may come back on the head: so the
    # replacement is waited for as Running, and the app for answering.
    window("a worker pod deleted",
           lambda: real_cluster.kubectl("-n", ns, "delete", "pod", worker["metadata"]["name"],
                                        "--wait=false"),
           lambda since: replaced_and_running(worker) and answering(since))  # fmt: skip
    (head,) = pods(real_cluster, ns, f"ray.io/cluster={second_cluster},ray.io/node-type=head")
    window("the head pod deleted",
           lambda: real_cluster.kubectl("-n", ns, "delete", "pod", head["metadata"]["name"],
                                        "--wait=false"),
           lambda since: replaced_and_running(head) and answering(since))  # fmt: skip

    made = calls(real_cluster, ns)
    report = {
        w.what: {"seconds": round(w.ended - w.began, 1),
                 "calls": len(made_in(w, made)),
                 "failed": sum(not c.ok for c in made_in(w, made)),
                 "slowest": max((c.seconds for c in made_in(w, made)), default=0.0)}
        for w in windows
    }  # fmt: skip
    print(f"\n{operator}: {json.dumps(report)}")
    # The client called all along: a call ends within its bounds.
    longest = CONNECT_SECONDS + ANSWER_SECONDS + 1
    assert all(r["calls"] >= r["seconds"] / longest for r in report.values()), report
