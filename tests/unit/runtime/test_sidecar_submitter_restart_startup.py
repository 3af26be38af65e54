"""KubeRay v1.7.0's start-up check of the SidecarSubmitterRestart gate (``main.go``):
with the gate on, the operator exits unless the API server's ``GET /version`` is at
least 1.35.0, as ``utils.IsK8sVersionAtLeast`` (Kubernetes' ``ParseGeneric``) reads it.
The real API servers' answers are in tests/integration/kubernetes136."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from operator_runtime.runtime.commandline import (
    StartupError,
    check_api_server,
    check_sidecar_submitter_restart,
    generic_version,
)
from operator_runtime.runtime.transport import Response

URL = "https://10.0.0.1:6443"


class VersionServer:
    """A transport whose ``GET /version`` answers ``status`` with ``body``."""

    def __init__(self, status: int, body: bytes) -> None:
        self.answer = Response(status=status, body=body)

    def request(self, method: str, path: str, **_: Any) -> Response:
        assert (method, path) == ("GET", "/version")
        return self.answer


def _version_body(fields: Mapping[str, str]) -> bytes:
    return json.dumps(fields).encode()


@pytest.mark.parametrize(
    ("text", "components"),
    [("v1.34.4", (1, 34, 4)), ("1.35", (1, 35)), ("v1.35.0-rc.1", (1, 35, 0)),
     ("v1.36.3+k3s1", (1, 36, 3)), ("v1.35.2-gke.1100000", (1, 35, 2))],
)  # fmt: skip
def test_versions_read_as_parse_generic_reads_them(text: str, components: tuple[int, ...]) -> None:
    assert generic_version(text) == components


@pytest.mark.parametrize("text", ["", "v1", "one.two", "latest"])
def test_what_is_not_a_version_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="illegal version string"):
        generic_version(text)


@pytest.mark.parametrize("version", ["v1.35.0", "v1.35.0-alpha.1", "v1.36.3", "v2.0.0", "1.35"])
def test_the_gate_starts_on_1_35_and_later(version: str) -> None:
    check_sidecar_submitter_restart(version, URL, enabled=True)


@pytest.mark.parametrize("version", ["v1.34.4", "v1.34.99-gke.1", "v1.20.0", "v0.99.0"])
def test_the_gate_refuses_a_server_below_1_35_naming_the_gate_and_the_version(
    version: str,
) -> None:
    with pytest.raises(StartupError) as refused:
        check_sidecar_submitter_restart(version, URL, enabled=True)
    message = str(refused.value)
    assert "SidecarSubmitterRestart" in message and "1.35" in message
    assert f"the API server at {URL} is {version}" in message
    assert refused.value.code == 1  # KubeRay's exitOnError: os.Exit(1)


def test_an_unreadable_version_refuses_the_gate() -> None:
    """KubeRay exits when GetKubernetesVersion or the comparison fails."""
    with pytest.raises(StartupError, match=r"SidecarSubmitterRestart.*unknown"):
        check_sidecar_submitter_restart("", URL, enabled=True)


@pytest.mark.parametrize("version", ["v1.34.4", "", "garbage"])
def test_without_the_gate_the_version_is_not_checked(version: str) -> None:
    check_sidecar_submitter_restart(version, URL, enabled=False)


def test_the_api_server_check_returns_its_git_version() -> None:
    body = _version_body({"major": "1", "minor": "34", "gitVersion": "v1.34.4"})
    assert check_api_server(VersionServer(200, body), URL) == "v1.34.4"  # type: ignore[arg-type]
    assert check_api_server(VersionServer(200, b"not json"), URL) == ""  # type: ignore[arg-type]
    assert check_api_server(VersionServer(404, b""), URL) == ""  # type: ignore[arg-type]
