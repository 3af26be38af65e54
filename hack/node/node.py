"""One real node beside the kwok nodes: containerd, runc, the CNI bridge, the kubelet,
kube-proxy and CoreDNS, in namespaces of their own inside the sandbox.

The node is a kind node container without a container engine: ``unshare`` makes its PID,
network and mount namespaces with ``hack.node.init`` as PID 1 (see there: why every
process of the node dies with it, and how the machine's sysctls are kept), and every
component joins them through ``nsenter``. A veth pair joins the node's network to the
sandbox's::

    sandbox netns                      node netns                         pods
    API server 0.0.0.0:<port>          eth0 NODE_IP ── cni0 10.245.0.1 ── 10.245.0.x
    LINK_IP ── veth ────────────────── default via LINK_IP
    10.245.0.0/16 via NODE_IP          kube-proxy (nftables), CoreDNS :53

The API server advertises ``LINK_IP`` (EndpointSlice validation refuses loopback), so the
``kubernetes`` Service leads a pod to it through kube-proxy, and pods are reachable from
the sandbox (the tests, the API server's logs and exec) by their own addresses. The
ranges are outside the ones the sandbox routes to loopback for kwok. Nothing here can
reach beyond the sandbox, which has no way out: a pull of an image that was not loaded
fails on its name lookup, locally.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final

from hack import gobuild, processes, sandbox
from hack.node import cgroups, init

if TYPE_CHECKING:
    from hack.localcluster.cluster import LocalCluster

NODE_NAME: Final = "real-node"
HOLDER: Final = "namespaces"
"""The process holding the node's namespaces: ``unshare``, with ``init.py`` under it."""
LINK_IP: Final = "10.246.0.1"
"""The sandbox's end of the veth: the API server's advertised address."""
NODE_IP: Final = "10.246.0.2"
LINK_PREFIX: Final = 30
POD_RANGE: Final = "10.245.0.0/16"
"""Routed from the sandbox to the node; outside kwok's 10.244.0.0/16."""
POD_SUBNET: Final = "10.245.0.0/24"
POD_GATEWAY: Final = "10.245.0.1"
CLUSTER_DNS_IP: Final = "10.96.0.10"
CLUSTER_DOMAIN: Final = "cluster.local"
SANDBOX_LINK: Final = "pr-node0"
CONTAINERD_SOCKET: Final = "/run/containerd/containerd.sock"
"""In the node's private ``/run`` (``init.py``)."""
SANDBOX_IMAGE: Final = "registry.k8s.io/pause:3.10.1"
"""The name containerd gives each pod's sandbox container; the image loaded under it is
the one built here from Kubernetes' ``pause.c`` (``images.py``)."""
NODE_LABELS: Final = {"type": "real", "pulumi-ray.dev/real-node": "true"}
KUBELET_HEALTH_PORT: Final = 10248
PROXY_HEALTH_PORT: Final = 10256
DNS_READY_PORT: Final = 8181
FIREWALL: Final = "kube-router"
FIREWALL_HEALTH_PORT: Final = 20244
"""kube-router's default; it serves ``/healthz`` once its informers are synced."""
FIREWALL_CHAIN_PREFIXES: Final = ("KUBE-ROUTER-", "KUBE-NWPLCY-", "KUBE-POD-FW-")
FIREWALL_IPSET_PREFIXES: Final = ("KUBE-SRC-", "KUBE-DST-")
"""The names kube-router's firewall gives its chains and ipsets (v2.1.0's
``network_policy_controller.go``)."""
START_TIMEOUT: Final = 180.0
"""From the first process to the node Ready with DNS answering. Each component is up in
seconds on an idle machine; the bound is for a loaded one."""


def _progress(message: str) -> None:
    print(f"[node] {message}", file=sys.stderr, flush=True)


def _ip(*arguments: str) -> None:
    result = subprocess.run(["ip", *arguments], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"`ip {' '.join(arguments)}` failed: {result.stderr.strip()}")


@dataclass(frozen=True)
class NodeImage:
    """An image for the node: a tar ``ctr images import`` reads, and the references the
    node knows it by (the first is the name the tar gives)."""

    tar: Path
    references: tuple[str, ...]


@dataclass(frozen=True)
class VolumeProvisioner:
    """The node's volume provisioner (rancher's local-path-provisioner, kind's): its
    binary, and an image the node has loaded with a shell and coreutils, which its helper
    pods run as root to make and remove each volume's directory."""

    binary: Path
    helper_image: str


@dataclass
class RealNode:
    """The node rooted in ``state_dir``: ``create()`` its namespaces (before the API
    server starts, so that ``LINK_IP`` exists), ``start(cluster)`` its components once
    the API server is up, ``stop()`` everything."""

    state_dir: Path
    tools: gobuild.Built
    images: Sequence[NodeImage] = ()
    """Images to load into containerd (``images.py`` makes them)."""
    provisioner: VolumeProvisioner | None = None
    """When set, the default StorageClass ``standard`` provisions volumes as directories
    under the state directory's ``volumes/`` (``configs.storage_objects``)."""
    init_pid: int = 0
    holder_pid: int = 0
    """``unshare``'s: it names the node's cgroup root."""
    _supervisor: processes.Supervisor = field(
        default_factory=lambda: processes.Supervisor("the real node"), repr=False
    )
    _lock: IO[str] | None = field(default=None, repr=False)
    _kubelet_argv: list[str] = field(default_factory=list, repr=False)
    _firewall: gobuild.Built | None = field(default=None, repr=False)

    @property
    def cgroup_root(self) -> str:
        return cgroups.root_name(self.holder_pid)

    @property
    def logs(self) -> Path:
        return self.state_dir / "logs"

    # -- namespaces -----------------------------------------------------------------------

    def create(self) -> None:
        """The node's namespaces, PID 1 and the veth; the sandbox's routes to it."""
        sandbox.require_inside("a real node")
        self._take_lock()
        cgroups.sweep()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        (self.state_dir / init.READY_FILE).unlink(missing_ok=True)
        repo_root = Path(__file__).resolve().parents[2]
        try:
            holder = self._supervisor.start(processes.Spec(
                name=HOLDER,
                argv=["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--net",
                      "--mount", "--propagation", "private", "--",
                      sys.executable, "-m", "hack.node.init", str(self.state_dir)],
                log=self.logs / "init.log",
                env={**os.environ, "PYTHONPATH": str(repo_root)},
                ready=(self.state_dir / init.READY_FILE).exists,
                ready_timeout=30,
                grace=0,  # SIGKILL: --kill-child passes it to PID 1, the kernel to the rest
            ))  # fmt: skip
            self.holder_pid = holder.pid
            cgroups.record_holder(Path(os.environ[sandbox.DIR_ENV]), holder.pid)
            self.init_pid = self._init_pid()
            cgroups.create_root(self.cgroup_root)
            _ip("link", "add", SANDBOX_LINK, "type", "veth", "peer", "name", "eth0",
                "netns", str(self.init_pid))  # fmt: skip
            _ip("addr", "add", f"{LINK_IP}/{LINK_PREFIX}", "dev", SANDBOX_LINK)
            _ip("link", "set", SANDBOX_LINK, "up")
            _ip("route", "add", POD_RANGE, "via", NODE_IP)
            node_ip = ["nsenter", f"--target={self.init_pid}", "--net", "ip"]
            for arguments in (
                ["link", "set", "lo", "up"],
                ["addr", "add", f"{NODE_IP}/{LINK_PREFIX}", "dev", "eth0"],
                ["link", "set", "eth0", "up"],
                ["route", "add", "default", "via", LINK_IP],
            ):
                subprocess.run([*node_ip, *arguments], check=True, capture_output=True)
        except BaseException:
            self.stop()
            raise

    def _take_lock(self) -> None:
        path = Path(os.environ[sandbox.DIR_ENV]) / "real-node.lock"
        lock = path.open("w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise RuntimeError(
                "a real node already runs in this sandbox (one per sandbox: its addresses "
                f"{LINK_IP} and {NODE_IP} are fixed)"
            ) from None
        self._lock = lock

    def _init_pid(self) -> int:
        children = Path(f"/proc/{self.holder_pid}/task/{self.holder_pid}/children")
        pids = children.read_text().split()
        if len(pids) != 1:
            raise RuntimeError(f"unshare {self.holder_pid} has children {pids}, expected one")
        return int(pids[0])

    # -- components -----------------------------------------------------------------------

    def enter(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the node's namespaces."""
        return ["nsenter", f"--target={self.init_pid}", "--pid", "--net", "--mount", "--",
                *argv]  # fmt: skip

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
        """Run a command in the node and wait for it; fails naming what it said."""
        result = subprocess.run(
            self.enter(argv), capture_output=True, timeout=timeout, env=self._environment()
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"in the node: {' '.join(argv)} exited {result.returncode}: "
                f"{result.stderr.decode(errors='replace').strip()[-2000:]}"
            )
        return result

    def ctr(self, *arguments: str) -> str:
        """containerd's ``ctr`` in the Kubernetes namespace of the node's containerd."""
        return self.run(
            str(self.tools.path("ctr")), f"--address={CONTAINERD_SOCKET}", "--namespace=k8s.io",
            *arguments,
        ).stdout.decode()  # fmt: skip

    def _environment(self, first: Path | None = None) -> dict[str, str]:
        """The node's components' environment; ``first`` (a directory) ahead on PATH."""
        ahead = f"{first}{os.pathsep}" if first is not None else ""
        path = f"{ahead}{self.tools.bin_dir}{os.pathsep}/usr/sbin:/usr/bin:/sbin:/bin"
        return {"PATH": path, "HOME": str(self.state_dir), "LANG": "C.UTF-8"}

    def _launch(self, name: str, argv: Sequence[str], ready: Callable[[], bool],
                timeout: float = START_TIMEOUT,
                path_first: Path | None = None) -> None:  # fmt: skip
        """Start ``argv`` in the node and wait until ``ready``."""
        self._supervisor.start(processes.Spec(
            name=name, argv=self.enter(argv), log=self.logs / f"{name}.log",
            env=self._environment(path_first), ready=ready, ready_timeout=timeout,
        ))  # fmt: skip

    def start(self, cluster: LocalCluster) -> None:
        """containerd with the images, the kubelet, CoreDNS and kube-proxy; returns once
        the node is Ready."""
        from hack.node import configs  # configs imports this module

        started = time.monotonic()
        try:
            files = configs.write_all(self, cluster)
            self._launch("containerd", [str(self.tools.path("containerd")),
                                        f"--config={files.containerd}"],
                         ready=self._containerd_ready, timeout=60)  # fmt: skip
            for image in self.images:
                self.ctr("images", "import", str(image.tar))
                for alias in image.references[1:]:
                    self.ctr("images", "tag", "--force", image.references[0], alias)
            self._kubelet_argv = [str(self.tools.path("kubelet")), *files.kubelet_args]
            self._start_kubelet()
            self._launch("coredns", [str(self.tools.path("coredns")), f"-conf={files.corefile}"],
                         ready=lambda: processes.http_ok(
                             f"http://{NODE_IP}:{DNS_READY_PORT}/ready"))  # fmt: skip
            # kube-proxy finds its node's address on the Node the kubelet registered.
            self._launch("kube-proxy", [str(self.tools.path("kube-proxy")),
                                        f"--config={files.kube_proxy}"],
                         ready=lambda: processes.http_ok(
                             f"http://{NODE_IP}:{PROXY_HEALTH_PORT}/healthz"))  # fmt: skip
            if self.provisioner is not None and files.provisioner_args:
                # It has no health endpoint: a claim made before it lists waits for it.
                self._launch("local-path-provisioner",
                             [str(self.provisioner.binary), *files.provisioner_args],
                             ready=lambda: True)  # fmt: skip
            self._supervisor.wait(f"node {NODE_NAME} Ready", lambda: self._node_ready(cluster),
                                  START_TIMEOUT)  # fmt: skip
        except BaseException:
            self.stop()
            raise
        _progress(f"{NODE_NAME} Ready in {time.monotonic() - started:.1f}s")

    def _start_kubelet(self) -> None:
        self._launch("kubelet", self._kubelet_argv, ready=lambda: processes.http_ok(
            f"http://{NODE_IP}:{KUBELET_HEALTH_PORT}/healthz"))  # fmt: skip

    def restart_kubelet(self, cluster: LocalCluster) -> None:
        """Stop the kubelet as a node's service manager would (SIGTERM; its containers
        run on under containerd), start it again, and return once the node is Ready.

        The TERM goes to the kubelet inside the node: the ``nsenter`` the supervisor
        holds forks it into the node's PID namespace and exits when it does."""
        self.run("pkill", "--exact", "kubelet")
        self._supervisor.stop("kubelet")
        self._start_kubelet()
        self._supervisor.wait(f"node {NODE_NAME} Ready again", lambda: self._node_ready(cluster),
                              START_TIMEOUT)  # fmt: skip

    # -- NetworkPolicy enforcement (optional) ----------------------------------------------

    def enforce_network_policies(self, cluster: LocalCluster, firewall: gobuild.Built) -> float:
        """Start kube-router's firewall (``build.ensure_firewall_built``) in the node: from
        then on the cluster's NetworkPolicies hold for its pods, as iptables chains and
        ipsets in the node's network namespace only. Returns the seconds until it was
        healthy. Off unless asked: a node without it lets every packet through, as a
        cluster without a NetworkPolicy plugin does."""
        from hack.node import configs

        started = time.monotonic()
        self._launch(FIREWALL, [str(firewall.path("kube-router")),
                                *configs.firewall_args(self, cluster)],
                     ready=lambda: processes.http_ok(
                         f"http://{NODE_IP}:{FIREWALL_HEALTH_PORT}/healthz"),
                     timeout=START_TIMEOUT, path_first=firewall.bin_dir)  # fmt: skip
        self._firewall = firewall
        seconds = time.monotonic() - started
        _progress(f"NetworkPolicies enforced (kube-router) after {seconds:.1f}s")
        return seconds

    def stop_enforcing(self) -> None:
        """Stop kube-router and remove what it programmed, so the node lets every packet
        through again; fails naming what is left.

        Its own ``--cleanup-config`` is no use here: in v2.1.0 it cleans up with a
        firewall controller that has no iptables handler (so removes nothing), then
        panics in its service proxy's clean-up, which looks for IPVS (not in this
        kernel). So the filter table is restored without kube-router's chains and the
        rules that lead to them, and its ipsets are destroyed; the node's legacy iptables
        and ipsets are kube-router's alone (kube-proxy programs nftables)."""
        firewall, self._firewall = self._firewall, None
        if firewall is None:
            return
        # The TERM goes to kube-router inside the node, as for the kubelet.
        subprocess.run(self.enter(["pkill", "--exact", FIREWALL]), capture_output=True,
                       env=self._environment())  # fmt: skip
        self._supervisor.stop(FIREWALL)
        environment = self._environment(firewall.bin_dir)

        def node_run(*argv: str, input: str | None = None) -> str:
            return subprocess.run(self.enter(argv), capture_output=True, text=True,
                                  env=environment, input=input, check=True).stdout  # fmt: skip

        kept = [line for line in node_run("iptables-save", "-t", "filter").splitlines()
                if not _firewall_line(line)]  # fmt: skip
        node_run("iptables-restore", input="\n".join(kept) + "\n")
        for name in node_run("ipset", "list", "-n").split():
            if name.startswith(FIREWALL_IPSET_PREFIXES):
                node_run("ipset", "destroy", name)
        left = [line for line in node_run("iptables-save").splitlines() if _firewall_line(line)]
        left += [n for n in node_run("ipset", "list", "-n").split()
                 if n.startswith(FIREWALL_IPSET_PREFIXES)]  # fmt: skip
        if left:
            raise RuntimeError(f"kube-router's rules outlived its clean-up: {left[:10]}")

    def _containerd_ready(self) -> bool:
        """containerd listens on its socket, which it opens once its plugins are loaded.
        The socket is on the node's private ``/run``, reached from here through its
        init's root; a connect costs no process, unlike ``ctr version``."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(f"/proc/{self.init_pid}/root{CONTAINERD_SOCKET}")
            except OSError:
                return False
        return True

    def ready(self, cluster: LocalCluster) -> bool:
        return self._node_ready(cluster)

    @staticmethod
    def _node_ready(cluster: LocalCluster) -> bool:
        result = cluster.kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
        if result.returncode != 0:
            return False
        conditions = json.loads(result.stdout).get("status", {}).get("conditions", [])
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    # -- teardown -------------------------------------------------------------------------

    def stop(self) -> list[str]:
        """Kill the whole node at once (PID 1's death takes every process of its PID
        namespace with it, containers and shims included), then remove its cgroups; what
        was left behind (empty when all went well)."""
        left: list[str] = []
        self._supervisor.stop(HOLDER)
        self._supervisor.stop_all()  # each nsenter exits as its process dies
        if self.init_pid:
            _wait_gone(self.init_pid)
        if self.holder_pid:
            left += cgroups.remove_root(self.cgroup_root)
        self.init_pid = self.holder_pid = 0
        # The veth went with the node's network namespace, its sandbox end with it.
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        return left


def _firewall_line(line: str) -> bool:
    """Whether an ``iptables-save`` line is kube-router's firewall's: one of its chains,
    a rule in one, or a jump to one."""
    return any(prefix in line for prefix in FIREWALL_CHAIN_PREFIXES)


def _wait_gone(pid: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
