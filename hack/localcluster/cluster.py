"""Run a real control plane on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, and kwok for fake nodes whose pods become Running and Ready (and,
when a Job owns them, complete, unless ``podstages`` says a test runs them for real).

Every component is a child process with its log in the state directory. The state
(ports, pids) is written to ``state.json`` so that ``python -m hack.localcluster down``
from another process can stop what ``up`` started. A cluster started for a test session
dies with its parent (``die_with_parent``), so a killed pytest leaves nothing behind.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from hack import gobuild, processes, sandbox
from hack.localcluster import nodes, pki, podstages, versions
from hack.localcluster.build import BINARIES, Toolset, kubernetes_of
from hack.node import node
from hack.node.node import RealNode

# Made-up addresses on networks we do not own: only the sandbox (hack/sandbox) makes them
# lead anywhere, by routing them to loopback. These are their one definition.
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"
NODE_IP = "10.244.255.254"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
TEST_GO_RUNTIME: Final[Mapping[str, Mapping[str, str]]] = {
    component: {
        **gobuild.ONE_PROC_ENV,
        **(gobuild.LESS_GC_ENV if component == "kube-apiserver" else {}),
    }
    for component in COMPONENTS
}
"""Go's runtime for a test session's control plane (``LocalCluster.go_runtime``): every
component on one thread of Go code (``gobuild.ONE_PROC_ENV``), and ``gobuild.LESS_GC_ENV``
for the one component where it pays: under the test tiers the API server spent 15% of its
CPU in the collector's own workers alone (a three-minute profile); over the same five
modules its CPU went from 17.5 to 13.3 s and its peak RSS from 0.66 to 1.05 GB."""


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST_PORT = 10000
_SHARES = 8
"""The ports below the kernel's ephemeral range are split in this many shares, one per
pytest-xdist worker (``gw0``, ``gw1``...); a process outside pytest takes one by its pid."""
_next_port: int | None = None
_NEXT_PORT_LOCK = threading.Lock()


def own_ports() -> range:
    """The ports ``free_ports`` hands out in this process.

    Never from the kernel's ephemeral range: the kernel takes the local port of every
    outgoing connection, and of every bind to port 0, from there, so a port found free
    there can be taken by any process's next connection before its server binds it (a
    Ray head's GCS failed with "Address already in use" so in a fresh-clone run). Below
    it only processes that ask for a port by number get one, and each test worker asks
    only in a share of its own."""
    try:
        first_ephemeral = int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first_ephemeral = 32768
    size = max(16, (first_ephemeral - _LOWEST_PORT) // _SHARES)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    number = worker[2:]
    share = int(number) if worker.startswith("gw") and number.isdigit() else os.getpid()
    start = _LOWEST_PORT + (share % _SHARES) * size
    return range(start, start + size)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (see ``free_ports``)."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports on 127.0.0.1 that nothing listens on right now.

    They come in turn from this process's share (``own_ports``), a port in use skipped,
    so a port handed out comes round again only after the whole share (thousands): the
    process it was meant for may bind it only later (two operators started one after
    the other were once handed one metrics port by the OS)."""
    with _NEXT_PORT_LOCK:
        return [_claim(1) for _ in range(count)]


def free_port_block(width: int) -> int:
    """The first of ``width`` consecutive ports that nothing listens on, handed out
    together (a range Ray's workers pick from)."""
    with _NEXT_PORT_LOCK:
        return _claim(width)


def _claim(width: int) -> int:
    """Under the lock: the next ``width`` consecutive free ports of the share, the turn
    moved past them."""
    global _next_port
    share = own_ports()
    if _next_port is None:
        _next_port = os.getpid() % len(share)  # a worker's child starts elsewhere in it
    for _ in range(len(share)):
        offset = _next_port % len(share)
        _next_port = offset + 1
        first = share.start + offset
        if first + width <= share.stop and all(
            _nothing_listens(port) for port in range(first, first + width)
        ):
            _next_port = offset + width
            return first
    raise RuntimeError(
        f"no {width} free ports in a row on 127.0.0.1 in {share.start}-{share.stop - 1}"
    )


def _nothing_listens(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _progress(message: str) -> None:
    print(f"[localcluster] {message}", file=sys.stderr, flush=True)


REQUEST_TIMEOUT = "3m0s"
"""The API server's own bound on a request (its ``--request-timeout``)."""
APPLY_ATTEMPTS = 3
APPLY_ATTEMPT_SECONDS = 600.0
"""A kubectl apply's own bound: the server's ``REQUEST_TIMEOUT`` per object, a few."""
SERVER_TIMEOUT = "Timeout: request did not complete within requested timeout"
"""What kubectl prints for the API server's reply 504 (its ``--request-timeout`` spent)."""
SCHEMA_TIMEOUT = "error validating data: Get"
"""What kubectl prints when its own fetch of the server's OpenAPI schema (to validate what
it sends) ran out of its 32 s: on a loaded machine, right after CRDs changed and the
server rebuilds that schema. Nothing was sent, so sending again is safe."""
TRANSIENT = (SERVER_TIMEOUT, SCHEMA_TIMEOUT)


class KubectlError(subprocess.CalledProcessError):
    """A failed kubectl whose message says what kubectl said (``CalledProcessError``'s
    own names only the command and the exit status)."""

    def __str__(self) -> str:
        said = (self.stderr or "").strip()
        return f"{super().__str__()}: {said[-2000:]}" if said else super().__str__()


@dataclass
class LocalCluster:
    """A control plane rooted in ``state_dir``; ``start()`` it, ``stop()`` it."""

    state_dir: Path
    tools: Toolset
    die_with_parent: bool = False
    etcd_port: int = 0
    etcd_peer_port: int = 0
    apiserver_port: int = 0
    go_runtime: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Environment for Go's runtime, by component (``TEST_GO_RUNTIME``); Go's defaults if none."""
    real_node: RealNode | None = None
    """A real node (``hack/node``) to run beside the kwok nodes: its namespaces are made
    before the API server starts (which then advertises the node's way to it and answers
    there too), its components once the API server is up, and it stops first."""
    kubernetes: str = versions.KUBERNETES
    """The control plane's Kubernetes version (a key of ``versions.KUBERNETES_WRAPPERS``):
    ``tools`` must be that version's build (``ensure_built(kubernetes=...)``)."""
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    """``--feature-gates`` of the API server, the controller-manager and the scheduler
    alike (as kind's ``featureGates``); the version's defaults where unnamed."""
    runtime_config: Mapping[str, bool] = field(default_factory=dict)
    """The API server's ``--runtime-config``: API groups/versions served or not
    (``{"scheduling.k8s.io/v1alpha2": True}``)."""
    _providers: list[nodes.NodeProvider] = field(default_factory=list, repr=False)
    _crds_applied: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    """``apply_crds``: by the files' digest, the CRDs they made (``_crd_identities``)."""
    _supervisor: processes.Supervisor = field(
        default_factory=lambda: processes.Supervisor("the local control plane"), repr=False
    )

    def __post_init__(self) -> None:
        built_for = kubernetes_of(self.tools)
        if built_for != self.kubernetes:
            raise ValueError(
                f"the toolset in {self.tools.root} is Kubernetes {built_for}, not the "
                f"{self.kubernetes} asked for: pass ensure_built(kubernetes={self.kubernetes!r})"
            )

    @property
    def pids(self) -> dict[str, int]:
        """The running components' process ids."""
        return self._supervisor.pids

    # -- paths and client configuration -------------------------------------------------

    @property
    def pki(self) -> pki.Pki:
        return pki.Pki(self.state_dir / "pki")

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def advertise_address(self) -> str:
        """Where the ``kubernetes`` Service leads: loopback with kwok nodes alone, the
        real node's way to this sandbox with one."""
        return node.LINK_IP if self.real_node is not None else "127.0.0.1"

    @property
    def node_server(self) -> str:
        """The API server as a real node's components dial it."""
        return f"https://{self.advertise_address}:{self.apiserver_port}"

    @property
    def etcd_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def env(self) -> dict[str, str]:
        """Environment for clients: KUBECONFIG, and the built kubectl first on PATH."""
        path = f"{self.tools.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig), "PATH": path}

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl against this cluster; on failure the error's message
        carries kubectl's stderr.

        Its discovery cache is this cluster's own (``--cache-dir`` in the state
        directory): the default, ``~/.kube/cache`` keyed by host and port, is shared by
        every cluster that ever listened on that port and by concurrent kubectls of
        other clusters, a stale or half-written discovery for this one."""
        command = [
            str(self.tools.path("kubectl")),
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.state_dir / 'kube-cache'}",
            *args,
        ]
        result = subprocess.run(
            command, input=input, capture_output=True, text=True, timeout=timeout
        )
        if check and result.returncode != 0:
            raise KubectlError(
                result.returncode, command, output=result.stdout, stderr=result.stderr
            )
        return result

    def apply(self, *files: Path | str, input: str | None = None) -> str:
        """``kubectl apply --server-side --force-conflicts -o name`` of ``files`` (or of
        ``input`` when none is given), once more for each reply that says the server ran
        out of its own request timeout (``REQUEST_TIMEOUT``) or kubectl out of its wait for
        the server's schema (``SCHEMA_TIMEOUT``), up to ``APPLY_ATTEMPTS`` in all; what
        kubectl printed (a line per object).

        A server-side apply is idempotent, so sending it again is safe whether or not the
        timed-out one was stored. A CRD is the slow case (``apply_crds``): on a loaded CI
        machine one apply of ours took longer than the server's bound (then 60 s), and
        the session's CRDs failed every test of a worker. Any other failure is raised at
        once."""
        sources = [arg for path in files for arg in ("-f", str(path))] or ["-f", "-"]
        for attempt in range(1, APPLY_ATTEMPTS + 1):
            try:
                return self.kubectl("apply", "--server-side", "--force-conflicts", "-o", "name",
                                    *sources, input=input,
                                    timeout=APPLY_ATTEMPT_SECONDS).stdout  # fmt: skip
            except KubectlError as error:
                transient = any(text in (error.stderr or "") for text in TRANSIENT)
                if attempt == APPLY_ATTEMPTS or not transient:
                    raise
                _progress(f"apply timed out (attempt {attempt}); sending it again")
        raise AssertionError("unreachable")

    def apply_crds(self, *files: Path) -> None:
        """``apply`` CustomResourceDefinition files (or directories of them), unless this
        object applied the same bytes last for those CRDs and the server still has the
        very objects it made then (same uid and generation: not deleted, as a stack's
        destroy does, nor changed).

        A CRD's server-side apply costs the API server seconds of CPU even when nothing
        changes (it merges field sets over the whole schema: 33 s of wall time for our
        four, unchanged, on a loaded machine), and a session's modules each make sure of
        the CRDs they need; the check is one GET. Applying other contents under the same
        names (a test's relaxed schema) forgets the earlier contents."""
        digest = hashlib.sha256()
        for path in files:
            for file in sorted(path.glob("*.yaml")) if path.is_dir() else [path]:
                digest.update(f"{file}\0".encode() + file.read_bytes() + b"\0")
        key = digest.hexdigest()
        made = self._crds_applied.get(key)
        if made is not None and self._crd_identities(list(made)) == made:
            return
        names = [line.rsplit("/", 1)[-1] for line in self.apply(*files).split()]
        self._crds_applied = {other: applied for other, applied in self._crds_applied.items()
                              if not applied.keys() & set(names)}  # fmt: skip
        self._crds_applied[key] = self._crd_identities(names)

    def _crd_identities(self, names: list[str]) -> dict[str, str]:
        """``name: "uid generation"`` of each of the CRDs ``names`` that exists."""
        template = "{range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.generation}\n{end}"
        printed = self.kubectl("get", "crd", *names, "--ignore-not-found",
                               "-o", f"jsonpath={template}").stdout  # fmt: skip
        lines = (line.partition(" ") for line in printed.splitlines())
        return {name: identity for name, _, identity in lines}

    def server_version(self) -> str:
        """The ``gitVersion`` the API server reports (``GET /version``)."""
        return str(json.loads(self.kubectl("get", "--raw", "/version").stdout)["gitVersion"])

    def get_json(self, *args: str) -> dict[str, Any]:
        """``kubectl get ARGS -o json``, parsed."""
        parsed: dict[str, Any] = json.loads(self.kubectl("get", *args, "-o", "json").stdout)
        return parsed

    # -- lifecycle ------------------------------------------------------------------------

    def wait_for_crds(self, *names: str, timeout: float = 180.0) -> None:
        """Wait until the CRDs ``names`` (default: all) are Established. ``kubectl wait``
        has been seen to exit 1 at once on a loaded machine right after the CRDs were
        applied (under xdist), so a failed wait is tried again until ``timeout``; the
        last failure's stderr is in the error. The bound is the API server's own for a
        request (``REQUEST_TIMEOUT``): 60 s ran out on a loaded CI machine."""
        which = [f"crd/{name}" for name in names] or ["crd", "--all"]
        deadline = time.monotonic() + timeout
        while True:
            left = max(1, int(deadline - time.monotonic()))
            result = self.kubectl(
                "wait", "--for=condition=Established", *which, f"--timeout={left}s", check=False
            )
            if result.returncode == 0:
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(f"CRDs not Established after {timeout:.0f}s: {result.stderr}")
            time.sleep(0.5)

    def start(self, *, node_count: int = 4, crds: Path | None = None) -> None:
        """Start every component, wait until the API server is ready and nodes are Ready.

        ``crds`` (a file or directory of CustomResourceDefinitions) is applied and
        Established before kube-controller-manager starts, so its garbage collector knows
        those kinds from its first discovery. Applied later, the collector learns of them
        only at its periodic resync (every 30 s), and until then a deleted custom
        object's children stay.

        Only in the sandbox: the API server dials kwok's node and pod addresses (logs,
        the service proxy), and outside it those lead to networks we do not own.
        """
        sandbox.require_inside("the local control plane")
        started = time.monotonic()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "logs").mkdir(exist_ok=True)
        self.etcd_port, self.etcd_peer_port, self.apiserver_port = (
            free_port(),
            free_port(),
            free_port(),
        )
        extra = (node.LINK_IP,) if self.real_node is not None else ()
        pki.create(self.pki.directory, extra_server_addresses=extra)
        self._write_kubeconfig()
        self._providers = [nodes.KwokNodes(node_count)]
        if self.real_node is not None:
            self._providers.append(self.real_node)
        try:
            for provider in self._providers:
                provider.create()
            for component in COMPONENTS:
                self._launch(component)
                if component == "kube-apiserver" and crds is not None:
                    self.apply_crds(crds)
                    self.wait_for_crds()
            self._save_state()
            for provider in self._providers:
                provider.start(self)
            self._wait("nodes Ready", lambda: all(p.ready(self) for p in self._providers),
                       timeout=120)  # fmt: skip
        except BaseException:
            self.stop()
            raise
        _progress(f"control plane up in {time.monotonic() - started:.1f}s at {self.server}")

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *_exception: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop every component (reverse order), a real node first; leaves no process
        behind."""
        for provider in reversed(self._providers):
            if left := provider.stop():
                _progress(f"left behind by {type(provider).__name__}: {left}")
        for component in reversed(COMPONENTS):
            self._terminate(component)
        self._save_state()

    def restart_component(self, component: str, down_seconds: float) -> None:
        """Stop one component, keep it down for ``down_seconds``, start it again."""
        self._terminate(component)
        time.sleep(down_seconds)
        self._launch(component)
        if component in ("etcd", "kube-apiserver"):
            # The other components would reconnect on client-go's backoff, which took up to
            # 90 s here; restarting them hands the next user a settled cluster at once.
            for dependent in ("kube-controller-manager", "kube-scheduler", "kwok"):
                self._terminate(dependent)
                self._launch(dependent)
            self._wait("kube-controller-manager to resume", self._controllers_work, timeout=120)
        self._save_state()

    def _controllers_work(self) -> bool:
        probe = f"settle-{os.getpid()}-{time.monotonic_ns()}"
        self.kubectl("create", "namespace", probe, check=False)
        try:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if self.kubectl("-n", probe, "get", "sa", "default", check=False).returncode == 0:
                    return True
                time.sleep(0.2)
            return False
        finally:
            self.kubectl("delete", "namespace", probe, "--wait=false", check=False)

    def alive(self) -> dict[str, bool]:
        """Which components' processes are running."""
        running = self._supervisor.running
        return {name: name in running and running[name].alive() for name in COMPONENTS}

    def compact(self) -> int:
        """Compact etcd up to its current revision (old resourceVersions then give 410)."""
        header = self._etcd_call("/v3/kv/range", {"key": base64.b64encode(b"/").decode()})
        revision = int(header["header"]["revision"])
        self._etcd_call("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    # -- internals ------------------------------------------------------------------------

    def _arguments(self, component: str) -> list[str]:
        tls = self.pki
        kubeconfig = f"--kubeconfig={self.kubeconfig}"
        if component == "etcd":
            peer = f"http://127.0.0.1:{self.etcd_peer_port}"
            return [
                f"--data-dir={self.state_dir / 'etcd'}",
                f"--listen-client-urls={self.etcd_endpoint}",
                f"--advertise-client-urls={self.etcd_endpoint}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ]
        if component == "kube-apiserver":
            real_node = []
            if self.real_node is not None:
                kubelet_client = tls.issue(
                    "apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"
                )
                real_node = [f"--kubelet-client-certificate={kubelet_client[0]}",
                             f"--kubelet-client-key={kubelet_client[1]}",
                             "--kubelet-preferred-address-types=InternalIP"]  # fmt: skip
            return [
                f"--etcd-servers={self.etcd_endpoint}",
                # With a real node, its components and pods dial the advertised address
                # (inside the sandbox, so all addresses are still only the sandbox's).
                f"--bind-address={'0.0.0.0' if self.real_node is not None else '127.0.0.1'}",
                f"--advertise-address={self.advertise_address}",
                *real_node,
                f"--secure-port={self.apiserver_port}",
                f"--cert-dir={self.state_dir / 'apiserver-certs'}",
                f"--tls-cert-file={tls.serving_cert}",
                f"--tls-private-key-file={tls.serving_key}",
                f"--client-ca-file={tls.ca_cert}",
                f"--token-auth-file={tls.token_file}",
                "--authorization-mode=Node,RBAC",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={tls.service_account_public_key}",
                f"--service-account-signing-key-file={tls.service_account_key}",
                "--allow-privileged=true",
                # A request's bound on the server (default 60 s). A CRD's create or dry
                # run checks its schema whole, and on a saturated CI machine a Pulumi
                # preview of our CRDs ran out of the 60 s: this control plane serves
                # tests and the demo on two cores, not a fleet.
                f"--request-timeout={REQUEST_TIMEOUT}",
                *self._gates(),
                *_flag("--runtime-config", self.runtime_config),
                "--profiling=false",
                "--v=1",
            ]
        if component == "kube-controller-manager":
            return [
                kubeconfig,
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                f"--service-account-private-key-file={tls.service_account_key}",
                f"--root-ca-file={tls.ca_cert}",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                "--controllers=*",
                *self._gates(),
                "--profiling=false",
                "--v=1",
            ]
        if component == "kube-scheduler":
            return [
                kubeconfig,
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                *self._gates(),
                "--profiling=false",
                "--v=1",
            ]
        if component == "kwok":
            return [
                kubeconfig,
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={nodes.MANAGED_ANNOTATION}=fake",
                f"--cidr={POD_CIDR}",
                f"--node-ip={NODE_IP}",
                "--node-lease-duration-seconds=40",
                f"--config={podstages.STAGES_FILE}",
            ]
        raise ValueError(f"unknown component {component!r}; one of {', '.join(COMPONENTS)}")

    def _gates(self) -> list[str]:
        return _flag("--feature-gates", self.feature_gates)

    def _spec(self, component: str) -> processes.Spec:
        """What runs ``component``; etcd and the API server are ready when they say so."""
        ready = {"etcd": self._etcd_healthy, "kube-apiserver": self._apiserver_ready}
        return processes.Spec(
            name=component,
            argv=[str(self.tools.path(component)), *self._arguments(component)],
            log=self.state_dir / "logs" / f"{component}.log",
            env={**os.environ, "HOME": str(self.state_dir), **self.go_runtime.get(component, {})},
            ready=ready.get(component),
            die_with_parent=self.die_with_parent,
        )

    def _launch(self, component: str) -> None:
        self._supervisor.start(self._spec(component))

    def _terminate(self, component: str) -> None:
        self._supervisor.stop(component)

    def _wait(self, what: str, ready: Callable[[], bool], timeout: float = 90) -> None:
        self._supervisor.wait(what, ready, timeout)

    def _etcd_call(self, path: str, body: dict[str, object]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.etcd_endpoint + path, data=json.dumps(body).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            answer: dict[str, Any] = json.load(response)
            return answer

    def _etcd_healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.etcd_endpoint}/health", timeout=2) as response:
                return bool(json.load(response).get("health") == "true")
        except (OSError, ValueError):
            return False

    def _admin_ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        return context

    def _apiserver_ready(self) -> bool:
        return processes.http_ok(f"{self.server}/readyz", context=self._admin_ssl_context())

    def _write_kubeconfig(self) -> None:
        self.write_kubeconfig(self.kubeconfig, "admin", {"token": self.pki.admin_token()})

    def write_kubeconfig(
        self, path: Path, user_name: str, user: dict[str, str], *, server: str | None = None
    ) -> Path:
        """A kubeconfig for this API server that authenticates as ``user`` (a kubeconfig
        ``user`` entry: client certificate and key, or ``token``), dialled at ``server``
        (default: loopback), readable by its owner alone.

        Its clients do not ask for compressed responses (``disable-compression``): the
        API server is on this machine, and gzip was a tenth of its CPU under the e2e
        tier's previews (the Kubernetes provider fetches the OpenAPI document, our CRDs'
        schemas in it, at each start)."""
        cluster = {"server": server or self.server, "certificate-authority": str(self.pki.ca_cert),
                   "disable-compression": True}  # fmt: skip
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": cluster}],
            "users": [{"name": user_name, "user": user}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": user_name}}],
            "current-context": "local",
        }
        pki.write_secret(path, json.dumps(config, indent=2) + "\n")
        return path

    def _save_state(self) -> None:
        state = {
            "bin_dir": str(self.tools.bin_dir),
            "etcd_port": self.etcd_port,
            "etcd_peer_port": self.etcd_peer_port,
            "apiserver_port": self.apiserver_port,
            "kubernetes": self.kubernetes,
            "feature_gates": dict(self.feature_gates),
            "runtime_config": dict(self.runtime_config),
            "pids": self.pids,
        }
        (self.state_dir / "state.json").write_text(json.dumps(state, indent=2) + "\n")

    @classmethod
    def load(cls, state_dir: Path) -> LocalCluster:
        """The cluster whose state ``up`` left in ``state_dir``."""
        state = json.loads((state_dir / "state.json").read_text())
        cluster = cls(
            state_dir=state_dir,
            tools=Toolset(root=Path(state["bin_dir"]).parent, binaries=BINARIES),
            etcd_port=state["etcd_port"],
            etcd_peer_port=state["etcd_peer_port"],
            apiserver_port=state["apiserver_port"],
            kubernetes=state.get("kubernetes", versions.KUBERNETES),
            feature_gates=state.get("feature_gates", {}),
            runtime_config=state.get("runtime_config", {}),
        )
        for name, pid in state["pids"].items():
            cluster._supervisor.adopt(cluster._spec(name), int(pid))
        return cluster


def _flag(name: str, settings: Mapping[str, bool]) -> list[str]:
    """``name=key=true,other=false`` (sorted), or nothing for no settings."""
    if not settings:
        return []
    pairs = ",".join(f"{key}={str(on).lower()}" for key, on in sorted(settings.items()))
    return [f"{name}={pairs}"]


def format_env(cluster: LocalCluster, names: Sequence[str] = ("KUBECONFIG",)) -> str:
    """Shell ``export`` lines for a client of ``cluster``."""
    env = cluster.env
    lines = [f"export {name}={env[name]}" for name in names]
    lines.append(f"export PATH={cluster.tools.bin_dir}:$PATH")
    return "\n".join(lines)
