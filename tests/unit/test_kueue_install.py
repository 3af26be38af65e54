"""Kueue's pin agrees with its wrapper module, and what ``hack.kueue.run`` installs is the
release's manifests cut down as its docstring says (pure functions, no cluster)."""

from __future__ import annotations

import re
from pathlib import Path

from hack import kueue
from hack.kueue import run

WEBHOOKS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
  name: mpod.kb.io
  rules: [{apiGroups: [""], resources: [pods]}]
- clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-ray-io-v1-rayjob}
  name: mrayjob.kb.io
  rules: [{apiGroups: [ray.io], resources: [rayjobs]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- clientConfig:
    service:
      {name: webhook-service, namespace: system, path: /validate-kueue-x-k8s-io-v1beta2-workload}
  name: vworkload.kb.io
  rules: [{apiGroups: [kueue.x-k8s.io], resources: [workloads]}]
"""

CRDS = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: workloads.kueue.x-k8s.io}
spec: {group: kueue.x-k8s.io}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: topologies.kueue.x-k8s.io}
spec: {group: kueue.x-k8s.io}
"""


def test_wrapper_module_pins_the_version() -> None:
    go_mod = (kueue.GOMOD_DIR / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(kueue.MODULE)} (\S+)", go_mod, re.MULTILINE)
    assert found is not None and found.group(1) == kueue.VERSION
    go_sum = (kueue.GOMOD_DIR / "go.sum").read_text()
    assert f"{kueue.MODULE} {kueue.VERSION} h1:" in go_sum


def test_webhooks_keep_kueue_and_ray_only_scoped_to_labelled_namespaces() -> None:
    mutating, validating = run.webhook_manifests(WEBHOOKS, webhook_port=9443)
    assert mutating["metadata"]["name"] == "kueue-mutating-webhook-configuration"
    assert validating["metadata"]["name"] == "kueue-validating-webhook-configuration"
    assert [hook["name"] for hook in mutating["webhooks"]] == ["mrayjob.kb.io"]
    ray = mutating["webhooks"][0]
    assert ray["clientConfig"]["service"] == {
        "name": run.SERVICE, "namespace": run.NAMESPACE,
        "path": "/mutate-ray-io-v1-rayjob", "port": 9443,
    }  # fmt: skip
    assert ray["namespaceSelector"] == {"matchLabels": {run.NAMESPACE_LABEL: "enabled"}}
    # Kueue's own objects exist only where the batch tests create them: no selector.
    assert "namespaceSelector" not in validating["webhooks"][0]


def test_converted_crds_get_the_conversion_webhook_others_not() -> None:
    workloads, topologies = run.crd_manifests(CRDS, webhook_port=9443)
    conversion = workloads["spec"]["conversion"]
    assert conversion["strategy"] == "Webhook"
    assert conversion["webhook"]["clientConfig"]["service"]["path"] == "/convert"
    assert "conversion" not in topologies["spec"]


def test_configuration_enables_the_ray_integrations_only(tmp_path: Path) -> None:
    config = run.configuration(webhook_port=1, health_port=2, cert_dir=tmp_path)
    assert config["integrations"] == {"frameworks": list(run.FRAMEWORKS)}
    assert config["internalCertManagement"]["webhookServiceName"] == run.SERVICE
    assert config["webhook"] == {"port": 1, "certDir": str(tmp_path)}
