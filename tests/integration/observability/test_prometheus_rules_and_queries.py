"""Every alert and every board query, run by a real Prometheus against what the operator
really exports.

One module, set up once: the operator (``python -m operator_runtime``) watches one
namespace and KubeRay v1.6.2's (``hack/kuberay``, with ``--enable-metrics``) another,
both with leader election on as deployed (the leader panel reads what only an elected
operator sets); each is scraped every second by a Prometheus of its own (Debian's,
``hack/prometheus``) that loads the alert rules exactly as
``RayOperator(prometheus_rule=True)`` renders them, with the scrape settings of its
rendered ServiceMonitor. The same objects go to both
namespaces: a RayCluster that becomes ready and one that cannot (its head asks for a
node that does not exist), a RayJob that completes, one that fails after one retry and
one left running, and a RayService that becomes ready and is then upgraded to a
cluster that cannot provision, so the upgrade stays in progress. Every Ray
head is the module's one real head (with Serve), as in the RayJob and RayService tiers.

Then each query runs over the test's whole window as Grafana would run a panel (a range
query, one point a second): every one must evaluate and, on ours, return series that
carry its ``by`` labels. Each alert's expression must evaluate, and its selector (the
expression without its threshold) must have matched our objects, with the ``namespace``
and ``name`` labels its annotations print; the stuck cluster must have taken
``RayClusterProvisioningStuck`` to pending and the failed job ``RayJobFailed`` to
firing. KubeRay's counts are printed next to ours; what it lacks is reported, never
failed on.
"""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import RayOperator, RayOperatorArgs
from components.operator.monitoring import ALERTS, Alert
from components.operator.queries import QUERIES
from hack import kuberay
from hack import prometheus as prometheus_tools
from hack.clusterhosts import ClusterHosts
from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_port
from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE
from hack.localhttp import LOCAL_HTTP
from operator_runtime.clients import DashboardError, DashboardPool, direct_endpoint
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import Conflict, NotFound
from operator_runtime.runtime.kinds import RAY_JOB, RAY_SERVICE
from tests.components.workload_mocks import run
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    condition_true,
    gc_probe,
    make_client,
    ray_crds,
    raycluster,
)
from tests.integration.rayjob.conftest import operator, rayjob
from tests.integration.rayservice.conftest import (  # noqa: F401 (fixtures)
    ServeHead,
    change_head,
    condition,
    rayservice,
    serve_head,
    service_status,
)
from tests.kubeclient import delete_namespace
from tests.rayhead import module_ray_head  # noqa: F401 (serve_head's)
from tests.waiting import wait_for

SIDES = ("ours", "kuberay")
SCRAPE = "1s"
"""Scrape and rule evaluation interval: a state that lasts a second is seen."""
OURS_TIMEOUT = 240.0
"""Everything of ours reaches its state within this: the RayJob tier's bound for a job
that fails and retries (180 s), plus the RayService upgrade after its first Ready."""
KUBERAY_GRACE = 30.0
"""How much longer KubeRay's objects are waited for once ours are done (reported only)."""
SEEN_TIMEOUT = 30.0
"""From a state on the API server to Prometheus having scraped and evaluated it."""
NO_SUCH_NODE = {"pulumi-ray.test/no-such-node": "true"}
SLEEP_600 = 'python -c "import time; time.sleep(600)"'
EXIT_1 = 'python -c "import sys; sys.exit(1)"'
THRESHOLD = re.compile(r"\s*(==|!=|>=|<=|>|<)\s*[0-9.e+-]+\s*$")


# -- rendering ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    groups: list[dict[str, Any]]
    """The PrometheusRule's spec.groups."""
    endpoint: dict[str, Any]
    """The ServiceMonitor's one endpoint."""


def render() -> Rendered:
    """What ``RayOperator(service_monitor=True, prometheus_rule=True)`` registers."""
    args = RayOperatorArgs(
        image=NEVER_PULLED_IMAGE, namespace="ray-system", create_namespace=False,
        install_crds=False, service_monitor=True, prometheus_rule=True,
    )  # fmt: skip
    result = run(lambda: RayOperator("observed", args))
    by_kind = {r.inputs.get("kind"): r.inputs for r in result.registrations}
    (endpoint,) = by_kind["ServiceMonitor"]["spec"]["endpoints"]
    return Rendered(by_kind["PrometheusRule"]["spec"]["groups"], endpoint)


def prometheus_config(rendered: Rendered, rules: Path, metrics_port: int) -> str:
    endpoint = rendered.endpoint
    return yaml.safe_dump(
        {
            "global": {
                "scrape_interval": SCRAPE, "scrape_timeout": SCRAPE,
                "evaluation_interval": SCRAPE,
            },
            "rule_files": [str(rules)],
            "scrape_configs": [
                {
                    "job_name": "ray-operator",
                    "metrics_path": endpoint["path"],
                    "honor_labels": endpoint["honorLabels"],
                    "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}],
                }
            ],
        }
    )  # fmt: skip


# -- Prometheus' HTTP API -------------------------------------------------------------------


@dataclass
class Server:
    url: str
    since: float

    def range(self, expr: str) -> list[dict[str, Any]]:
        """``expr`` over the test's window, one point a second (a Grafana panel)."""
        now = time.time()
        answer = LOCAL_HTTP.get(
            f"{self.url}/api/v1/query_range",
            params={"query": expr, "start": self.since, "end": now, "step": 1},
            timeout=30,
        ).json()
        if answer.get("status") != "success":
            raise AssertionError(f"{expr!r}: {answer.get('errorType')}: {answer.get('error')}")
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def metric_names(self) -> set[str]:
        answer = LOCAL_HTTP.get(f"{self.url}/api/v1/label/__name__/values", timeout=30).json()
        return set(answer["data"])

    def rules(self) -> list[dict[str, Any]]:
        answer = LOCAL_HTTP.get(f"{self.url}/api/v1/rules", timeout=30).json()
        return [rule for group in answer["data"]["groups"] for rule in group["rules"]]


def selector(alert: Alert) -> str:
    """The alert's expression without its threshold: what it compares."""
    return THRESHOLD.sub("", alert.expr)


# -- the scenario ---------------------------------------------------------------------------


@dataclass
class Side:
    """One operator, its namespace and the Prometheus that scrapes it."""

    name: str
    namespace: str
    server: Server
    reached: dict[str, float] = field(default_factory=dict)
    """Goal -> seconds from the start of the scenario until it was seen."""
    upgraded_from: str | None = None
    """The active cluster when the upgrade was started."""


@dataclass
class Observed:
    sides: dict[str, Side]
    promtool: subprocess.CompletedProcess[str]


GOALS = ("cluster ready", "job Complete", "job Failed", "job Running", "service Ready",
         "service upgrading")  # fmt: skip


def _objects(namespace: str, head: ServeHead) -> list[dict[str, Any]]:
    stuck = raycluster("stuck", namespace, workers=0)
    stuck["spec"]["headGroupSpec"]["template"]["spec"]["nodeSelector"] = NO_SUCH_NODE

    def job(name: str, entrypoint: str, **spec: Any) -> dict[str, Any]:
        return rayjob(
            name, namespace, head.head, submissionMode="HTTPMode", entrypoint=entrypoint, **spec
        )

    return [
        raycluster("ready", namespace, workers=1),
        stuck,
        job("done", "python -c \"print('hello')\""),
        job("fails", EXIT_1, backoffLimit=1),
        job("runs", SLEEP_600),
        rayservice("serves", namespace, head),
    ]


def _goals(kube: KubeClient, side: Side) -> set[str]:
    """The goals this side has reached by now (and the upgrade started once Ready)."""
    ns = side.namespace
    reached: set[str] = set()
    with suppress(NotFound):
        if condition_true(kube, ns, "ready", "RayClusterProvisioned"):
            reached.add("cluster ready")
    for name, goal, state in (("done", "job Complete", "Complete"),
                              ("fails", "job Failed", "Failed"),
                              ("runs", "job Running", "Running")):  # fmt: skip
        with suppress(NotFound):
            status = kube.get(RAY_JOB, name, ns).get("status") or {}
            if status.get("jobDeploymentStatus") == state:
                reached.add(goal)
    with suppress(NotFound):
        status = service_status(kube, ns, "serves")
        active = (status.get("activeServiceStatus") or {}).get("rayClusterName")
        if condition(status, "Ready").get("status") == "True":
            reached.add("service Ready")
            if side.upgraded_from is None and active:
                # A new cluster: a blue/green upgrade. A write racing the operator's is refused
                # (409) and tried again on the next round. Its new cluster's head asks for a node
                # that does not exist, so the upgrade stays in progress (what RayServiceUpgradeStuck
                # watches for) and a 1 s scrape sees it: a new cluster on the module's one real head
                # is ready at once, and such an upgrade, over in under 0.5 s, was missed about every
                # other run.
                with suppress(Conflict):
                    change_head(kube, ns, "serves", lambda h: h.update(nodeSelector=NO_SUCH_NODE))
                    side.upgraded_from = active
        if side.upgraded_from is not None and (
            condition(status, "UpgradeInProgress").get("status") == "True"
            or (status.get("pendingServiceStatus") or {}).get("rayClusterName")
            or active not in (None, side.upgraded_from)
        ):
            reached.add("service upgrading")
    return reached


def _drive(kube: KubeClient, sides: dict[str, Side], started: float) -> None:
    """Wait until ours reached every goal (failing past ``OURS_TIMEOUT``), and KubeRay's
    as far as it gets within ``KUBERAY_GRACE`` more."""
    ours_done_at: float | None = None
    while True:
        for side in sides.values():
            for goal in _goals(kube, side):
                side.reached.setdefault(goal, time.monotonic() - started)
        now = time.monotonic()
        if ours_done_at is None and set(GOALS) <= set(sides["ours"].reached):
            ours_done_at = now
        if ours_done_at is not None and (
            set(GOALS) <= set(sides["kuberay"].reached) or now - ours_done_at > KUBERAY_GRACE
        ):
            return
        if ours_done_at is None and now - started > OURS_TIMEOUT:
            missing = sorted(set(GOALS) - set(sides["ours"].reached))
            raise AssertionError(f"ours never reached {missing} in {OURS_TIMEOUT:.0f} s")
        time.sleep(0.2)


def leader_election(namespace: str) -> tuple[str, ...]:
    """On, as deployed (the component's default, KubeRay's chart's): the operator board's
    leader panel reads the gauge only an elected operator sets. Each side's Lease in its
    own namespace, so the two never contend for the one default name."""
    return ("--enable-leader-election=true", f"--leader-election-namespace={namespace}")


def _stop_sleepers(kube: KubeClient, head: ServeHead, namespaces: list[str]) -> None:
    """The head is the module's: no sleeping Ray job may outlive it."""
    with DashboardPool() as pool:
        client = pool.dashboard(direct_endpoint(f"127.0.0.1:{head.dashboard_port}"))
        for namespace in namespaces:
            with suppress(NotFound, KeyError):
                job_id = kube.get(RAY_JOB, "runs", namespace)["status"]["jobId"]
                with suppress(DashboardError):
                    client.stop_job(job_id)


@pytest.fixture(scope="module")
def observed(
    ray_crds: LocalCluster,  # noqa: F811
    serve_head: ServeHead,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Observed]:
    work = tmp_path_factory.mktemp("observability")
    kube = make_client(ray_crds)
    rendered = render()
    rules_file = work / "rules.yml"
    rules_file.write_text(yaml.safe_dump({"groups": rendered.groups}))
    tools = prometheus_tools.ensure()
    promtool = subprocess.run(
        [str(tools.promtool), "check", "rules", str(rules_file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    def served() -> bool:
        try:
            kube.list(RAY_JOB, "default")
            kube.list(RAY_SERVICE, "default")
        except NotFound:
            return False
        return True

    # ``ray_crds`` waits for the RayCluster CRD only.
    wait_for("the RayJob and RayService CRDs served", served, timeout=60, interval=0.2)
    suffix = uuid.uuid4().hex[:6]
    namespaces = {name: f"{name}-{suffix}" for name in SIDES}
    for namespace in namespaces.values():
        ray_crds.kubectl("create", "namespace", namespace)
    ports = {name: free_port() for name in SIDES}
    with ExitStack() as stack:
        stack.callback(lambda: [delete_namespace(ray_crds, ns) for ns in namespaces.values()])
        stack.enter_context(
            operator(
                ray_crds, namespaces["ours"], f"--metrics-addr=127.0.0.1:{ports['ours']}",
                *leader_election(namespaces["ours"]),
            )
        )  # fmt: skip
        theirs = kuberay.start_operator(
            kubeconfig=ray_crds.kubeconfig, watch_namespace=namespaces["kuberay"],
            log_path=work / "kuberay.log", metrics_port=ports["kuberay"],
            probe_port=free_port(),
            extra=("--enable-metrics", *leader_election(namespaces["kuberay"])),
        )  # fmt: skip

        def stop_kuberay() -> None:
            theirs.terminate()
            theirs.wait(30)

        stack.callback(stop_kuberay)
        for namespace in namespaces.values():
            stack.enter_context(ClusterHosts(kube, namespace))
        started_wall = time.time()
        sides: dict[str, Side] = {}
        for name in SIDES:
            (work / name).mkdir()
            config = work / name / "prometheus.yml"
            config.write_text(prometheus_config(rendered, rules_file, ports[name]))
            server = prometheus_tools.start(
                config, work / name, free_port(), work / name / "prometheus.log"
            )
            stack.callback(server.stop)
            sides[name] = Side(name, namespaces[name], Server(server.url, started_wall))
        stack.callback(lambda: _stop_sleepers(kube, serve_head, list(namespaces.values())))
        started = time.monotonic()
        for side in sides.values():
            for manifest in _objects(side.namespace, serve_head):
                kube.create(manifest)
        _drive(kube, sides, started)  # a failure prints our operator's last lines
        for side in sides.values():
            print(
                f"\n{side.name}: "
                + ", ".join(f"{g} at {s:.1f} s" for g, s in sorted(side.reached.items(),
                                                                    key=lambda i: i[1]))
                + f"; never: {sorted(set(GOALS) - set(side.reached)) or 'none'}"
            )  # fmt: skip
        assert theirs.poll() is None, (work / "kuberay.log").read_text()[-3000:]
        yield Observed(sides, promtool)


# -- the tests ------------------------------------------------------------------------------


def test_promtool_accepts_the_rendered_rules(observed: Observed) -> None:
    result = observed.promtool
    print(f"\npromtool check rules: exit {result.returncode}\n{result.stdout}{result.stderr}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in result.stdout, result.stdout


def _eventually(what: str, check: Callable[[], list[str]]) -> None:
    """``check`` returns what is still wrong; Prometheus needs a scrape and an evaluation
    to see what the API server already shows."""
    problems: list[str] = []

    def settled() -> bool:
        nonlocal problems
        problems = check()
        return not problems

    try:
        wait_for(what, settled, timeout=SEEN_TIMEOUT, interval=1.0)
    except AssertionError:
        raise AssertionError(f"{what}:\n" + "\n".join(problems)) from None


def _labels_missing(series: list[dict[str, Any]], labels: tuple[str, ...]) -> list[str]:
    return [
        f"{s['metric']} lacks {[label for label in labels if label not in s['metric']]}"
        for s in series
        if not all(label in s["metric"] for label in labels)
    ]


def test_every_rule_evaluates_without_error(observed: Observed) -> None:
    for side in observed.sides.values():
        rules = side.server.rules()
        assert sorted(r["name"] for r in rules) == sorted(a.name for a in ALERTS), rules
        bad = [(r["name"], r.get("health"), r.get("lastError")) for r in rules
               if r.get("health") != "ok"]  # fmt: skip
        assert bad == [], f"{side.name}: {bad}"


def test_every_query_returns_series_with_its_labels(observed: Observed) -> None:
    ours = observed.sides["ours"]

    def problems() -> list[str]:
        found: list[str] = []
        for query in QUERIES:
            series = ours.server.range(query.expr)
            if not series:
                found.append(f"{query.board} / {query.title}: no series for {query.expr!r}")
            found += [f"{query.title}: {m}" for m in _labels_missing(series, query.by)]
            if "namespace" in query.by and not any(
                s["metric"].get("namespace") == ours.namespace for s in series
            ):
                found.append(f"{query.title}: no series of namespace {ours.namespace}")
        return found

    try:
        _eventually("every board query on ours", problems)
    finally:
        _report("query", [(f"{q.board} / {q.title}", q.expr, q.by) for q in QUERIES], observed)


def test_every_alert_evaluates_and_its_selector_matched_our_objects(
    observed: Observed,
) -> None:
    ours = observed.sides["ours"]

    def problems() -> list[str]:
        found: list[str] = []
        for alert in ALERTS:
            ours.server.range(alert.expr)  # raises on an evaluation error
            series = ours.server.range(selector(alert))
            mine = [s for s in series if s["metric"].get("namespace") == ours.namespace]
            if not mine:
                found.append(f"{alert.name}: {selector(alert)!r} never matched an object of ours")
            # The annotations print {{ $labels.namespace }}/{{ $labels.name }}.
            found += [f"{alert.name}: {m}" for m in _labels_missing(series, ("namespace", "name"))]
        return found

    try:
        _eventually("every alert's selector on ours", problems)
    finally:
        _report(
            "alert selector",
            [(a.name, selector(a), ("namespace", "name")) for a in ALERTS],
            observed,
        )


def _states(server: Server, alert: str) -> dict[str, set[str]]:
    """Object name -> the states (pending, firing) ``alert`` was seen in."""
    seen: dict[str, set[str]] = {}
    for series in server.range(f'ALERTS{{alertname="{alert}"}}'):
        metric = series["metric"]
        seen.setdefault(metric.get("name", "?"), set()).add(metric["alertstate"])
    return seen


def test_the_stuck_cluster_and_the_failed_job_raise_their_alerts(observed: Observed) -> None:
    ours = observed.sides["ours"]

    def problems() -> list[str]:
        found: list[str] = []
        stuck = _states(ours.server, "RayClusterProvisioningStuck")
        if stuck.get("stuck") != {"pending"}:
            found.append(f"RayClusterProvisioningStuck: {stuck} (want stuck: pending)")
        failed = _states(ours.server, "RayJobFailed")
        if "firing" not in failed.get("fails", set()):
            found.append(f"RayJobFailed: {failed} (want fails: firing, it has no `for`)")
        return found

    try:
        _eventually("the stuck cluster's and the failed job's alerts", problems)
    finally:
        # Every cluster is unprovisioned for a while, every job Running: those alerts go
        # pending for more objects than these two.
        for side in observed.sides.values():
            states = {alert.name: _states(side.server, alert.name) for alert in ALERTS}
            print(f"\n{side.name}: alerts seen: " + "; ".join(
                f"{name} {dict(sorted((k, sorted(v)) for k, v in seen.items()))}"
                for name, seen in states.items() if seen
            ))  # fmt: skip


def _report(kind: str, rows: list[tuple[str, str, tuple[str, ...]]], observed: Observed) -> None:
    """Each row's series count on ours and on KubeRay; what KubeRay lacks is listed."""
    lines: list[str] = []
    lacking: list[str] = []
    for title, expr, labels in rows:
        counts: dict[str, int] = {}
        for side in observed.sides.values():
            series = side.server.range(expr)
            counts[side.name] = len(series)
            if side.name == "kuberay" and (not series or _labels_missing(series, labels)):
                lacking.append(f"{title}: {expr}")
        lines.append(f"  {counts['ours']:>4} {counts['kuberay']:>7}  {title}")
    print(f"\n{kind} series (ours, kuberay):\n" + "\n".join(lines))
    print(f"KubeRay v1.6.2 returned nothing (or lacked labels) for: {lacking or 'none'}")


def test_queries_and_alerts_name_only_what_exists(observed: Observed) -> None:
    """A query whose metric does not exist evaluates to nothing, silently: every metric
    name a query or an alert uses must be one the operator exports."""
    exported = observed.sides["ours"].server.metric_names()
    exprs = [q.expr for q in QUERIES] + [a.expr for a in ALERTS]
    words = {w for expr in exprs for w in re.findall(r"[a-z_:][a-z0-9_:]*", expr)}
    names = {w for w in words if "_" in w and w.split("_")[0] in METRIC_PREFIXES}
    assert names, "no metric name found in the queries"
    lacking = sorted(names - observed.sides["kuberay"].server.metric_names())
    print(f"\nmetric names used: {len(names)}; KubeRay v1.6.2 lacks: {lacking or 'none'}")
    assert sorted(names - exported) == [], f"not exported by the operator: {names - exported}"


METRIC_PREFIXES = {"kuberay", "controller", "workqueue", "rest", "leader"}
"""The families the operator exports (a label such as ``controller`` has no ``_``)."""
