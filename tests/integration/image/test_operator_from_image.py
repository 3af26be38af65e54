"""The operator run from its image as the ``RayOperator`` component's pod would run it.

The image ``make image`` built is unpacked once per module and started by
``hack.image.run`` (unshare and chroot: read-only root, tmpfs ``/tmp``, uid 65532 with no
groups and no capabilities) with the command, args and env of the Deployment the
component renders under Pulumi's mocks (``tests/integration/tenancy.py``), and nothing
else: no ``--kubeconfig``, no port rebound. It finds the API server as a pod does, through
``KUBERNETES_SERVICE_HOST`` and ``KUBERNETES_SERVICE_PORT``, and authenticates with a
bound token of the ServiceAccount the component renders, whose ClusterRole and bindings
are applied as rendered: a permission missing from them fails the test. The Deployment's
ports, ``:8080`` and ``:8082``, are bound as they are; the one other test that binds them
takes turns (``sandbox.fixed_ports``).

The component is given ``watch_namespaces`` (the test's namespace): an operator of the
default, all-namespaces kind would also reconcile what earlier modules on this worker
left in their terminating namespaces.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from components import RayOperatorArgs
from hack import sandbox
from hack.image import ImageBuild, built, root_filesystem
from hack.image.run import ContainerRun, ImageConfig, image_config, launch, service_account_files
from hack.localcluster import LocalCluster
from hack.localcluster.deployed_operator import literal_env
from hack.localhttp import LOCAL_HTTP
from operator_runtime.runtime.kinds import LEASE, RAY_CLUSTER
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    gc_probe,
    make_client,
    ray_crds,
    raycluster,
)
from tests.integration.tenancy import apply, render_operator

IMAGE_REPOSITORY = "registry.invalid/pulumi-ray/operator"
"""Where the Deployment says the image comes from; never pulled (it is unpacked here)."""
CLUSTER_SCOPED = ("ClusterRole", "ClusterRoleBinding")
CLUSTER = "from-image"
READY_AFTER_LIVE_SECONDS = 60.0
"""From a live operator to a ready RayCluster on kwok: the bound the other tests of a
RayCluster reaching ``ready`` use."""
LOG_FAILURES = (
    "Read-only file system",  # a write to the image's root
    "OSError",
    "Traceback",
    "ModuleNotFoundError",  # a library missing from the image
    "ImportError",
    "forbidden",  # the API server refused a request: RBAC the component did not grant
    "Unauthorized",
    "container:",  # hack.image.run could not start it as the pod spec says
)


@dataclass(frozen=True)
class Image:
    build: ImageBuild
    root: Path
    config: ImageConfig

    @property
    def reference(self) -> str:
        return f"{IMAGE_REPOSITORY}@{self.build.digest}"


@pytest.fixture(scope="module")
def image() -> Image:
    build = built()
    return Image(build, root_filesystem(build), image_config(build.layout))


def flag(arguments: list[str], name: str) -> str:
    (value,) = (a.split("=", 1)[1] for a in arguments if a.startswith(f"{name}="))
    return value


@dataclass
class Container:
    process: subprocess.Popen[bytes]
    log_path: Path
    started: float

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def failures(self) -> list[str]:
        return [line for line in self.log().splitlines() if any(m in line for m in LOG_FAILURES)]

    def until(self, what: str, timeout: float, **checks: Callable[[], object]) -> dict[str, float]:
        """Poll ``checks`` together until each has held once; the seconds from the start
        at which each first held. Fails at once, with the log, if the process exits or
        logs a failure (``LOG_FAILURES``)."""
        seen: dict[str, float] = {}
        deadline = time.monotonic() + timeout
        while len(seen) < len(checks):
            if self.process.poll() is not None:
                pytest.fail(f"the operator exited {self.process.returncode} while waiting for "
                            f"{what}:\n{self.tail()}")  # fmt: skip
            if failures := self.failures():
                pytest.fail("\n".join(failures[:20]) + f"\n--- the log's end:\n{self.tail()}")
            for name, check in checks.items():
                if name not in seen and check():
                    seen[name] = time.monotonic() - self.started
            if time.monotonic() > deadline:
                missing = sorted(set(checks) - set(seen))
                pytest.fail(f"{what}: {missing} not within {timeout:.0f}s:\n{self.tail()}")
            time.sleep(0.05)
        return seen


def get(url: str) -> httpx.Response | None:
    try:
        return LOCAL_HTTP.get(url, timeout=2)
    except httpx.HTTPError:
        return None


def answers(url: str) -> bool:
    response = get(url)
    return response is not None and response.status_code == 200


def proc_status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def root_mount_options(pid: int) -> list[str]:
    """The options of the process's ``/`` as it sees it (mountinfo field 6)."""
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == "/":
            return fields[5].split(",")
    raise AssertionError(f"no / in /proc/{pid}/mountinfo")


@pytest.fixture
def cluster_scoped_cleanup(ray_crds: LocalCluster) -> Iterator[list[dict[str, Any]]]:  # noqa: F811
    """Objects a test applied; the cluster-scoped ones are deleted after it (the others go
    with the test's namespace)."""
    applied: list[dict[str, Any]] = []
    yield applied
    for item in applied:
        if item["kind"] in CLUSTER_SCOPED:
            ray_crds.kubectl("delete", item["kind"].lower(), item["metadata"]["name"],
                             "--wait=false", check=False)  # fmt: skip


def test_the_operator_runs_from_its_image_as_its_pod_would(
    image: Image,
    ray_crds: LocalCluster,  # noqa: F811
    namespace: str,
    cluster_scoped_cleanup: list[dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kube = make_client(ray_crds)
    rendered = render_operator(
        namespace, RayOperatorArgs(image=image.reference, watch_namespaces=[namespace])
    )
    pod, spec = rendered.pod, rendered.container
    assert spec["image"] == image.reference
    env = literal_env(spec)
    assert len(env) == len(spec.get("env", [])), "an env entry needs a kubelet (valueFrom)"
    # The wire form's numbers are floats (protobuf's Struct).
    ports = {port["name"]: int(port["containerPort"]) for port in spec["ports"]}
    cluster_scoped_cleanup.extend(rendered.rbac)
    apply(ray_crds, rendered.rbac, tmp_path)
    token = ray_crds.kubectl("-n", namespace, "create", "token", rendered.service_account,
                             "--duration=1h").stdout.strip()  # fmt: skip
    secrets = service_account_files(tmp_path / "serviceaccount", {
        "token": token, "ca.crt": ray_crds.pki.ca_cert.read_text(), "namespace": namespace,
    })  # fmt: skip
    hostname = f"{rendered.service_account}-5c9d7f-x2k4q"  # a pod name of its Deployment
    run = ContainerRun(
        root=str(image.root), image=image.config,
        command=tuple(spec.get("command", ())), args=tuple(spec.get("args", ())),
        # What the kubelet adds for the API server's Service; the pod's env wins.
        env=(("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
             ("KUBERNETES_SERVICE_PORT", str(ray_crds.apiserver_port)), *env.items()),
        service_account=str(secrets), hostname=hostname,
    )  # fmt: skip
    kube.create(raycluster(CLUSTER, namespace, workers=1))
    liveness = spec["livenessProbe"]
    live_within = int(
        liveness["initialDelaySeconds"] + liveness["periodSeconds"] * liveness["failureThreshold"]
    )
    health, metrics = f"http://127.0.0.1:{ports['health']}", f"http://127.0.0.1:{ports['metrics']}"

    def status_written() -> bool:
        return bool(kube.get(RAY_CLUSTER, CLUSTER, namespace).get("status"))

    def state_ready() -> bool:
        status = kube.get(RAY_CLUSTER, CLUSTER, namespace).get("status") or {}
        return status.get("state") == "ready"

    log_path = tmp_path / "operator.log"
    with sandbox.fixed_ports(*ports.values()), log_path.open("wb") as output:
        container = Container(launch(run, tmp_path / "container.json", output), log_path, 0.0)
        container.started = time.monotonic()
        try:
            times = container.until(
                "the operator live and ready, the RayCluster ready",
                live_within + READY_AFTER_LIVE_SECONDS,
                live=lambda: answers(f"{health}/healthz"), status=status_written,
                ready=lambda: answers(f"{health}/readyz"), cluster_ready=state_ready,
            )  # fmt: skip
            # The kubelet restarts a container whose /healthz has not answered by then.
            assert times["live"] <= live_within, f"/healthz after {times['live']:.1f}s"
            served = get(f"{metrics}/metrics")
            assert served is not None and served.status_code == 200, container.tail()
            assert re.search(r"^kuberay_cluster_\w+\{", served.text, re.M), served.text[:2000]
            refused = re.findall(r'^rest_client_requests_total\{[^}]*code="40[13]"[^}]*\} \S+',
                                 served.text, re.M)  # fmt: skip
            assert not refused, f"requests the API server refused: {refused}\n{container.tail()}"
            pid = container.process.pid
            status = proc_status(pid)
            assert status["Uid"].split() == ["65532"] * 4, status["Uid"]
            assert status["Gid"].split() == ["65532"] * 4, status["Gid"]
            assert status["Groups"] == "", status["Groups"]
            for capabilities in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                assert int(status[capabilities], 16) == 0, f"{capabilities}: {status}"
            assert status["NoNewPrivs"] == "1"
            assert "ro" in root_mount_options(pid)
            lease_name = flag(list(spec["args"]), "--leader-election-id")
            holder = kube.get(LEASE, lease_name, namespace)["spec"].get("holderIdentity", "")
            assert holder.startswith(f"{hostname}_"), holder
        finally:
            container.process.send_signal(signal.SIGTERM)
            stopped = time.monotonic()
            try:
                code = container.process.wait(int(pod["terminationGracePeriodSeconds"]))
            except subprocess.TimeoutExpired:
                container.process.kill()  # the kubelet's SIGKILL
                code = container.process.wait()
            stop_seconds = time.monotonic() - stopped
    assert code == 0, f"exit {code} after SIGTERM ({stop_seconds:.1f}s):\n{container.tail()}"
    failures = container.failures()
    assert not failures, "\n".join(failures[:20]) + f"\n--- the log's end:\n{container.tail()}"
    released = kube.get(LEASE, lease_name, namespace)["spec"].get("holderIdentity") or ""
    assert released == "", f"the Lease {namespace}/{lease_name} is still held by {released}"
    with capsys.disabled():
        print(
            f"\noperator from image {image.build.digest[:19]}: first RayCluster status write "
            f"{times['status']:.2f}s after start, /healthz {times['live']:.2f}s, /readyz "
            f"{times['ready']:.2f}s, RayCluster ready {times['cluster_ready']:.2f}s; "
            f"SIGTERM to exit 0 in {stop_seconds:.2f}s"
        )
