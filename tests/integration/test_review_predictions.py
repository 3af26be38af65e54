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
whole module; each case has objects of its own names.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import time
from collections.abc import Callable, Iterator
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
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER, RAY_JOB, RAY_SERVICE, Object
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    gc_knows_rayclusters,
    gc_probe,
    ray_crds,
    raycluster,
    running_ready,
)
from tests.integration.rayjob.conftest import operator, rayjob, reaches
from tests.integration.rayservice.conftest import (  # noqa: F401 (fixtures)
    ServeHead,
    active_cluster,
    rayservice,
    ready,
    serve_config,
    serve_head,
)
from tests.kubeclient import fresh_namespace
from tests.rayhead import module_ray_head  # noqa: F401 (a fixture)
from tests.waiting import wait_for
from tests.watching import Recorder

KINDS = {"RayCluster": RAY_CLUSTER, "RayService": RAY_SERVICE, "RayJob": RAY_JOB}
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
        for edit in edits:
            edit(spec)

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
}


def predicted(case: Case, old: dict[str, Any], new: dict[str, Any], tmp: Path) -> Report:
    """The report of old -> new, each as a manifest file read as ``review`` reads it."""
    sides = []
    for label, manifest in (("old", old), ("new", new)):
        path = tmp / f"{label}.yaml"
        path.write_text(yaml.safe_dump(manifest))
        sources = load_sources(str(path))
        if case.replaced:
            # What a program's resource gives: one resource behind both names.
            sources = [dataclasses.replace(s, origin='resource "run"') for s in sources]
        sides.append(sources)
    before: list[Source] = sides[0]
    return review(from_sources(before, sides[1]), ReviewSettings())


def apply(world: World, case: Case, old: dict[str, Any], new: dict[str, Any]) -> None:
    kind = KINDS[old["kind"]]
    if case.replaced:
        world.kube.create(new)
        world.kube.delete(kind, old["metadata"]["name"], world.namespace)
        return
    found = world.kube.get(kind, old["metadata"]["name"], world.namespace)
    found["spec"] = new["spec"]
    world.kube.update(found)


def belongs_to(manifest: dict[str, Any]) -> Callable[[Object], bool]:
    name = manifest["metadata"]["name"]
    if manifest["kind"] == "RayCluster":
        return cluster_pods_of(name)
    if manifest["kind"] == "RayService":
        return cluster_pods_of(name, suffixed=True)
    return cluster_pods_of("rj", suffixed=True)  # both runs: rj-a-<suffix>, rj-b-<suffix>


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
    belongs = belongs_to(old)
    listed = world.kube.list(POD, world.namespace)["items"]
    before = {p["metadata"]["uid"] for p in listed if belongs(p)}
    done = case.done
    started = time.monotonic()
    try:
        with Recorder(world.kube, POD, world.namespace) as recorder:
            apply(world, case, old, new)
            if done is not None:
                wait_for(f"{name}: the change applied", lambda: done(world, new), timeout=120)
            wait_for(
                f"{name}: {expected} as predicted",
                lambda: counted(recorder, before, belongs) == expected,
                timeout=120, interval=0.2, explain=lambda: counted(recorder, before, belongs),
            )  # fmt: skip
            reached = time.monotonic() - started
            time.sleep(QUIET_SECONDS)  # the operator's chance to do more than predicted
            actual = counted(recorder, before, belongs)
    finally:
        for manifest in (old, new):
            remove(world, manifest)
    print(
        f"\n{name}: predicted {expected.created} created / {expected.deleted} deleted; "
        f"the operator: {actual.created} / {actual.deleted} (reached in {reached:.1f} s)"
    )
    assert actual == expected
    assert set(case.rules) <= rules, rules
