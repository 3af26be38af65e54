"""Every way our own kubeconfig reading authenticates, against the real kube-apiserver:
a client certificate (with tls-server-name), a ServiceAccount's bound token (TokenRequest
API) as ``token``, as ``tokenFile`` and printed by a real exec plugin (which may print a
client certificate instead), in-cluster with a token file that the kubelet would rotate,
and impersonation as the API server sees it."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from operator_runtime.runtime.credentials import TOKEN_FILE_RECHECK_SECONDS
from operator_runtime.runtime.errors import TransportError
from operator_runtime.runtime.kubeconfig import ApiServerConfig, load_incluster
from operator_runtime.runtime.transport import UrllibTransport, load_configuration
from tests.waiting import wait_for


def status(config: ApiServerConfig, namespace: str) -> int:
    """What the API server answers to a list of ``namespace``'s ConfigMaps."""
    response = UrllibTransport(config).request(
        "GET", f"/api/v1/namespaces/{namespace}/configmaps", query=[], body=None, headers={},
        timeout=(10, 30),
    )  # fmt: skip
    return response.status


@pytest.fixture
def accounts(local_cluster: LocalCluster, namespace: str) -> dict[str, str]:
    """Bound tokens (TokenRequest API) of a ServiceAccount that may read the namespace
    (``reader``) and of one that may not (``nobody``)."""
    for name in ("reader", "nobody"):
        local_cluster.kubectl("-n", namespace, "create", "serviceaccount", name)
    local_cluster.kubectl("-n", namespace, "create", "rolebinding", "reader-view",
                          "--clusterrole=view", f"--serviceaccount={namespace}:reader")  # fmt: skip
    return {
        name: local_cluster.kubectl(
            "-n", namespace, "create", "token", name, "--duration=1h"
        ).stdout.strip()
        for name in ("reader", "nobody")
    }


def write(cluster: LocalCluster, path: Path, user: dict[str, Any],
          **overrides: Any) -> Path:  # fmt: skip
    cluster.write_kubeconfig(path, "u", user)
    if overrides:
        document = json.loads(path.read_text())
        document["clusters"][0]["cluster"].update(overrides)
        path.write_text(json.dumps(document))
    return path


def test_client_certificate_with_tls_server_name(
    local_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    assert status(load_configuration(str(local_cluster.kubeconfig)), namespace) == 200
    user = {"client-certificate": str(local_cluster.pki.admin_cert),
            "client-key": str(local_cluster.pki.admin_key)}  # fmt: skip
    named = write(local_cluster, tmp_path / "named", user, **{"tls-server-name": "kubernetes"})
    assert status(load_configuration(str(named)), namespace) == 200
    wrong = write(local_cluster, tmp_path / "wrong", user,
                  **{"tls-server-name": "not-the-apiserver.example"})  # fmt: skip
    with pytest.raises(TransportError, match=r"(?i)hostname|certificate"):
        status(load_configuration(str(wrong)), namespace)


def test_service_account_token_as_token_and_token_file(
    local_cluster: LocalCluster, namespace: str, accounts: dict[str, str], tmp_path: Path
) -> None:
    inline = write(local_cluster, tmp_path / "inline", {"token": accounts["reader"]})
    assert status(load_configuration(str(inline)), namespace) == 200
    (tmp_path / "reader.token").write_text(accounts["reader"] + "\n")
    from_file = write(local_cluster, tmp_path / "file", {"tokenFile": "reader.token"})
    assert status(load_configuration(str(from_file)), namespace) == 200
    refused = write(local_cluster, tmp_path / "refused", {"token": accounts["nobody"]})
    assert status(load_configuration(str(refused)), namespace) == 403


PLUGIN = """\
import datetime, json, math, os, sys, time
expires = math.ceil(time.time()) + int(sys.argv[1])
with open(os.environ["RUNS"], "a") as log:
    log.write(json.dumps({"expires": expires,
                          "info": json.loads(os.environ["KUBERNETES_EXEC_INFO"])}) + "\\n")
stamp = datetime.datetime.fromtimestamp(expires, datetime.timezone.utc)
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
    "status": {"token": open(os.environ["TOKEN_FILE"]).read().strip(),
               "expirationTimestamp": stamp.strftime("%Y-%m-%dT%H:%M:%SZ")},
}))
"""


def test_exec_plugin_token_is_cached_until_its_expiry(
    local_cluster: LocalCluster, namespace: str, accounts: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "plugin.py").write_text(textwrap.dedent(PLUGIN))
    (tmp_path / "reader.token").write_text(accounts["reader"])
    runs = tmp_path / "runs.jsonl"
    lifetime = 8
    user = {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
        "args": [str(tmp_path / "bin" / "plugin.py"), str(lifetime)], "interactiveMode": "Never",
        "provideClusterInfo": True,
        "env": [{"name": "RUNS", "value": str(runs)},
                {"name": "TOKEN_FILE", "value": str(tmp_path / "reader.token")}],
    }}  # fmt: skip
    path = write(local_cluster, tmp_path / "exec", user)
    config = load_configuration(str(path))

    def recorded() -> list[dict[str, Any]]:
        return [json.loads(line) for line in runs.read_text().splitlines()]

    first = recorded()
    assert len(first) == 1, "the loader runs the plugin once"
    info = first[0]["info"]
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == local_cluster.server
    assert info["spec"]["cluster"]["certificate-authority-data"]
    transport = UrllibTransport(config)
    for _ in range(3):
        assert transport.request("GET", f"/api/v1/namespaces/{namespace}/configmaps",
                                 query=[], body=None, headers={},
                                 timeout=(10, 30)).status == 200  # fmt: skip
    assert time.time() < first[0]["expires"], f"three requests took over {lifetime} s"
    assert len(recorded()) == 1, "the plugin ran again before its credential expired"
    time.sleep(max(0.0, first[0]["expires"] - time.time()) + 0.2)
    assert status(config, namespace) == 200
    assert len(recorded()) == 2, "the plugin must run again once its credential expired"


def test_in_cluster_token_file_is_read_again_after_rotation(
    local_cluster: LocalCluster, namespace: str, accounts: dict[str, str], tmp_path: Path
) -> None:
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "ca.crt").write_bytes(local_cluster.pki.ca_cert.read_bytes())
    (directory / "token").write_text(accounts["nobody"])
    port = local_cluster.server.rsplit(":", 1)[1]
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
    config = load_incluster(env, str(directory))
    assert config is not None and config.server == f"https://127.0.0.1:{port}"
    assert status(config, namespace) == 403
    rotated = directory / "token.new"
    rotated.write_text(accounts["reader"])
    os.replace(rotated, directory / "token")  # as the kubelet swaps it: a new file
    # Promised: read again within TOKEN_FILE_RECHECK_SECONDS; the rest is a loaded machine.
    wait_for("the rotated token", lambda: status(config, namespace) == 200,
             timeout=TOKEN_FILE_RECHECK_SECONDS + 30, interval=0.2)  # fmt: skip


CERTIFICATE_PLUGIN = """\
import json, sys
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
    "status": {"clientCertificateData": open(sys.argv[1]).read(),
               "clientKeyData": open(sys.argv[2]).read()},
}))
"""


def test_exec_plugin_client_certificate(
    local_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    (tmp_path / "plugin.py").write_text(CERTIFICATE_PLUGIN)
    user = {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
        "args": [str(tmp_path / "plugin.py"), str(local_cluster.pki.admin_cert),
                 str(local_cluster.pki.admin_key)],
    }}  # fmt: skip
    config = load_configuration(str(write(local_cluster, tmp_path / "exec-cert", user)))
    assert config.client_certificate == local_cluster.pki.admin_cert.read_bytes()
    assert status(config, namespace) == 200


def test_impersonation_is_the_identity_the_api_server_sees(
    local_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    user = {"client-certificate": str(local_cluster.pki.admin_cert),
            "client-key": str(local_cluster.pki.admin_key),
            "as": "alice", "as-uid": "uid-42", "as-groups": ["dev", "ops"],
            "as-user-extra": {"example.com/scopes": ["read", "write"]}}  # fmt: skip
    config = load_configuration(str(write(local_cluster, tmp_path / "as", user)))
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    response = UrllibTransport(config).request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", query=[],
        body=json.dumps(review).encode(), headers={"Content-Type": "application/json"},
        timeout=(10, 30),
    )  # fmt: skip
    assert response.status == 201, response.body
    seen = response.json()["status"]["userInfo"]
    assert seen["username"] == "alice"
    assert seen["uid"] == "uid-42"
    assert {"dev", "ops"} <= set(seen["groups"])
    assert seen["extra"] == {"example.com/scopes": ["read", "write"]}
    # And it is alice, not the admin, whom RBAC judges: she may read nothing here.
    assert status(config, namespace) == 403


ROTATING_CERTIFICATE_PLUGIN = """\
import datetime, json, os, sys, time
with open(os.environ["RUNS"], "a") as log:
    log.write("run\\n")
stamp = datetime.datetime.fromtimestamp(time.time() + int(sys.argv[3]), datetime.timezone.utc)
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
    "status": {"clientCertificateData": open(sys.argv[1]).read(),
               "clientKeyData": open(sys.argv[2]).read(),
               "expirationTimestamp": stamp.strftime("%Y-%m-%dT%H:%M:%SZ")},
}))
"""


def review(transport: UrllibTransport) -> str:
    """The user name the API server sees (a SelfSubjectReview)."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    response = transport.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", query=[],
        body=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
        timeout=(10, 30),
    )  # fmt: skip
    assert response.status == 201, response.body
    return str(response.json()["status"]["userInfo"]["username"])


def test_exec_plugin_client_certificate_is_rotated_when_it_expires(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    """Pinniped, Teleport: the plugin prints a short-lived certificate; the next one
    (here another user's, so the server shows which was used) replaces it in TLS."""
    cert, key, runs = tmp_path / "user.crt", tmp_path / "user.key", tmp_path / "runs"
    lifetime = 3

    def issue(user: str) -> None:
        pem, key_pem = local_cluster.pki.issue_pem(user)
        cert.write_bytes(pem)
        key.write_bytes(key_pem)

    issue("first-user")
    (tmp_path / "plugin.py").write_text(ROTATING_CERTIFICATE_PLUGIN)
    user = {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
        "args": [str(tmp_path / "plugin.py"), str(cert), str(key), str(lifetime)],
        "interactiveMode": "Never", "env": [{"name": "RUNS", "value": str(runs)}],
    }}  # fmt: skip
    started = time.time()
    transport = UrllibTransport(load_configuration(str(write(local_cluster, tmp_path / "c", user))))
    assert review(transport) == "first-user"
    assert time.time() < started + lifetime, "the first review took the whole lifetime"
    issue("second-user")
    time.sleep(max(0.0, started + lifetime + 1.2 - time.time()))
    assert review(transport) == "second-user"
    assert review(transport) == "second-user"
    assert len(runs.read_text().splitlines()) == 2, "one run at start, one at the expiry"
