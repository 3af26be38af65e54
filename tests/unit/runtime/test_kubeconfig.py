"""Our kubeconfig and in-cluster reading: the fields, the errors, and which kubeconfigs
still go to the ``kubernetes`` package. Against the real API server:
tests/integration/runtime/test_runtime_credentials.py."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import pki
from operator_runtime.runtime.credentials import (
    CredentialError,
    ExecPlugin,
    StaticToken,
    TokenFile,
    parse_exec_credential,
    run_exec_plugin,
)
from operator_runtime.runtime.kubeconfig import (
    MAX_KUBECONFIG_BYTES,
    KubeconfigError,
    SelectedContext,
    load_configuration,
    load_incluster,
    load_kubeconfig,
    select_context,
    unsupported_reason,
)

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> pki.Pki:
    return pki.create(tmp_path_factory.mktemp("pki"))


def kubeconfig(path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
    }))  # fmt: skip
    return path


def selected(cluster: dict[str, Any], user: dict[str, Any]) -> SelectedContext:
    return SelectedContext("kubeconfig x (context 'c')", "c", "k", cluster, "u", user)


SERVER = {"server": "https://127.0.0.1:6443"}


@pytest.mark.parametrize(("user", "message"), [
    ({"auth-provider": {"name": "oidc"}},
     "user 'u' auth-provider: auth-provider plugins were removed from client-go"),
    ({"username": "a", "password": "b"},
     "user 'u' password: basic authentication was removed from the API server"),
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}},
     "user 'u' exec apiVersion 'client.authentication.k8s.io/v1alpha1': not supported"),
])  # fmt: skip
def test_what_we_do_not_support_is_refused_naming_the_key_and_the_fix(
    tmp_path: Path, user: dict[str, Any], message: str
) -> None:
    path = kubeconfig(tmp_path / "config", SERVER, user)
    with pytest.raises(KubeconfigError) as refused:
        load_kubeconfig(str(path))
    assert f"kubeconfig {path} (context 'c'): {message}" in str(refused.value)
    assert "use " in str(refused.value)


def test_keys_we_do_not_know_are_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = kubeconfig(tmp_path / "config", {**SERVER, "somethingNew": 1},
                      {"token": "t", "alsoNew": 2})  # fmt: skip
    assert load_kubeconfig(str(path)).credentials.authorization() == "Bearer t"
    assert "cluster keys somethingNew are not read" in caplog.text
    assert "user keys alsoNew are not read" in caplog.text


@pytest.mark.parametrize("user", [
    {}, {"token": "t"}, {"tokenFile": "t"}, {"client-certificate": "c", "client-key": "k"},
    {"client-certificate-data": "Yw==", "client-key-data": "aw=="},
    {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "x", "args": [],
              "env": [], "provideClusterInfo": True, "interactiveMode": "Never"}},
    {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "x"}},
])  # fmt: skip
def test_what_an_operator_meets_is_read_by_us(user: dict[str, Any]) -> None:
    cluster = {**SERVER, "certificate-authority-data": "x", "insecure-skip-tls-verify": False,
               "tls-server-name": "n", "extensions": []}  # fmt: skip
    assert unsupported_reason(selected(cluster, user)) is None


@pytest.mark.parametrize(("document", "message"), [
    ([], "not a mapping"),
    ({"contexts": []}, "no current-context"),
    ({"current-context": "c", "contexts": []}, "current-context 'c' is not among contexts"),
    ({"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k"}}]},
     "(context 'c'): cluster 'k' is not among clusters"),
    ({"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k",
                                                                     "user": "u"}}],
      "clusters": [{"name": "k", "cluster": SERVER}]},
     "(context 'c'): user 'u' is not among users"),
])  # fmt: skip
def test_shape_errors_name_the_file_and_context(document: Any, message: str) -> None:
    with pytest.raises(KubeconfigError, match=r"^kubeconfig /k") as raised:
        select_context(document, "kubeconfig /k")
    assert message in str(raised.value)


def test_relative_paths_resolve_against_the_kubeconfig_directory(
    tmp_path: Path, tls: pki.Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "ca.pem").write_bytes(tls.ca_cert.read_bytes())
    (tmp_path / "d" / "token").write_text("file-token\n")
    path = kubeconfig(tmp_path / "d" / "config", {**SERVER, "certificate-authority": "ca.pem"},
                      {"tokenFile": "token"})  # fmt: skip
    monkeypatch.chdir(tmp_path)  # not the kubeconfig's directory
    config = load_kubeconfig(str(path))
    assert config.ca_pem == tls.ca_cert.read_text()
    assert config.credentials.authorization() == "Bearer file-token"
    assert isinstance(config.credentials, TokenFile)


def test_data_wins_over_files_and_token_over_token_file(tmp_path: Path, tls: pki.Pki) -> None:
    ca = base64.b64encode(tls.ca_cert.read_bytes()).decode()
    cert = base64.b64encode(tls.admin_cert.read_bytes()).decode()
    key = base64.b64encode(tls.admin_key.read_bytes()).decode()
    path = kubeconfig(tmp_path / "config", {
        **SERVER, "certificate-authority": "missing", "certificate-authority-data": ca,
        "tls-server-name": "kubernetes",
    }, {"client-certificate": "missing", "client-certificate-data": cert,
        "client-key-data": key, "token": "t", "tokenFile": "missing"})  # fmt: skip
    config = load_kubeconfig(str(path))
    assert config.client_certificate == tls.admin_cert.read_bytes()
    assert config.tls_server_name == "kubernetes"
    assert config.credentials == StaticToken("t")
    config.ssl_context()  # the pair loads


@pytest.mark.parametrize(("cluster", "user", "message"), [
    ({"server": "127.0.0.1:6443"}, {}, "cluster 'k' server: not an http(s) URL"),
    ({**SERVER, "certificate-authority": "nope.pem"}, {},
     "cluster 'k' certificate-authority: cannot read"),
    ({**SERVER, "certificate-authority-data": "%%%"}, {},
     "cluster 'k' certificate-authority-data: not base64"),
    ({**SERVER, "insecure-skip-tls-verify": "yes"}, {},
     "cluster 'k' insecure-skip-tls-verify: not true or false"),
    (SERVER, {"token": 5}, "user 'u' token: not a string"),
    (SERVER, {"tokenFile": "nope"}, "nope: No such file"),
    (SERVER, {"exec": {"apiVersion": "client.authentication.k8s.io/v1"}},
     "user 'u' exec: no command"),
    (SERVER, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "x",
                       "interactiveMode": "Always"}}, "Always needs a terminal"),
    (SERVER, {"client-certificate-data": base64.b64encode(b"junk").decode()},
     "client certificate and key"),
])  # fmt: skip
def test_field_errors_name_the_kubeconfig_context_and_field(
    tmp_path: Path, cluster: dict[str, Any], user: dict[str, Any], message: str
) -> None:
    path = kubeconfig(tmp_path / "config", cluster, user)
    with pytest.raises(KubeconfigError) as raised:
        load_kubeconfig(str(path))
    assert str(raised.value).startswith(f"kubeconfig {path}")
    assert message in str(raised.value)


def test_an_oversized_kubeconfig_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_bytes(b"#" * (MAX_KUBECONFIG_BYTES + 1))
    with pytest.raises(KubeconfigError, match="larger than"):
        load_kubeconfig(str(path))


def test_in_cluster_needs_the_environment_and_a_token(tmp_path: Path, tls: pki.Pki) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    assert load_incluster(env, str(tmp_path)) is None  # no token file
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_bytes(tls.ca_cert.read_bytes())
    assert load_incluster({}, str(tmp_path)) is None
    config = load_incluster(env, str(tmp_path))
    assert config is not None and config.server == "https://[fd00::1]:443"
    assert config.credentials.authorization() == "Bearer sa-token"
    (tmp_path / "ca.crt").write_text("")
    with pytest.raises(KubeconfigError, match=r"ca\.crt: empty"):
        load_incluster(env, str(tmp_path))
    (tmp_path / "ca.crt").unlink()
    with pytest.raises(KubeconfigError, match=r"ca\.crt"):
        load_incluster(env, str(tmp_path))


def test_a_token_file_is_read_again_once_it_changed(tmp_path: Path) -> None:
    now = [0.0]
    path = tmp_path / "token"
    path.write_text("one")
    source = TokenFile(str(path), "token", recheck=1.0, clock=lambda: now[0])
    replacement = tmp_path / "new"
    replacement.write_text("two")
    os.replace(replacement, path)  # the kubelet's swap: a new inode
    assert source.authorization() == "Bearer one"  # trusted for a second
    now[0] = 1.0
    assert source.authorization() == "Bearer two"
    path.unlink()
    now[0] = 5.0
    assert source.authorization() == "Bearer two"  # gone for a moment: the last token


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "plugin.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def plugin(command: str, *args: str) -> ExecPlugin:
    return ExecPlugin("client.authentication.k8s.io/v1", command, args, (("X", "y"),),
                      "{}", "kubeconfig k (context 'c'): user 'u' exec")  # fmt: skip


def test_exec_plugin_runs_are_bounded(tmp_path: Path) -> None:
    loud = script(tmp_path, "import sys\nsys.stdout.write('x' * 5000)\n")
    with pytest.raises(CredentialError, match="printed more than 1000 bytes"):
        run_exec_plugin(plugin(sys.executable, loud), limit=1000)
    slow = script(tmp_path, "import time\ntime.sleep(30)\n")
    with pytest.raises(CredentialError, match=r"did not finish within 0\.5 s"):
        run_exec_plugin(plugin(sys.executable, slow), timeout=0.5)
    failing = script(tmp_path, "import sys\nsys.stderr.write('no login')\nsys.exit(3)\n")
    with pytest.raises(CredentialError, match="exited 3: no login"):
        run_exec_plugin(plugin(sys.executable, failing))
    with pytest.raises(CredentialError, match="No such file"):
        run_exec_plugin(plugin(str(tmp_path / "absent")))


@pytest.mark.parametrize(("output", "message"), [
    (b"nope", "not JSON"),
    (b'{"kind": "Other"}', "not an ExecCredential"),
    (b'{"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1beta1"}',
     "returned apiVersion"),
    (b'{"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1",'
     b' "status": {}}', "neither token nor clientCertificateData"),
    (b'{"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1",'
     b' "status": {"clientCertificateData": "c"}}', "without the other"),
    (b'{"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1",'
     b' "status": {"token": "t", "expirationTimestamp": "soon"}}', "not RFC 3339"),
])  # fmt: skip
def test_exec_output_is_checked(output: bytes, message: str) -> None:
    with pytest.raises(CredentialError, match=message):
        parse_exec_credential(output, "client.authentication.k8s.io/v1", "u")


def test_token_and_certificate_kubeconfigs_never_import_kubernetes(
    tmp_path: Path, tls: pki.Pki
) -> None:
    """The point of the module: ~44 MiB saved for the usual kubeconfigs, and in-cluster."""
    token = kubeconfig(tmp_path / "token", {**SERVER, "certificate-authority": str(
        tls.ca_cert)}, {"token": "t"})  # fmt: skip
    cert = kubeconfig(tmp_path / "cert", {**SERVER, "certificate-authority": str(
        tls.ca_cert)}, {"client-certificate": str(tls.admin_cert),
                        "client-key": str(tls.admin_key)})  # fmt: skip
    (tmp_path / "sa").mkdir()
    (tmp_path / "sa" / "token").write_text("t")
    (tmp_path / "sa" / "ca.crt").write_bytes(tls.ca_cert.read_bytes())
    code = (
        "import sys\n"
        "from operator_runtime.runtime.kubeconfig import load_configuration, load_incluster\n"
        "from operator_runtime.runtime.transport import UrllibTransport\n"
        f"UrllibTransport(load_configuration({str(token)!r}))\n"
        f"UrllibTransport(load_configuration({str(cert)!r}))\n"
        "env = {'KUBERNETES_SERVICE_HOST': 'h', 'KUBERNETES_SERVICE_PORT': '1'}\n"
        f"UrllibTransport(load_incluster(env, {str(tmp_path / 'sa')!r}))\n"
        "import operator_runtime.cli\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_several_kubeconfig_paths_are_refused_saying_what_to_do(
    tmp_path: Path, tls: pki.Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = kubeconfig(tmp_path / "a", {**SERVER, "certificate-authority": str(tls.ca_cert)},
                       {"token": "from-a"})  # fmt: skip
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", f"{first}{os.pathsep}{tmp_path / 'absent'}")
    with pytest.raises(KubeconfigError, match=r"\$KUBECONFIG names 2 files.*--kubeconfig"):
        load_configuration(None)


def test_a_missing_exec_command_shows_the_install_hint(tmp_path: Path) -> None:
    hint = "gke-gcloud-auth-plugin is needed:\n  gcloud components install gke-gcloud-auth-plugin"
    path = kubeconfig(tmp_path / "config", SERVER, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "no-such-auth-plugin-on-this-path", "installHint": hint,
    }})  # fmt: skip
    with pytest.raises(KubeconfigError) as refused:
        load_kubeconfig(str(path))
    message = str(refused.value)
    assert "exec command 'no-such-auth-plugin-on-this-path'" in message
    assert message.endswith(
        "gke-gcloud-auth-plugin is needed: gcloud components install gke-gcloud-auth-plugin"
    )


def test_kubeconfig_in_the_environment_wins_over_in_cluster(
    tmp_path: Path, tls: pki.Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """controller-runtime's GetConfig: $KUBECONFIG before the service account."""
    import operator_runtime.runtime.kubeconfig as module

    directory = tmp_path / "sa"
    directory.mkdir()
    (directory / "token").write_text("in-cluster")
    (directory / "ca.crt").write_bytes(tls.ca_cert.read_bytes())
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    monkeypatch.setattr(module, "load_incluster", lambda: load_incluster(env, str(directory)))
    path = kubeconfig(tmp_path / "config", {**SERVER, "certificate-authority": str(tls.ca_cert)},
                      {"token": "from-kubeconfig"})  # fmt: skip
    monkeypatch.setenv("KUBECONFIG", str(path))
    assert load_configuration(None).credentials.authorization() == "Bearer from-kubeconfig"
    monkeypatch.delenv("KUBECONFIG")
    in_cluster = load_configuration(None)
    assert in_cluster.source == "in-cluster"
    assert in_cluster.credentials.authorization() == "Bearer in-cluster"


def test_a_proxy_url_is_read_and_socks_is_refused_naming_the_key(tmp_path: Path) -> None:
    http = kubeconfig(tmp_path / "http", {**SERVER, "proxy-url": "http://p:3128"}, {})
    assert load_kubeconfig(str(http)).proxy == "http://p:3128"
    socks = kubeconfig(tmp_path / "socks", {**SERVER, "proxy-url": "socks5://p:1080"}, {})
    with pytest.raises(KubeconfigError, match=r"cluster 'k' proxy-url: 'socks5' proxies"):
        load_kubeconfig(str(socks))
