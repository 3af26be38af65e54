"""The RayCluster controller's share of RayClusterMTLS (``controllers/raycluster/mtls.py``),
after KubeRay v1.7.0's TestCheckMTLSSecretsReady_* (raycluster_mtls_controller_test.go)
and TestReconcile_TLSAutoGenerate_RejectsWithoutCertManager: pods wait for both leaf
Certificates Ready at their generation and both Secrets complete; a TLS cluster without
cert-manager is refused with an event and no retry. The reads here come from a map of
objects by name (the pass only reads); tests/integration/mtls runs the same against the
real API server and cert-manager."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from operator_runtime.api import FeatureGates, RayCluster
from operator_runtime.controllers.raycluster.mtls import (
    CertificatesNotReady,
    refuse_without_cert_manager,
    require_certificates,
)
from operator_runtime.controllers.raycluster.options import RayClusterOptions
from operator_runtime.controllers.raycluster.run import ClusterRun
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import ResourceKind
from operator_runtime.runtime.reconcile import ObjectKey, Result
from tests.clustertools import ListSink, cluster_tools

GATES = FeatureGates(ray_cluster_mtls=True)
SECRET_DATA = {"tls.crt": "Yw==", "tls.key": "aw==", "ca.crt": "Yw=="}


class Reads:
    """``get`` of the objects given, by kind and name; NotFound for any other."""

    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]]) -> None:
        self.objects = objects

    def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> dict[str, Any]:
        try:
            return self.objects[(kind.kind, name)]
        except KeyError:
            raise NotFound(404, f"{kind.kind} {namespace}/{name} not found") from None


def certificate(ready: bool = True, *, generation: int = 1, observed: int = 1) -> dict[str, Any]:
    condition = {"type": "Ready", "status": "True" if ready else "False",
                 "observedGeneration": observed}  # fmt: skip
    return {"metadata": {"generation": generation}, "status": {"conditions": [condition]}}


def issued(**changes: Any) -> dict[tuple[str, str], dict[str, Any]]:
    objects: dict[tuple[str, str], dict[str, Any]] = {
        ("Certificate", "ray-head-cert-c"): certificate(),
        ("Certificate", "ray-worker-cert-c"): certificate(),
        ("Secret", "ray-head-secret-c"): {"metadata": {}, "data": dict(SECRET_DATA)},
        ("Secret", "ray-worker-secret-c"): {"metadata": {}, "data": dict(SECRET_DATA)},
    }
    for key, value in changes.items():
        kind, _, name = key.partition(":")
        if value is None:
            objects.pop((kind, name))
        else:
            objects[(kind, name)] = value
    return objects


def run_of(
    reads: Any, *, tls: bool = True, gates: FeatureGates = GATES, available: bool = True
) -> tuple[ClusterRun, ListSink]:
    raw: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u"},
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head"}]}}},
            **({"tlsOptions": {"enabled": True}} if tls else {}),
        },
    }
    sink = ListSink()
    tools = cluster_tools(reads, sink)
    options = RayClusterOptions(
        render=RenderOptions(feature_gates=gates), cert_manager_available=available
    )
    tools = dataclasses.replace(tools, options=options)
    return ClusterRun(tools, ObjectKey("ns", "c"), raw, RayCluster.model_validate(raw)), sink


def test_issued_certificates_and_complete_secrets_let_pods_through() -> None:
    run, _ = run_of(Reads(issued()))
    require_certificates(run)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"Certificate:ray-head-cert-c": None}, "certificate ray-head-cert-c not found"),
        ({"Certificate:ray-worker-cert-c": certificate(ready=False)},
         "certificate ray-worker-cert-c is not ready at current generation 1"),
        ({"Certificate:ray-head-cert-c": certificate(generation=2, observed=1)},
         "certificate ray-head-cert-c is not ready at current generation 2"),
        ({"Secret:ray-worker-secret-c": None}, "secret ray-worker-secret-c not found"),
        ({"Secret:ray-head-secret-c": {"metadata": {}, "data": {"tls.crt": "Yw=="}}},
         "secret ray-head-secret-c missing required key tls.key"),
    ],
    ids=["cert-missing", "cert-not-ready", "cert-stale-generation", "secret-missing",
         "secret-missing-key"],
)  # fmt: skip
def test_pods_wait_for_certificates_and_secrets(changes: dict[str, Any], message: str) -> None:
    run, _ = run_of(Reads(issued(**changes)))
    with pytest.raises(CertificatesNotReady, match=message):
        require_certificates(run)


@pytest.mark.parametrize(
    ("tls", "gates"), [(False, GATES), (True, FeatureGates())], ids=["tls-off", "gate-off"]
)
def test_without_tls_nothing_is_read(tls: bool, gates: FeatureGates) -> None:
    run, _ = run_of(None, tls=tls, gates=gates)  # any read would fail on None
    require_certificates(run)
    assert refuse_without_cert_manager(run) is None


def test_a_tls_cluster_without_cert_manager_is_refused_once() -> None:
    run, sink = run_of(None, available=False)
    assert refuse_without_cert_manager(run) == Result()
    [event] = sink.events
    assert (event.type, event.reason) == ("Warning", "InvalidRayClusterSpec")
    assert "tlsOptions requires cert-manager, but cert-manager is not installed" in event.note


def test_with_cert_manager_the_gate_step_goes_on() -> None:
    run, sink = run_of(None)
    assert refuse_without_cert_manager(run) is None
    assert sink.events == []
