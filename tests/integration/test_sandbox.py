"""The sandbox (``hack/sandbox``) makes kwok's addresses lead to this machine and nothing
else reachable, and the cluster tiers refuse to run outside it.

These run inside the sandbox like every cluster tier; the checks of the routing table
read it and never dial out.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hack import sandbox
from hack.localcluster import LocalCluster
from hack.localcluster.cluster import NODE_IP, POD_CIDR, SERVICE_CLUSTER_IP_RANGE
from hack.node import cgroups
from hack.node import node as real_node
from hack.processes import pid_alive
from hack.sandbox.namespace import unshare_command

REPO_ROOT = Path(__file__).resolve().parents[2]
OUTSIDE_ADDRESS = "192.0.2.1"
"""TEST-NET-1 (RFC 5737): never routed anywhere, so even a mistaken dial would be harmless."""


class _Answer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"answered {self.path} on {self.server.server_address}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[int]:
    """An HTTP server of this test process bound to all addresses; yields its port."""
    server = ThreadingHTTPServer(("0.0.0.0", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _apply(cluster: LocalCluster, namespace: str, manifest: dict[str, Any]) -> None:
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=json.dumps(manifest))


def _ready_pod_ip(cluster: LocalCluster, namespace: str, labels: dict[str, str]) -> str:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "answerer", "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "answerer"}]},
    }
    _apply(cluster, namespace, pod)
    cluster.kubectl("-n", namespace, "wait", "--for=condition=Ready", "pod/answerer",
                    "--timeout=60s")  # fmt: skip
    address: str = cluster.get_json("-n", namespace, "pod", "answerer")["status"]["podIP"]
    return address


def test_a_kwok_pod_ip_and_the_service_proxy_reach_a_listener_of_this_machine(
    local_cluster: LocalCluster, namespace: str, listener: int
) -> None:
    labels = {"app": "answerer"}
    pod_ip = _ready_pod_ip(local_cluster, namespace, labels)
    assert pod_ip.startswith("10.244."), pod_ip

    with socket.create_connection((pod_ip, listener), timeout=5) as connection:
        connection.sendall(f"GET /direct HTTP/1.0\r\nHost: {pod_ip}\r\n\r\n".encode())
        reply = connection.makefile("rb").read().decode()
    assert reply.startswith("HTTP/1.0 200"), reply
    assert f"answered /direct on ('0.0.0.0', {listener})" in reply

    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "answerer"},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": listener}]},
    }
    _apply(local_cluster, namespace, service)
    proxy_path = f"/api/v1/namespaces/{namespace}/services/answerer:80/proxy/through-apiserver"
    deadline = time.monotonic() + 60
    while True:
        # The EndpointSlice controller publishes the pod's address shortly after.
        result = local_cluster.kubectl("get", "--raw", proxy_path, check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"answered /through-apiserver on ('0.0.0.0', {listener})"


def test_the_private_hosts_file_resolves_inside_and_leaves_the_machines_alone() -> None:
    name = f"probe-{uuid.uuid4().hex[:8]}-head-svc.sandbox-test.svc.cluster.local"
    with pytest.raises(socket.gaierror):
        socket.gethostbyname(name)
    sandbox.add_host(name, "127.0.0.1")
    try:
        assert socket.gethostbyname(name) == "127.0.0.1"
        assert name in Path("/etc/hosts").read_text()
        machine_hosts = sandbox.machine_hosts_file()
        assert machine_hosts.read_text().strip(), "the machine's hosts file view is empty"
        assert name not in machine_hosts.read_text()
        with pytest.raises(OSError):
            machine_hosts.write_text("not even root may change the machine's file\n")
    finally:
        sandbox.remove_host(name)
    with pytest.raises(socket.gaierror):
        socket.gethostbyname(name)


def _route(address: str) -> subprocess.CompletedProcess[str]:
    # `ip route get` asks the kernel which way a packet would go; it sends nothing.
    return subprocess.run(["ip", "route", "get", address], capture_output=True, text=True)


def _destination(hex_address: str) -> str:
    return socket.inet_ntoa(bytes.fromhex(hex_address)[::-1])


def test_kwok_ranges_are_local_and_nothing_else_is_routed() -> None:
    # The only routes of the main table are a real node's, when the node tier runs one in
    # this sandbox meanwhile: its veth's /30 and its pods' range, through that veth.
    main_table = [line.split() for line in Path("/proc/net/route").read_text().splitlines()[1:]]
    routed = {(f[0], _destination(f[1])) for f in main_table if f}
    link = ipaddress.ip_network(f"{real_node.LINK_IP}/{real_node.LINK_PREFIX}", strict=False)
    node_routes = {str(link.network_address), real_node.POD_RANGE.split("/")[0]}
    assert routed <= {(real_node.SANDBOX_LINK, route) for route in node_routes}, routed
    for network in (POD_CIDR, SERVICE_CLUSTER_IP_RANGE):
        first_host = network.split("/")[0].rsplit(".", 1)[0] + ".7"
        assert _route(first_host).stdout.startswith(f"local {first_host} dev lo"), network
    assert _route(NODE_IP).stdout.startswith(f"local {NODE_IP} dev lo")
    outside = _route(OUTSIDE_ADDRESS)
    assert outside.returncode != 0
    assert "Network is unreachable" in outside.stderr


def _child_pytest(env: dict[str, str], *prefix: str) -> subprocess.CompletedProcess[str]:
    routing_test = test_kwok_ranges_are_local_and_nothing_else_is_routed.__name__
    target = f"{Path(__file__).relative_to(REPO_ROOT)}::{routing_test}"
    return subprocess.run(
        [*prefix, sys.executable, "-m", "pytest", target, "-p", "no:cacheprovider", "-q"],
        capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=120,
    )  # fmt: skip


def _assert_refused(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 4, result.stdout + result.stderr
    assert "the integration tiers run only inside the sandbox: use `make test`" in result.stdout
    assert " passed" not in result.stdout and " failed" not in result.stdout


def test_pytest_refuses_the_cluster_tiers_outside_the_sandbox() -> None:
    outside_env = {
        key: value
        for key, value in os.environ.items()
        if key not in (sandbox.NETNS_ENV, sandbox.DIR_ENV)
    }
    _assert_refused(_child_pytest(outside_env))
    # Inheriting the marker is not enough: in another network namespace (here a fresh one
    # without our routes) the guard sees that the marker names a different namespace.
    _assert_refused(_child_pytest(dict(os.environ), *unshare_command(), "--"))


def test_a_process_the_command_left_running_is_killed_when_the_sandbox_ends(
    tmp_path: Path,
) -> None:
    """A process the command started and left behind, in a session of its own as a Ray
    head's agents are, does not outlive the sandbox: the sandbox has no PID namespace,
    and a pytest ended by SIGTERM runs no teardown."""
    pid_file = tmp_path / "pid"
    leave_one = (
        f"setsid sh -c 'echo $$ > {pid_file}.part && mv {pid_file}.part {pid_file} && "
        f"exec sleep 600' > /dev/null 2>&1 & "
        f"while [ ! -s {pid_file} ]; do sleep 0.05; done"
    )
    # Without the marker of this sandbox, hack.sandbox makes one of its own, nested.
    env = {k: v for k, v in os.environ.items() if k != sandbox.NETNS_ENV}
    result = subprocess.run(
        [sys.executable, "-m", "hack.sandbox", "--", "sh", "-c", leave_one],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
        env={**env, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    pid = int(pid_file.read_text())
    try:
        assert result.returncode == 0, result.stderr
        assert (
            f"killed 1 process(es) its command left running: sleep (pid {pid}, up " in result.stderr
        ), result.stderr
        assert "s: sleep 600)" in result.stderr, result.stderr
        deadline = time.monotonic() + 30
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(pid), f"the left-behind sleep {pid} still runs"
    finally:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_cpu_account_its_command_left_is_removed_when_the_sandbox_ends() -> None:
    """A test run killed before its teardown leaves its CPU account (``tests/cputime.py``),
    a cgroup and so the machine's: the sandbox's exit removes it, though it is nested in
    this test's own account (the sandbox's command is born in its parent's cgroup)."""
    hierarchy = cgroups.cpu_hierarchy()
    assert hierarchy is not None, "no cgroup hierarchy counts CPU on this machine"
    leave_one = (
        "import os; from hack.node import cgroups; "
        "print(cgroups.open_account(os.getpid()).group, flush=True); os._exit(0)"
    )
    env = {k: v for k, v in os.environ.items() if k != sandbox.NETNS_ENV}
    result = subprocess.run(
        [sys.executable, "-m", "hack.sandbox", "--", sys.executable, "-c", leave_one],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
        env={**env, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    left = Path(result.stdout.strip())
    assert left.name.startswith(cgroups.ACCOUNT_PREFIX), result.stdout
    assert left.is_relative_to(hierarchy), left
    assert not left.exists()


def test_orphans_are_the_top_level_cgroups_whose_holder_is_dead() -> None:
    """``cgroups.orphans()``, what a leak check compares: a live holder's cgroup (another
    run's worker, beside this one) is not an orphan, a dead one's is."""
    hierarchy = cgroups.cpu_hierarchy()
    assert hierarchy is not None, "no cgroup hierarchy counts CPU on this machine"
    with subprocess.Popen(["sleep", "60"]) as live, subprocess.Popen(["true"]) as dead:
        dead.wait()
        made = [hierarchy / f"{cgroups.ACCOUNT_PREFIX}{p.pid}" for p in (live, dead)]
        try:
            for group in made:
                group.mkdir()
            orphans = cgroups.orphans()
            assert made[1] in orphans and made[0] not in orphans
            assert set(made) <= set(cgroups.leftovers())
        finally:
            live.kill()
            for group in filter(Path.is_dir, made):
                group.rmdir()
