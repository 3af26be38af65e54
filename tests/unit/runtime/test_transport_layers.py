"""The transport's layers below the API: every failure there is a ``TransportError``
saying whether the request may have been sent. Against the real API server:
tests/integration/runtime/test_runtime_credential_failure.py."""

from __future__ import annotations

import pytest

from operator_runtime.runtime.credentials import CredentialError
from operator_runtime.runtime.errors import TransportError
from operator_runtime.runtime.kubeconfig import ApiServerConfig
from operator_runtime.runtime.transport import UrllibTransport


class FailingPlugin:
    """An exec plugin whose session expired."""

    def __init__(self) -> None:
        self.runs = 0

    def authorization(self) -> str | None:
        self.runs += 1
        raise CredentialError("user 'u' exec: exited 1: the SSO session has expired")

    def rejected(self) -> None:
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
