"""Pods that run for real on the node: probes, logs, exec, pod and Service addresses,
cluster DNS, the API server through the ``kubernetes`` Service, a volume of the default
StorageClass, and an image pull that fails inside the sandbox rather than leaving it."""

from __future__ import annotations

import ipaddress
import json
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

from hack.localcluster import LocalCluster
from hack.node import cgroups, configs
from hack.node.node import NODE_IP, NODE_NAME, POD_SUBNET
from tests.node.harness import OPERATOR_IMAGE, real_node
from tests.node.routed import GET_ONCE_ROUTED
from tests.waiting import wait_for

PYTHON = "python3.11"
"""The operator image's interpreter (its only program besides the operator)."""
POD_READY_SECONDS = 120.0
"""From create to Ready on the real node: image already loaded, the container a Python
that binds a port; seconds when idle, the bound for a loaded machine."""

SERVER = textwrap.dedent("""
    import http.server, socket
    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = socket.gethostname().encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
    print("serving on 8000", flush=True)
    http.server.HTTPServer(("", 8000), Answer).serve_forever()
""")
CLIENT = GET_ONCE_ROUTED + textwrap.dedent("""
    import socket, ssl, sys
    service = sys.argv[1]
    print("resolved", socket.gethostbyname(service), flush=True)
    answer, _ = get_once_routed(f"http://{service}:8000/")
    print("answer", answer)
    account = "/var/run/secrets/kubernetes.io/serviceaccount"
    context = ssl.create_default_context(cafile=f"{account}/ca.crt")
    token = open(f"{account}/token").read()
    request = urllib.request.Request("https://kubernetes.default.svc/version",
                                     headers={"Authorization": f"Bearer {token}"})
    print("apiserver", urllib.request.urlopen(request, context=context, timeout=10).status)
""")


def _container(name: str, command: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": OPERATOR_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                      "limits": {"cpu": "500m", "memory": "256Mi"}},
        **extra,
    }  # fmt: skip


def _apply(cluster: LocalCluster, namespace: str, *objects: dict[str, Any]) -> None:
    cluster.kubectl(
        "-n",
        namespace,
        "apply",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
    )


def _pod(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    return cluster.get_json("-n", namespace, "pod", name)


def _ready(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The pod if it is Ready."""
    pod = _pod(cluster, namespace, name)
    conditions = pod.get("status", {}).get("conditions", [])
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    return pod if ready else None


def _finished(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The pod if it has run to its end."""
    pod = _pod(cluster, namespace, name)
    return pod if pod.get("status", {}).get("phase") in ("Succeeded", "Failed") else None


def _server_pod(name: str) -> dict[str, Any]:
    probe_command = [
        PYTHON,
        "-c",
        "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/', timeout=2)",
    ]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [_container(
            "server", [PYTHON, "-c", SERVER],
            ports=[{"containerPort": 8000, "name": "http"}],
            readinessProbe={"httpGet": {"path": "/", "port": 8000}, "periodSeconds": 2},
            livenessProbe={"exec": {"command": probe_command}, "periodSeconds": 5},
        )]},
    }  # fmt: skip


def test_a_pod_runs_ready_by_its_probes_with_logs_exec_and_its_own_address(
    real_cluster: LocalCluster, real_namespace: str
) -> None:
    _apply(real_cluster, real_namespace, _server_pod("server"))
    pod = wait_for(
        "the server pod to be Ready by its HTTP readiness probe",
        lambda: _ready(real_cluster, real_namespace, "server"),
        timeout=POD_READY_SECONDS, interval=0.5,
        explain=lambda: _pod(real_cluster, real_namespace, "server").get("status"),
    )  # fmt: skip
    assert pod["spec"]["nodeName"] == NODE_NAME
    assert pod["status"]["hostIP"] == NODE_IP
    pod_ip = pod["status"]["podIP"]
    assert ipaddress.ip_address(pod_ip) in ipaddress.ip_network(POD_SUBNET)
    (status,) = pod["status"]["containerStatuses"]
    assert status["restartCount"] == 0 and status["containerID"].startswith("containerd://")

    # The pod's own address, dialled from the sandbox (the test's side of the veth).
    with urllib.request.urlopen(f"http://{pod_ip}:8000/", timeout=10) as answer:
        assert answer.read().decode() == "server"
    # Logs and exec go API server -> kubelet -> containerd's stream server.
    logs = real_cluster.kubectl("-n", real_namespace, "logs", "server").stdout
    assert "serving on 8000" in logs
    whoami = real_cluster.kubectl(
        "-n", real_namespace, "exec", "server", "--",
        PYTHON, "-c", "import os, socket; print(socket.gethostname(), os.getuid())",
    ).stdout.split()  # fmt: skip
    assert whoami == ["server", "65532"]  # the image's numeric non-root user


def test_the_nodes_pods_weigh_as_several_processes_beside_the_machines(
    real_cluster: LocalCluster,
) -> None:
    """The node's cgroup root, where the kubelet puts every pod, competes for the CPU with
    the machine's top-level processes with ``NODE_CPU_WEIGHT`` processes' weight, not
    the one process' weight a new cgroup gets (hack/node/cgroups.py)."""
    root = real_node(real_cluster).cgroup_root
    weights = {
        setting: int((hierarchy / root / setting).read_text())
        for hierarchy in cgroups.hierarchies()
        for setting in ("cpu.shares", "cpu.weight")
        if (hierarchy / root / setting).is_file()
    }
    assert weights, f"no CPU controller weighs {root} here: {cgroups.hierarchies()}"
    expected = {"cpu.shares": 1024, "cpu.weight": 100}
    assert weights == {k: cgroups.NODE_CPU_WEIGHT * expected[k] for k in weights}, weights


def test_a_service_answers_by_its_dns_name_through_kube_proxy(
    real_cluster: LocalCluster, real_namespace: str
) -> None:
    service = {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "echo"},
        "spec": {"selector": {"app": "echo"}, "ports": [{"port": 8000, "targetPort": 8000}]},
    }  # fmt: skip
    _apply(real_cluster, real_namespace, _server_pod("echo"), service)
    wait_for("the echo pod to be Ready", lambda: _ready(real_cluster, real_namespace, "echo"),
             timeout=POD_READY_SECONDS, interval=0.5)  # fmt: skip
    fqdn = f"echo.{real_namespace}.svc.cluster.local"
    client = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
        "spec": {"restartPolicy": "Never",
                 "containers": [_container("client", [PYTHON, "-c", CLIENT, fqdn])]},
    }  # fmt: skip
    _apply(real_cluster, real_namespace, client)
    phase = wait_for(
        "the client pod to finish",
        lambda: _finished(real_cluster, real_namespace, "client"),
        timeout=POD_READY_SECONDS, interval=0.5,
    )["status"]["phase"]  # fmt: skip
    logs = real_cluster.kubectl("-n", real_namespace, "logs", "client").stdout
    assert phase == "Succeeded", logs
    cluster_ip = real_cluster.get_json("-n", real_namespace, "service", "echo")["spec"]["clusterIP"]
    assert f"resolved {cluster_ip}" in logs  # CoreDNS answered with the ClusterIP
    assert "answer echo" in logs  # kube-proxy led the ClusterIP to the pod
    assert "apiserver 200" in logs  # the kubernetes Service, with the pod's own token


def test_a_pull_fails_inside_the_sandbox(real_cluster: LocalCluster, real_namespace: str) -> None:
    """An image the node does not have, with ``imagePullPolicy: Always``: the pull must
    fail on this machine (no name server answers in the sandbox), not go out."""
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unpullable"},
        "spec": {"containers": [{"name": "c", "image": "docker.io/library/busybox:1.37",
                                 "imagePullPolicy": "Always"}]},
    }  # fmt: skip
    _apply(real_cluster, real_namespace, pod)

    def waiting() -> dict[str, Any] | None:
        statuses = _pod(real_cluster, real_namespace, "unpullable")["status"].get(
            "containerStatuses", []
        )
        state = statuses[0]["state"].get("waiting", {}) if statuses else {}
        return state if state.get("reason") in ("ErrImagePull", "ImagePullBackOff") else None

    state = wait_for("the pull to fail", waiting, timeout=POD_READY_SECONDS, interval=0.5)
    events = real_cluster.kubectl("-n", real_namespace, "get", "events", "-o", "json").stdout
    message = state.get("message", "") + events
    assert "registry-1.docker.io" in message or "docker.io" in message
    assert "lookup" in message or "dial" in message or "resolve" in message, message


def test_a_claim_of_no_class_gets_a_node_volume_a_non_root_pod_writes_and_it_goes_with_it(
    real_cluster: LocalCluster, real_namespace: str
) -> None:
    """The node's default StorageClass (kind's local-path provisioner): a claim that names
    no class is bound once a pod uses it, the image's non-root user writes it, and
    deleting the claim removes the volume and its directory (reclaim ``Delete``)."""
    node = real_node(real_cluster)
    claim = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}},
    }  # fmt: skip
    writer = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "writer"},
        "spec": {"restartPolicy": "Never",
                 "containers": [_container("writer", [
                     PYTHON, "-c", "import os; open('/data/hello', 'w').write(str(os.getuid()))",
                 ], volumeMounts=[{"name": "data", "mountPath": "/data"}])],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]},
    }  # fmt: skip
    _apply(real_cluster, real_namespace, claim, writer)
    phase = wait_for(
        "the writer pod to finish",
        lambda: _finished(real_cluster, real_namespace, "writer"),
        timeout=POD_READY_SECONDS, interval=0.5,
        explain=lambda: (_pod(real_cluster, real_namespace, "writer").get("status"),
                         real_cluster.kubectl("-n", real_namespace, "get", "events").stdout),
    )["status"]["phase"]  # fmt: skip
    assert phase == "Succeeded", real_cluster.kubectl("-n", real_namespace, "logs", "writer").stdout
    bound = real_cluster.get_json("-n", real_namespace, "pvc", "data")
    assert bound["spec"]["storageClassName"] == configs.STORAGE_CLASS
    volume = real_cluster.get_json("pv", bound["spec"]["volumeName"])
    directory = Path(volume["spec"]["hostPath"]["path"])
    assert directory.parent == configs.volumes_dir(node)
    assert (directory / "hello").read_text() == "65532"  # written as the image's user

    real_cluster.kubectl("-n", real_namespace, "delete", "pod", "writer", "--wait=true")
    real_cluster.kubectl("-n", real_namespace, "delete", "pvc", "data", "--wait=true")
    wait_for(
        "the volume and its directory to go with the claim",
        lambda: not directory.exists()
        and not real_cluster.kubectl("get", "pv", volume["metadata"]["name"],
                                     "--ignore-not-found", "-o", "name").stdout.strip(),
        timeout=POD_READY_SECONDS, interval=0.5,
    )  # fmt: skip
