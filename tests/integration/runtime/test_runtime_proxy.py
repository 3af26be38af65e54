"""``HTTPS_PROXY`` carries the operator's traffic, as it does kubectl's: the kubeconfig
names the API server ``kubernetes`` (in its certificate, not resolvable here), and only
the CONNECT proxy on loopback, which resolves it, can reach it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_port
from operator_runtime.runtime.errors import TransportError
from operator_runtime.runtime.transport import UrllibTransport, load_configuration
from tests.connectproxy import connect_proxy
from tests.integration.runtime.conftest import REPO_ROOT, scrape
from tests.waiting import wait_for


def proxied_kubeconfig(cluster: LocalCluster, path: Path) -> tuple[Path, str]:
    port = cluster.server.rsplit(":", 1)[1]
    cluster.write_kubeconfig(path, "admin", {"client-certificate": str(cluster.pki.admin_cert),
                                             "client-key": str(cluster.pki.admin_key)})  # fmt: skip
    document = json.loads(path.read_text())
    document["clusters"][0]["cluster"]["server"] = f"https://kubernetes:{port}"
    path.write_text(json.dumps(document))
    return path, f"kubernetes:{port}"


def version(transport: UrllibTransport) -> int:
    return transport.request("GET", "/version", query=[], body=None, headers={},
                             timeout=(5, 10)).status  # fmt: skip


def test_https_proxy_and_no_proxy_from_the_environment(
    local_cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, target = proxied_kubeconfig(local_cluster, tmp_path / "config")
    with connect_proxy({"kubernetes": "127.0.0.1"}) as (proxy, targets):
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        assert version(UrllibTransport(load_configuration(str(path)))) == 200
        assert targets == [target]
        monkeypatch.setenv("NO_PROXY", "example.com,kubernetes")
        with pytest.raises(TransportError):  # direct: the name does not resolve here
            version(UrllibTransport(load_configuration(str(path))))
        assert targets == [target]


def test_the_operator_reaches_the_api_server_through_the_proxy(
    local_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    path, target = proxied_kubeconfig(local_cluster, tmp_path / "config")
    health = free_port()
    with connect_proxy({"kubernetes": "127.0.0.1"}) as (proxy, targets):
        env = {**local_cluster.env, "PYTHONPATH": str(REPO_ROOT), "HTTPS_PROXY": proxy}
        env.pop("NO_PROXY", None)
        env.pop("no_proxy", None)
        with (tmp_path / "operator.log").open("w") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "operator_runtime", f"--kubeconfig={path}",
                 "--controller-plugin=tests.integration.runtime.copier:register",
                 "--controllers=copier", f"--watch-namespace={namespace}",
                 f"--metrics-addr=127.0.0.1:{free_port()}",
                 f"--health-probe-bind-address=127.0.0.1:{health}"],
                cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
            try:
                wait_for("the operator's caches sync through the proxy",
                         lambda: _ready(process, health, tmp_path), 60)  # fmt: skip
                assert target in targets
            finally:
                process.send_signal(signal.SIGTERM)
                code = process.wait(30)
    assert code == 0, (tmp_path / "operator.log").read_text()[-2000:]


def _ready(process: subprocess.Popen[str], port: int, tmp_path: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError((tmp_path / "operator.log").read_text()[-2000:])
    try:
        return scrape(port, "/readyz")[0] == 200
    except OSError:  # not listening yet
        return False
