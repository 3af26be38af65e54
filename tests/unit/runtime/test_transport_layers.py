"""The transport's layers below the API: every failure there is a ``TransportError``
saying whether the request may have been sent. Against the real API server:
tests/integration/runtime/test_runtime_credential_failure.py."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from operator_runtime.runtime.credentials import (
    Credential,
    CredentialError,
    ExecCredential,
    ExecCredentials,
    ExecPlugin,
    StaticToken,
)
from operator_runtime.runtime.errors import TransportError
from operator_runtime.runtime.impersonation import ImpersonationError, read_impersonation
from operator_runtime.runtime.kubeconfig import ApiServerConfig, load_kubeconfig
from operator_runtime.runtime.transport import UrllibTransport


class FailingPlugin:
    """An exec plugin whose session expired."""

    def __init__(self) -> None:
        self.runs = 0

    def current(self) -> Credential:
        self.runs += 1
        raise CredentialError("user 'u' exec: exited 1: the SSO session has expired")

    def authorization(self) -> str | None:
        return self.current().authorization

    def rejected(self, credential: Credential) -> None:
        pass


def test_a_credential_that_cannot_be_made_is_a_transport_error_and_nothing_is_sent() -> None:
    # Port 9 on loopback: a request that were sent would fail otherwise (refused).
    transport = UrllibTransport(
        ApiServerConfig(server="http://127.0.0.1:9", credentials=FailingPlugin())
    )
    with pytest.raises(TransportError, match="SSO session has expired") as raised:
        transport.request("GET", "/version", query=[], body=None, headers={}, timeout=(1, 1))
    assert raised.value.maybe_sent is False
    with pytest.raises(TransportError, match="SSO session has expired"):
        transport.stream("/api/v1/pods", query=[], timeout=(1, 1))
    with pytest.raises(TransportError, match="SSO session has expired"):
        transport.api_server_access().headers()


def test_impersonation_is_read_from_the_kubeconfig_user(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(json.dumps({
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {
            "token": "t", "as": "alice", "as-uid": "42", "as-groups": ["dev", "ops"],
            "as-user-extra": {"scopes": ["a", "b"], "example.com/x y%": ["v"]},
        }}],
    }))  # fmt: skip
    config = load_kubeconfig(str(path))
    assert list(config.impersonation) == [
        ("Impersonate-User", "alice"), ("Impersonate-Uid", "42"),
        ("Impersonate-Group", "dev"), ("Impersonate-Group", "ops"),
        ("Impersonate-Extra-example.com%2Fx%20y%25", "v"),
        ("Impersonate-Extra-scopes", "a"), ("Impersonate-Extra-scopes", "b"),
    ]  # fmt: skip
    assert UrllibTransport(config).api_server_access().headers() == [
        ("Authorization", "Bearer t"),
        *config.impersonation,
    ]


@pytest.mark.parametrize(("user", "message"), [
    ({"as-groups": ["dev"]}, "need as"),
    ({"as": "a", "as-groups": "dev"}, "as-groups: not a list of strings"),
    ({"as": "a", "as-user-extra": {"k": "v"}}, "as-user-extra: not a map"),
    ({"as": 1}, "as: not a string"),
])  # fmt: skip
def test_impersonation_of_the_wrong_shape_is_refused_naming_the_field(
    user: dict[str, Any], message: str
) -> None:
    with pytest.raises(ImpersonationError, match=message):
        read_impersonation(user, "kubeconfig x: user 'u'")


def _plugin_runs(tokens: list[str]) -> tuple[ExecCredentials, list[str]]:
    """ExecCredentials over a plugin that prints ``tokens`` one run after another."""
    runs: list[str] = []

    def run(_: ExecPlugin) -> ExecCredential:
        time.sleep(0.05)  # a real plugin takes a while: threads pile up behind the lock
        runs.append(tokens[len(runs)])
        return ExecCredential(runs[-1], None, None, None)

    plugin = ExecPlugin("client.authentication.k8s.io/v1", "p", (), (), "{}", "user 'u'")
    return ExecCredentials(plugin, ExecCredential("first", None, None, None), run=run), runs


def test_a_burst_of_401s_to_one_credential_runs_the_plugin_once() -> None:
    credentials, runs = _plugin_runs(["second", "third"])
    refused = credentials.current()
    seen: list[str | None] = []

    def request_refused_then_again() -> None:
        credentials.rejected(refused)  # the 401 to the first credential
        seen.append(credentials.current().authorization)

    threads = [threading.Thread(target=request_refused_then_again) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert runs == ["second"]
    assert set(seen) == {"Bearer second"}


def test_a_late_401_to_an_older_credential_keeps_the_fresh_one() -> None:
    credentials, runs = _plugin_runs(["second", "third"])
    old = credentials.current()
    credentials.rejected(old)
    fresh = credentials.current()
    assert fresh.authorization == "Bearer second"
    credentials.rejected(old)  # a request sent with the old one, answered late
    assert credentials.current() is fresh
    assert runs == ["second"]
    credentials.rejected(fresh)
    assert credentials.authorization() == "Bearer third"


def test_a_header_http_client_refuses_is_a_transport_error_before_sending() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    with listener:
        server = f"http://127.0.0.1:{listener.getsockname()[1]}"
        transport = UrllibTransport(
            ApiServerConfig(server=server, credentials=StaticToken("line\nbreak"))
        )
        with pytest.raises(TransportError, match="Invalid header value") as raised:
            transport.request("GET", "/version", query=[], body=None, headers={}, timeout=(1, 1))
    assert raised.value.maybe_sent is False
