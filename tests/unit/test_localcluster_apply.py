"""``LocalCluster.apply`` sends a server-side apply again when the failure was a timeout
(the server's, or kubectl's own wait for the server's schema), and at once raises any other."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace
from typing import Any

import pytest

from hack.localcluster.cluster import APPLY_ATTEMPTS, KubectlError, LocalCluster

SCHEMA_TIMEOUT_STDERR = (
    'error: error validating "m.json": error validating data: Get "https://127.0.0.1:1/openapi/'
    'v2?timeout=32s": net/http: request canceled (Client.Timeout exceeded while awaiting '
    "headers); if you choose to ignore these errors, turn validation off with --validate=false"
)
SERVER_TIMEOUT_STDERR = (
    "Error from server: Timeout: request did not complete within requested timeout"
)


def kubectl_failing(stderrs: list[str]) -> tuple[SimpleNamespace, list[tuple[str, ...]]]:
    calls: list[tuple[str, ...]] = []

    def kubectl(*args: str, **_: Any) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        if len(calls) <= len(stderrs):
            raise KubectlError(1, ["kubectl", *args], output="", stderr=stderrs[len(calls) - 1])
        return subprocess.CompletedProcess(args, 0, stdout="configmap/x serverside-applied\n")

    return SimpleNamespace(kubectl=kubectl), calls


@pytest.mark.parametrize("stderr", [SCHEMA_TIMEOUT_STDERR, SERVER_TIMEOUT_STDERR])
def test_a_timeout_is_sent_again_and_then_applies(stderr: str) -> None:
    cluster, calls = kubectl_failing([stderr])
    assert LocalCluster.apply(cluster, "m.json") == "configmap/x serverside-applied\n"  # type: ignore[arg-type]
    assert len(calls) == 2 and calls[0] == calls[1]


def test_timeouts_end_after_the_attempts() -> None:
    cluster, calls = kubectl_failing([SCHEMA_TIMEOUT_STDERR] * APPLY_ATTEMPTS)
    with pytest.raises(KubectlError):
        LocalCluster.apply(cluster, "m.json")  # type: ignore[arg-type]
    assert len(calls) == APPLY_ATTEMPTS


def test_any_other_failure_is_raised_at_once() -> None:
    cluster, calls = kubectl_failing(['The ConfigMap "x" is invalid: data: Invalid value'])
    with pytest.raises(KubectlError):
        LocalCluster.apply(cluster, "m.json")  # type: ignore[arg-type]
    assert len(calls) == 1
