"""A RayJob and a RayCluster that Kueue keeps in its queue do not fail ``pulumi up``: the
real engine, language host and Kubernetes provider, our operator as users run it, and
Kueue (built from its Go module, ``hack/kueue``) with a ClusterQueue too small for either.

Kueue's webhook suspends both at creation and never admits them; the operator reports
``jobDeploymentStatus: Suspended`` and ``state: suspended``; the components' waits (ready
or suspended, whichever comes first, with ``queue_name``) end there and ``up`` says each
is queued. Without that wait, ``up`` would hold until the components' ``timeout`` (3
minutes here) and fail.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hack.kueue import run as kueue_run
from hack.localcluster import LocalCluster
from tests.e2e.stacks import REPO_ROOT, ProgramStack, crd_files
from tests.integration.batch.conftest import apply_quota, delete_quota, workload_owners
from tests.kubeclient import delete_namespace
from tests.operatorprocess import OperatorProcess

# The first test's setup may build the engine (about 15 minutes on a cold 2-core machine).
pytestmark = pytest.mark.timeout(2400)

PROGRAM = Path(__file__).resolve().parent / "kueue_program"
QUEUE = "queue"
"""The LocalQueue ``apply_quota`` creates."""
UP_BOUND = 150.0
"""Seconds ``up`` may take when the job is queued: well under the program's 3-minute
timeout, so an ``up`` that waited for the timeout cannot pass."""


@pytest.fixture(scope="module")
def kueue(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Kueue running beside the e2e control plane, its Ray integrations on: they need our
    CRDs installed before it starts."""
    local_cluster.apply_crds(*crd_files())
    local_cluster.wait_for_crds("rayjobs.ray.io")
    with kueue_run.running(local_cluster, tmp_path_factory.mktemp("kueue")):
        yield


@pytest.fixture
def queued_namespace(local_cluster: LocalCluster, kueue: None) -> Iterator[str]:
    """A namespace Kueue manages, with a ClusterQueue of half a CPU: less than the job."""
    name = f"q-{uuid.uuid4().hex[:10]}"
    local_cluster.kubectl("create", "namespace", name)
    local_cluster.kubectl("label", "namespace", name, f"{kueue_run.NAMESPACE_LABEL}=enabled")
    apply_quota(local_cluster, name, cpu="500m", memory="4Gi")
    try:
        yield name
    finally:
        delete_quota(local_cluster, name)
        delete_namespace(local_cluster, name)


def _checkout_first(program: ProgramStack, tmp_path: Path) -> None:
    """Run the program with this checkout's ``pulumi_ray`` (and operator_runtime): the
    virtualenv's editable install may be another worktree's. A ``pulumi_ray`` link on
    PYTHONPATH is found before the editable finder, which Python consults last."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "pulumi_ray").symlink_to(REPO_ROOT / "components", target_is_directory=True)
    program.stack.workspace.env_vars["PYTHONPATH"] = f"{shim}:{REPO_ROOT}"


def test_up_succeeds_and_says_a_queued_rayjob_is_queued(
    queued_namespace: str,
    program_stack: Callable[..., ProgramStack],
    local_cluster: LocalCluster,
    tmp_path: Path,
) -> None:
    program = program_stack(example=PROGRAM)
    _checkout_first(program, tmp_path)
    program.set_config("namespace", queued_namespace)
    program.set_config("queue", QUEUE)
    # The operator runs until the stack is destroyed: its finalizer must be honoured.
    with OperatorProcess(local_cluster.kubeconfig, queued_namespace):
        try:
            started = time.monotonic()
            up = program.up()
            took = time.monotonic() - started
            print(f"\nup of a queued RayJob: {took:.1f} s")
            assert up.summary.result == "succeeded", program.text[-4000:]
            assert took < UP_BOUND, (took, program.text[-4000:])
            name = up.outputs["name"].value
            cluster_name = up.outputs["clusterName"].value
            for said in (
                f"RayJob {queued_namespace}/{name} is queued: suspended in Kueue's "
                f"LocalQueue 'queue'",
                f"RayCluster {queued_namespace}/{cluster_name} is queued",
            ):
                assert said in " ".join(program.text.split()), program.text[-4000:]
            # The waits ended on what the operator reported, as the provider read it back.
            assert up.outputs["status"].value["jobDeploymentStatus"] == "Suspended"
            assert up.outputs["clusterStatus"].value["state"] == "suspended"
            job = local_cluster.get_json("-n", queued_namespace, "rayjob", name)
            assert job["metadata"]["labels"][kueue_run.QUEUE_NAME_LABEL] == QUEUE
            assert job["spec"]["suspend"] is True, job["spec"]
            # Kueue holds both (Workloads not admitted): the job has no cluster, no pods.
            owners = workload_owners(local_cluster, queued_namespace)
            assert owners.get(name, {}).get("Admitted") != "True", owners
            clusters = local_cluster.get_json("-n", queued_namespace, "raycluster")["items"]
            assert [c["metadata"]["name"] for c in clusters] == [cluster_name]
            assert clusters[0]["spec"]["suspend"] is True, clusters[0]["spec"]
            assert owners.get(cluster_name, {}).get("Admitted") != "True", owners
            pods = local_cluster.get_json("-n", queued_namespace, "pod")["items"]
            assert pods == [], [p["metadata"]["name"] for p in pods]
        finally:
            program.destroy()
