"""``python -m pulumi_ray review`` against what the operator then does.

For each main verdict, the module applies the old manifest, waits until the operator has
settled it, reviews old -> new as two manifests (``from_sources``, as ``review --before
--after`` does), applies the new one and counts, from a watch of the namespace's pods
(``tests/watching.Recorder``), the pods created and deleted; the counts must be the
report's. A count is waited for until it reaches the prediction (or the wait times out,
naming what was seen), then the operator gets a few quiet seconds to do more than
predicted: a count that overshoots fails too.

One operator process (all controllers), one namespace and one real Ray head with Serve
(the RayServices' health checks and the RayJob's HTTP submission reach it) serve the
whole module; each case has objects of its own names. The verdicts about what follows a
change have a test each, on the same operator and namespace: a GCS FT deletion's wait
for the Redis cleanup Job, a RayJob's retry and a RayCronJob's template change (its
controller in-process, on a clock the test moves).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.rendering import Source, load_sources
from components.review import Report, ReviewSettings, from_sources, review
from hack.clusterhosts import ClusterHosts
from hack.localcluster import LocalCluster
from hack.localcluster.client import make_client
from operator_runtime.api import FeatureGates
from operator_runtime.api.finalizers import Finalizer
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import (
    JOB,
    POD,
    RAY_CLUSTER,
    RAY_CRON_JOB,
    RAY_JOB,
    RAY_SERVICE,
    Object,
)
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    gc_knows_rayclusters,
    gc_probe,
    ray_crds,
    raycluster,
    running_ready,
)
from tests.integration.raycronjob.conftest import (
    CronOperator,
    created_at,
    cron_operator,
    fake_clock_at,
    jobs_of,
    raycronjob,
    unix_minutes,
)
from tests.integration.rayjob.conftest import operator, rayjob, reaches
from tests.integration.rayservice.conftest import (  # noqa: F401 (fixtures)
    ServeHead,
    active_cluster,
    rayservice,
    ready,
    serve_config,
    serve_head,
    service_status,
)
from tests.integration.rayservice.test_rayservice_incremental import (  # noqa: F401 (fixtures)
    CountingProxy,
    FakeGatewayController,
    Head,
    gateway_crds,
    incremental_service,
    second_head,
    spec_on,
)
from tests.kubeclient import edit, fresh_namespace
from tests.rayhead import module_ray_head  # noqa: F401 (a fixture)
from tests.waiting import wait_for
from tests.watching import Recorder

KINDS = {"RayCluster": RAY_CLUSTER, "RayService": RAY_SERVICE, "RayJob": RAY_JOB,
         "RayCronJob": RAY_CRON_JOB}  # fmt: skip
FINALIZER = Finalizer.GCS_FT_REDIS_CLEANUP.value
QUIET_SECONDS = 3.0
"""After the counts reach the prediction: time for the operator to do more than that."""


@dataclass(frozen=True)
class World:
    kube: KubeClient
    namespace: str
    head: ServeHead


@pytest.fixture(scope="module")
def world(ray_crds: LocalCluster, serve_head: ServeHead) -> Iterator[World]:  # noqa: F811
    kube = make_client(ray_crds)
    with (
        fresh_namespace(ray_crds, prefix="review") as namespace,
        ClusterHosts(kube, namespace),
        operator(ray_crds, namespace),
    ):
        yield World(kube, namespace, serve_head)


@dataclass(frozen=True)
class Counts:
    created: int
    deleted: int


def counted(recorder: Recorder, before: set[str], belongs: Callable[[Object], bool]) -> Counts:
    """Pods of the case the watch saw appear, and saw deleted (a deletionTimestamp or a
    DELETED), since ``before`` (the uids that were there)."""
    created, deleted = set(), set()
    for event in list(recorder.events):
        pod = event.object
        if not belongs(pod):
            continue
        uid = pod["metadata"]["uid"]
        if uid not in before:
            created.add(uid)
        if event.type == "DELETED" or pod["metadata"].get("deletionTimestamp"):
            deleted.add(uid)
    return Counts(len(created), len(deleted))


def counts_reached(
    what: str,
    recorder: Recorder,
    before: set[str],
    belongs: Callable[[Object], bool],
    expected: Counts,
    timeout: float = 120,
) -> Counts:
    """Waits for the watch's counts to reach ``expected``, gives the operator a few
    quiet seconds to do more than predicted, and returns the counts then."""
    wait_for(
        f"{what}: {expected} as predicted",
        lambda: counted(recorder, before, belongs) == expected,
        timeout=timeout, interval=0.2, explain=lambda: counted(recorder, before, belongs),
    )  # fmt: skip
    time.sleep(QUIET_SECONDS)  # the operator's chance to do more than predicted
    return counted(recorder, before, belongs)


@dataclass(frozen=True)
class Case:
    old: Callable[[World], dict[str, Any]]
    new: Callable[[World], dict[str, Any]]
    settle_old: Callable[[World, dict[str, Any]], None]
    """Waits until the operator has done all it will with the old object."""
    rules: tuple[str, ...] = ()
    """The findings the report must carry."""
    replaced: bool = False
    """The new object has a new name (a RayJob of the components: the name carries a
    digest of the spec): created before the old one is deleted, as the engine does."""
    done: Callable[[World, dict[str, Any]], object] | None = None
    """What must hold, besides the counts, before they are read (the change applied)."""


# -- RayCluster -------------------------------------------------------------------------


def cluster_pods_of(name: str, *, suffixed: bool = False) -> Callable[[Object], bool]:
    """Pods of the RayCluster ``name``, or (``suffixed``) of every ``<name>-<suffix>``:
    the clusters of a RayService or a RayJob."""

    def belongs(pod: Object) -> bool:
        cluster = str((pod["metadata"].get("labels") or {}).get("ray.io/cluster", ""))
        return cluster.startswith(f"{name}-") if suffixed else cluster == name

    return belongs


def cluster_settled(world: World, manifest: dict[str, Any]) -> None:
    name = manifest["metadata"]["name"]
    spec = manifest["spec"]
    expected = (
        0
        if spec.get("suspend")
        else 1 + sum(0 if g.get("suspend") else g["replicas"] for g in spec["workerGroupSpecs"])
    )

    def settled() -> bool:
        found = world.kube.get(RAY_CLUSTER, name, world.namespace)
        status = found.get("status") or {}
        if status.get("observedGeneration") != found["metadata"]["generation"]:
            return False
        pods = world.kube.list(POD, world.namespace, label_selector=f"ray.io/cluster={name}")
        live = [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]
        return len(live) == expected and all(running_ready(p) for p in live)

    wait_for(f"RayCluster {name} settled", settled, timeout=90, interval=0.3)


def generation_seen(world: World, manifest: dict[str, Any]) -> bool:
    found = world.kube.get(KINDS[manifest["kind"]], manifest["metadata"]["name"], world.namespace)
    return bool((found.get("status") or {}).get("observedGeneration") == found["metadata"][
        "generation"
    ])  # fmt: skip


def small_cluster(name: str, **spec: Any) -> Callable[[World], dict[str, Any]]:
    def build(world: World) -> dict[str, Any]:
        manifest = raycluster(name, world.namespace, workers=2, group="cpu", **spec)
        manifest["metadata"].pop("annotations")
        return manifest

    return build


def edited(
    build: Callable[[World], dict[str, Any]], edit: Callable[[dict[str, Any]], object]
) -> Callable[[World], dict[str, Any]]:
    def changed(world: World) -> dict[str, Any]:
        manifest = copy.deepcopy(build(world))
        edit(manifest["spec"])
        return manifest

    return changed


def new_image(spec: dict[str, Any]) -> None:
    for group in (spec["headGroupSpec"], *spec["workerGroupSpecs"]):
        group["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.53.0"


def with_gpu_group(spec: dict[str, Any]) -> None:
    gpu = copy.deepcopy(spec["workerGroupSpecs"][0])
    gpu.update(groupName="gpu", replicas=1)
    spec["workerGroupSpecs"].append(gpu)


def recreate_strategy(spec: dict[str, Any]) -> None:
    spec["upgradeStrategy"] = {"type": "Recreate"}


def chained(*edits: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], None]:
    def run(spec: dict[str, Any]) -> None:
        for change in edits:
            change(spec)

    return run


RECREATE = edited(small_cluster("rc-recreate"), recreate_strategy)
TWO_GROUPS = edited(small_cluster("rc-group"), with_gpu_group)

# -- RayService -------------------------------------------------------------------------


def service(name: str, message: str = "hello", env: str = "") -> Callable[[World], dict[str, Any]]:
    def build(world: World) -> dict[str, Any]:
        manifest = rayservice(
            name, world.namespace, world.head, serveConfigV2=serve_config(world.head, message),
            rayClusterDeletionDelaySeconds=1,
        )  # fmt: skip
        if env:
            head = manifest["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
            head["containers"][0]["env"] = [{"name": "UPGRADE", "value": env}]
        return manifest

    return build


def service_settled(world: World, manifest: dict[str, Any]) -> None:
    name = manifest["metadata"]["name"]
    wait_for(f"RayService {name} Ready", ready(world.kube, world.namespace, name), timeout=180)
    cluster = active_cluster(world.kube, world.namespace, name)
    workers = manifest["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"]

    def settled() -> bool:
        pods = world.kube.list(POD, world.namespace, label_selector=f"ray.io/cluster={cluster}")
        return len(pods["items"]) == 1 + workers and all(running_ready(p) for p in pods["items"])

    wait_for(f"RayService {name}'s pods ready", settled, timeout=60, interval=0.3)


def serves_message(message: str) -> Callable[[World, dict[str, Any]], object]:
    return lambda world, manifest: world.head.answer() == message


def switched(world: World, manifest: dict[str, Any]) -> bool:
    status = (world.kube.get(RAY_SERVICE, manifest["metadata"]["name"], world.namespace)
              .get("status") or {})  # fmt: skip
    return not (status.get("pendingServiceStatus") or {}).get("rayClusterName")


# -- RayJob -----------------------------------------------------------------------------


def job(name: str, seconds: int) -> Callable[[World], dict[str, Any]]:
    """A run that lasts: HTTPMode submits the entrypoint to the module's real head (kwok
    would complete a submitter pod at once, ending the run)."""

    def build(world: World) -> dict[str, Any]:
        manifest = rayjob(
            name, world.namespace, world.head.head, submissionMode="HTTPMode",
            entrypoint=f'python -c "import time; time.sleep({seconds})"',
        )  # fmt: skip
        manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] = 1
        return manifest

    return build


def job_running(world: World, manifest: dict[str, Any]) -> None:
    name = manifest["metadata"]["name"]
    wait_for(f"RayJob {name} Running", reaches(world.kube, world.namespace, name, "Running"),
             timeout=90)  # fmt: skip


def job_started(world: World, manifest: dict[str, Any]) -> object:
    return reaches(world.kube, world.namespace, manifest["metadata"]["name"], "Running")()


def shut_down(build: Callable[[World], dict[str, Any]]) -> Callable[[World], dict[str, Any]]:
    """A RayJob that may be suspended: KubeRay refuses ``suspend`` without
    ``shutdownAfterJobFinishes`` (the review says so too: ``invalid-object``)."""
    return edited(build, lambda spec: spec.update(shutdownAfterJobFinishes=True))


def suspended(build: Callable[[World], dict[str, Any]]) -> Callable[[World], dict[str, Any]]:
    return edited(shut_down(build), lambda spec: spec.update(suspend=True))


def job_suspended(world: World, manifest: dict[str, Any]) -> object:
    return reaches(world.kube, world.namespace, manifest["metadata"]["name"], "Suspended")()


def job_settled_suspended(world: World, manifest: dict[str, Any]) -> None:
    name = manifest["metadata"]["name"]
    wait_for(f"RayJob {name} Suspended", lambda: job_suspended(world, manifest), timeout=60)


CASES = {
    "RayCluster: replicas 2 -> 3 creates one pod": Case(
        small_cluster("rc-scale"),
        edited(small_cluster("rc-scale"), lambda s: s["workerGroupSpecs"][0].update(replicas=3)),
        cluster_settled,
    ),
    "RayCluster: a template change is not rolled": Case(
        small_cluster("rc-image"),
        edited(small_cluster("rc-image"), new_image),
        cluster_settled,
        rules=("template-not-rolled",),
        done=generation_seen,
    ),
    "RayCluster: Recreate deletes and recreates every pod": Case(
        RECREATE,
        edited(RECREATE, new_image),
        cluster_settled,
        rules=("recreate-restarts-cluster",),
    ),
    "RayCluster: suspend deletes every pod": Case(
        small_cluster("rc-suspend"),
        edited(small_cluster("rc-suspend"), lambda s: s.update(suspend=True)),
        cluster_settled,
        rules=("suspend-deletes-pods",),
        done=generation_seen,
    ),
    "RayCluster: a removed worker group's pods keep running": Case(
        TWO_GROUPS,
        edited(TWO_GROUPS, lambda s: s["workerGroupSpecs"].pop()),
        cluster_settled,
        rules=("removed-group-pods-remain",),
        done=generation_seen,
    ),
    "RayService: a serve config change makes no pod": Case(
        service("rs-serve"),
        service("rs-serve", message="bonjour"),
        service_settled,
        done=serves_message("bonjour"),
    ),
    "RayService: a cluster change brings up a second cluster": Case(
        service("rs-cluster"),
        service("rs-cluster", env="two"),
        service_settled,
        done=switched,
    ),
    "RayJob: a spec change is a new run": Case(
        job("rj-a", 300),
        job("rj-b", 301),
        job_running,
        replaced=True,
        done=job_started,
    ),
    # Once failed one run in four: the pod informer handed over the garbage collector's
    # deletions before the cluster's own, and a pass made the two pods again. A pass now
    # asks the server whether the cluster stands before it replaces a ready cluster's pods.
    "RayJob: suspend deletes its cluster": Case(
        shut_down(job("rj-suspend", 300)),
        suspended(job("rj-suspend", 300)),
        job_running,
        rules=("suspend-deletes-pods",),
        done=job_suspended,
    ),
    "RayJob: resume is a new run": Case(
        suspended(job("rj-resume", 300)),
        shut_down(job("rj-resume", 300)),
        job_settled_suspended,
        done=job_started,
    ),
}


def predicted(
    case: Case | None,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    tmp: Path,
    settings: ReviewSettings | None = None,
) -> Report:
    """The report of old -> new, each as a manifest file read as ``review`` reads it
    (None: the object is not on that side, created or deleted)."""
    sides: list[list[Source]] = []
    for label, manifest in (("old", old), ("new", new)):
        if manifest is None:
            sides.append([])
            continue
        path = tmp / f"{label}.yaml"
        path.write_text(yaml.safe_dump(manifest))
        sources = load_sources(str(path))
        if case is not None and case.replaced:
            # What a program's resource gives: one resource behind both names.
            sources = [dataclasses.replace(s, origin='resource "run"') for s in sources]
        sides.append(sources)
    return review(from_sources(sides[0], sides[1]), settings or ReviewSettings())


def apply(world: World, case: Case, old: dict[str, Any], new: dict[str, Any]) -> None:
    kind = KINDS[old["kind"]]
    if case.replaced:
        world.kube.create(new)
        world.kube.delete(kind, old["metadata"]["name"], world.namespace)
        return
    put_spec(world, new)


def put_spec(world: World, manifest: dict[str, Any]) -> None:
    """``manifest``'s spec onto the stored object, as a user's edit: read and written
    again while the operator's own write (status, finalizers) moves it meanwhile (a 409,
    seen on a loaded CI run)."""
    edit(world.kube, KINDS[manifest["kind"]], manifest["metadata"]["name"], world.namespace,
         lambda found: found.__setitem__("spec", manifest["spec"]))  # fmt: skip


def belongs_to(manifest: dict[str, Any], *, replaced: bool) -> Callable[[Object], bool]:
    name = manifest["metadata"]["name"]
    if manifest["kind"] == "RayCluster":
        return cluster_pods_of(name)
    if manifest["kind"] == "RayService":
        return cluster_pods_of(name, suffixed=True)
    if replaced:
        return cluster_pods_of("rj", suffixed=True)  # both runs: rj-a-<suffix>, rj-b-<suffix>
    return cluster_pods_of(name, suffixed=True)


def remove(world: World, manifest: dict[str, Any]) -> None:
    with contextlib.suppress(NotFound):
        world.kube.delete(KINDS[manifest["kind"]], manifest["metadata"]["name"], world.namespace)


@pytest.mark.parametrize("name", CASES)
def test_the_review_predicts_the_pods(
    name: str,
    world: World,
    tmp_path: Path,
    gc_knows_rayclusters: None,  # noqa: F811
) -> None:
    case = CASES[name]
    old, new = case.old(world), case.new(world)
    world.kube.create(old)
    case.settle_old(world, old)
    report = predicted(case, old, new, tmp_path)
    expected = Counts(report.pods("pods_created"), report.pods("pods_deleted"))
    rules = {finding.rule for finding in report.findings}
    belongs = belongs_to(old, replaced=case.replaced)
    listed = world.kube.list(POD, world.namespace)["items"]
    before = {p["metadata"]["uid"] for p in listed if belongs(p)}
    done = case.done
    started = time.monotonic()
    try:
        with Recorder(world.kube, POD, world.namespace) as recorder:
            apply(world, case, old, new)
            if done is not None:
                wait_for(f"{name}: the change applied", lambda: done(world, new), timeout=120)
            actual = counts_reached(name, recorder, before, belongs, expected)
            reached = time.monotonic() - started - QUIET_SECONDS
    finally:
        for manifest in (old, new):
            remove(world, manifest)
    print(
        f"\n{name}: predicted {expected.created} created / {expected.deleted} deleted; "
        f"the operator: {actual.created} / {actual.deleted} (reached in {reached:.1f} s)"
    )
    assert actual == expected
    assert set(case.rules) <= rules, rules


# -- what follows a change: a deletion's wait, a retry, a schedule ---------------------


def resource_version(event: Any) -> int:
    return int(event.object["metadata"]["resourceVersion"])


def test_a_gcs_ft_deletion_waits_for_the_redis_cleanup_job(
    world: World,
    tmp_path: Path,
    gc_knows_rayclusters: None,  # noqa: F811
) -> None:
    """The review: every pod goes, and the deletion waits for the Redis cleanup Job (at
    most ``ray.io/gcs-ft-deletion-timeout``). The operator: the RayCluster stays, held by
    its finalizer, until that Job has been created and has finished (kwok completes its
    pod), well within the timeout."""
    name, timeout = "rc-ft", 60
    manifest = raycluster(
        name, world.namespace, workers=1, group="cpu",
        annotations={"ray.io/gcs-ft-deletion-timeout": str(timeout)},
        gcsFaultToleranceOptions={"redisAddress": "redis.example:6379"},
    )  # fmt: skip
    world.kube.create(manifest)
    cluster_settled(world, manifest)
    report = predicted(None, manifest, None, tmp_path)
    waits = [f for f in report.findings if f.rule == "gcs-ft-deletion-waits"]
    assert waits and f"{timeout} s" in waits[0].message, report.findings
    expected = Counts(report.pods("pods_created"), report.pods("pods_deleted"))
    of_cluster = cluster_pods_of(name)

    def belongs(pod: Object) -> bool:
        # The cleanup Job's pod carries the cluster's label too; the cluster's are counted.
        labels = pod["metadata"].get("labels") or {}
        return of_cluster(pod) and labels.get("ray.io/node-type") != "redis-cleanup"

    before = {p["metadata"]["uid"] for p in world.kube.list(POD, world.namespace)["items"]}
    with (
        Recorder(world.kube, POD, world.namespace) as pods,
        Recorder(world.kube, JOB, world.namespace) as jobs,
        Recorder(world.kube, RAY_CLUSTER, world.namespace) as clusters,
    ):
        started = time.monotonic()
        world.kube.delete(RAY_CLUSTER, name, world.namespace)
        wait_for(f"RayCluster {name} gone", lambda: gone(world, name), timeout=timeout + 30)
        elapsed = time.monotonic() - started
        # A GET can find it gone before the watch delivers its DELETED (a CI run did).
        wait_for(f"RayCluster {name}'s DELETED watched", lambda: any(
            e.type == "DELETED" and e.object["metadata"]["name"] == name
            for e in list(clusters.events)
        ))  # fmt: skip
        actual = counted(pods, before, belongs)
        cleanup = [
            e for e in list(jobs.events)
            if (e.object["metadata"].get("labels") or {}).get("ray.io/cluster") == name
        ]  # fmt: skip
        cluster_events = [e for e in list(clusters.events) if e.object["metadata"]["name"] == name]
    finished = [
        e for e in cleanup
        if any(c["type"] == "Complete" and c["status"] == "True"
               for c in (e.object.get("status") or {}).get("conditions") or ())
    ]  # fmt: skip
    held = [
        e for e in cluster_events
        if e.object["metadata"].get("deletionTimestamp")
        and FINALIZER in (e.object["metadata"].get("finalizers") or ())
    ]  # fmt: skip
    removed = [e for e in cluster_events if e.type == "DELETED"]
    print(
        f"\nRayCluster with GCS FT deleted: predicted {expected.deleted} pod(s) deleted and a "
        f"wait of at most {timeout} s for the cleanup Job; the operator: {actual.deleted} "
        f"deleted, {len({e.object['metadata']['uid'] for e in cleanup})} cleanup Job, gone in "
        f"{elapsed:.1f} s"
    )
    assert actual == expected
    assert cleanup, "no Redis cleanup Job"
    assert finished, "the cluster went before its cleanup Job finished"
    assert held and removed
    # The finalizer held the cluster until the Job finished, then let it go.
    assert resource_version(finished[0]) < resource_version(removed[0])
    assert elapsed < timeout, "the deadline, not the Job, ended the wait"


def gone(world: World, name: str) -> bool:
    try:
        world.kube.get(RAY_CLUSTER, name, world.namespace)
    except NotFound:
        return True
    return False


def test_a_failed_run_is_retried_on_a_new_cluster(
    world: World,
    tmp_path: Path,
    gc_knows_rayclusters: None,  # noqa: F811
) -> None:
    """The review of a RayJob with ``backoffLimit: 1``: a run of N pods, retried once on a
    new cluster after the old one is deleted. The operator, with an entrypoint that
    fails: two clusters one after the other, 2 N pods created, the first N deleted."""
    name, limit = "rj-retry", 1
    manifest = job(name, 0)(world)
    manifest["spec"]["entrypoint"] = 'python -c "import sys; sys.exit(3)"'
    manifest["spec"]["backoffLimit"] = limit
    report = predicted(None, None, manifest, tmp_path)
    (verdict,) = report.verdicts
    assert any(f"retried up to {limit} time(s)" in e for e in verdict.effects), verdict.effects
    assert any("after the old one is deleted" in e for e in verdict.effects), verdict.effects
    run = report.pods("pods_created")
    expected = Counts(run * (1 + limit), run * limit)
    belongs = cluster_pods_of(name, suffixed=True)
    try:
        with Recorder(world.kube, POD, world.namespace) as recorder:
            world.kube.create(manifest)
            wait_for(
                f"RayJob {name} Failed",
                reaches(world.kube, world.namespace, name, "Failed"), timeout=180,
            )  # fmt: skip
            actual = counts_reached(name, recorder, set(), belongs, expected, 60)
            clusters = {
                e.object["metadata"]["labels"]["ray.io/cluster"] for e in list(recorder.events)
                if belongs(e.object)
            }  # fmt: skip
        status = world.kube.get(RAY_JOB, name, world.namespace)["status"]
    finally:
        remove(world, manifest)
    print(
        f"\nRayJob backoffLimit {limit}: predicted {1 + limit} run(s) of {run} pod(s), "
        f"{expected.created} created / {expected.deleted} deleted; the operator: "
        f"{len(clusters)} cluster(s), {actual.created} / {actual.deleted}, "
        f"failed {status.get('failed')} time(s)"
    )
    assert actual == expected
    assert len(clusters) == 1 + limit
    assert status.get("failed") == 1 + limit


def test_a_raycronjob_template_change_reaches_only_later_runs(
    world: World,
    ray_crds: LocalCluster,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The review: a template change makes no pod now and reaches only the RayJobs made
    from now on. The operator's RayCronJob controller (the gate on, in-process on a clock
    the test moves, beside the module's operator, which runs the RayJobs: suspended by
    the template, they make no pod): the RayJob of the tick before the change keeps the
    old template, the next tick's gets the new one."""
    name = "cron-review"
    old = raycronjob(name, world.namespace, "* * * * *", timeZone="UTC")
    new = copy.deepcopy(old)
    new["spec"]["jobTemplate"]["entrypoint"] = "python -c \"print('tock')\""
    gates = ReviewSettings(
        options=RenderOptions(feature_gates=FeatureGates.parse("RayCronJob=true"))
    )
    report = predicted(None, old, new, tmp_path, gates)
    (verdict,) = report.verdicts
    assert verdict.summary.startswith("template changed: only RayJobs created from now on")
    assert not report.findings, report.findings
    expected = Counts(report.pods("pods_created"), report.pods("pods_deleted"))
    belongs = cluster_pods_of(name, suffixed=True)
    created = world.kube.create(old)
    clock = fake_clock_at(created_at(created))
    first = created_at(created).replace(second=0, microsecond=0) + datetime.timedelta(minutes=1)
    second = first + datetime.timedelta(minutes=1)
    try:
        with (
            Recorder(world.kube, POD, world.namespace) as recorder,
            cron_operator(ray_crds, world.namespace, clock) as operator,
        ):
            clock.advance((first - clock.now()).total_seconds())
            wait_for("the first tick's RayJob", ticked(world, clock, name, first), timeout=30)
            put_spec(world, new)
            # The clock jumps a minute at once: the operator must have seen the edit first,
            # as a real minute lets it (CI run 52 made the second tick's RayJob from the
            # cached old template, the watch event still on its way).
            wait_for("the operator's cache holding the new template",
                     cached_entrypoint_is(operator, world.namespace, name,
                                          new["spec"]["jobTemplate"]["entrypoint"]),
                     timeout=30)  # fmt: skip
            clock.advance((second - clock.now()).total_seconds())
            wait_for("the second tick's RayJob", ticked(world, clock, name, second), timeout=30)
            time.sleep(QUIET_SECONDS)
            actual = counted(recorder, set(), belongs)
        jobs = jobs_of(world.kube, world.namespace, name)
    finally:
        remove_cron(world, name)
    entrypoints = [jobs[f"{name}-{unix_minutes(t)}"]["spec"]["entrypoint"] for t in (first, second)]
    print(
        f"\nRayCronJob template change: predicted {expected.created} created / "
        f"{expected.deleted} deleted, later runs only; the operator: {actual.created} / "
        f"{actual.deleted}, entrypoints by tick {entrypoints}"
    )
    assert actual == expected
    assert sorted(jobs) == sorted(f"{name}-{unix_minutes(t)}" for t in (first, second))
    assert entrypoints == [
        old["spec"]["jobTemplate"]["entrypoint"],
        new["spec"]["jobTemplate"]["entrypoint"],
    ]


def ticked(
    world: World, clock: FakeClock, name: str, tick: datetime.datetime
) -> Callable[[], bool]:
    """The RayJob of ``tick`` exists; the fake clock moves 10 ms a look, so the
    controller's retry after a failed pass (a backoff on that clock) comes due."""

    def check() -> bool:
        clock.advance(0.01)
        return f"{name}-{unix_minutes(tick)}" in jobs_of(world.kube, world.namespace, name)

    return check


def cached_entrypoint_is(
    operator: CronOperator, namespace: str, name: str, entrypoint: str
) -> Callable[[], bool]:
    """The RayCronJob in the operator's own cache has ``entrypoint`` in its template."""
    cache = operator.manager.informers.get(RAY_CRON_JOB).cache

    def check() -> bool:
        found = cache.get(namespace, name) or {}
        return bool(found.get("spec", {}).get("jobTemplate", {}).get("entrypoint") == entrypoint)

    return check


def remove_cron(world: World, name: str) -> None:
    with contextlib.suppress(NotFound):
        world.kube.delete(RAY_CRON_JOB, name, world.namespace)


def test_an_incremental_upgrade_moves_traffic_in_the_predicted_steps(
    world: World,
    gateway_crds: LocalCluster,  # noqa: F811
    second_head: Future[ServeHead],  # noqa: F811
    tmp_path: Path,
    gc_knows_rayclusters: None,  # noqa: F811
) -> None:
    """The review of a cluster change under ``NewClusterWithIncrementalUpgrade``: a new
    cluster beside the old, traffic moved in a number of steps, the old cluster deleted.
    The operator (the Gateway and HTTPRoute accepted by the incremental module's fake
    gateway controller; the new cluster's head is a second real head, so each cluster's
    serve ``target_capacity`` is its own): the pods of the new cluster created, the old
    one's deleted, and each change of the new cluster's HTTPRoute weight a step."""
    second = second_head.result()
    with (
        CountingProxy(world.head.dashboard_port) as first_dashboard,
        CountingProxy(second.dashboard_port) as second_dashboard,
        FakeGatewayController(world.kube, world.namespace) as gateway,
    ):
        old = incremental_service(world.namespace, Head(world.head, first_dashboard), "hello")
        new = copy.deepcopy(old)
        new["spec"].update(spec_on(Head(second, second_dashboard), "v2"))
        name = old["metadata"]["name"]
        report = predicted(None, old, new, tmp_path)
        (verdict,) = report.verdicts
        steps = [int(m[1]) for e in verdict.effects if (m := re.search(r"(\d+) traffic step", e))]
        assert steps, verdict.effects
        expected = Counts(report.pods("pods_created"), report.pods("pods_deleted"))
        belongs = cluster_pods_of(name, suffixed=True)
        try:
            world.kube.create(old)
            first = incremental_settled(world, name, verdict.pods_before)
            before = {p["metadata"]["uid"] for p in world.kube.list(POD, world.namespace)["items"]}
            with Recorder(world.kube, POD, world.namespace) as recorder:
                changed = time.monotonic()
                put_spec(world, new)
                pending = wait_for(
                    "a pending cluster",
                    lambda: (service_status(world.kube, world.namespace, name)
                             .get("pendingServiceStatus") or {}).get("rayClusterName"),
                    timeout=30,
                )  # fmt: skip
                wait_for(f"RayCluster {pending}", lambda: not gone(world, pending), timeout=30)
                autoscaled(world, pending, new)
                wait_for("the promotion", lambda: switched(world, new), timeout=240)
                wait_for(
                    "the old cluster deleted", lambda: gone(world, first), timeout=60,
                )  # fmt: skip
                actual = counts_reached(name, recorder, before, belongs, expected, 60)
                elapsed = time.monotonic() - changed - QUIET_SECONDS
            weights = [dict(b).get(f"{pending}-serve-svc") for b in gateway.weights(changed)]
        finally:
            remove(world, old)
    moves = [w for i, w in enumerate(weights) if w and w != (weights[i - 1] if i else None)]
    print(
        f"\nRayService incremental upgrade: predicted {expected.created} created / "
        f"{expected.deleted} deleted in {steps[0]} traffic step(s); the operator: "
        f"{actual.created} / {actual.deleted}, the new cluster's weights {moves} "
        f"({elapsed:.1f} s)"
    )
    assert actual == expected
    assert len(moves) == steps[0], moves


def incremental_settled(world: World, name: str, pods: int) -> str:
    """Ready, and the active cluster's ``pods`` running and ready: its name."""
    wait_for(f"RayService {name} Ready", ready(world.kube, world.namespace, name), timeout=180)
    cluster = wait_for(
        f"RayService {name}'s active cluster",
        lambda: active_cluster(world.kube, world.namespace, name), timeout=120,
    )  # fmt: skip

    def live() -> list[Object]:
        found = world.kube.list(POD, world.namespace, label_selector=f"ray.io/cluster={cluster}")
        return [p for p in found["items"] if not p["metadata"].get("deletionTimestamp")]

    wait_for(
        f"RayService {name}'s {pods} pod(s) ready",
        lambda: len(live()) == pods and all(running_ready(p) for p in live()),
        timeout=60, interval=0.3,
        explain=lambda: [(p["metadata"]["name"], running_ready(p)) for p in live()],
    )  # fmt: skip
    return str(cluster)


def autoscaled(world: World, cluster: str, service: dict[str, Any]) -> None:
    """What the autoscaler of the pending cluster would do (none runs here): the
    operator makes it with its groups' replicas unset, to be sized from the serve
    ``target_capacity``; at full capacity that is the spec's replicas."""
    wanted = service["spec"]["rayClusterConfig"]["workerGroupSpecs"]

    def scale(found: Object) -> None:
        for group, spec in zip(found["spec"]["workerGroupSpecs"], wanted, strict=True):
            group["replicas"] = spec["replicas"]

    edit(world.kube, RAY_CLUSTER, cluster, world.namespace, scale)
