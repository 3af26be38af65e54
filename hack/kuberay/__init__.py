"""KubeRay's own operator, built from its Go module, for side-by-side conformance runs.

The Go module proxy reachable here serves ray-operator up to v1.6.2 (v1.7.0's zip is
refused), so the comparison runs against v1.6.2; docs/conformance.md lists what v1.7.0
changed in the parts we compare.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from hack import gobuild, processes

FAMILY = "kuberay"
VERSION = "v1.6.2"
MODULE = "github.com/ray-project/kuberay/ray-operator"
GOMOD_DIR = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION = 1

__all__ = ["VERSION", "ensure_built", "pod_manifests", "start_operator"]


def _built() -> gobuild.Built:
    digest = gobuild.wrapper_digest(GOMOD_DIR.parent, ["gomod"], f"recipe {RECIPE_REVISION}")
    root = gobuild.cache_root() / FAMILY / f"ray-operator-{VERSION}-{digest}"
    return gobuild.Built(root=root, binaries=("ray-operator",))


def ensure_built(*, force: bool = False) -> gobuild.Built:
    """Build (or reuse) KubeRay's ray-operator binary."""

    def build(bin_dir: Path) -> None:
        gobuild.run_go(
            FAMILY,
            f"go build ray-operator {VERSION}",
            ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(bin_dir / "ray-operator"),
             MODULE],
            GOMOD_DIR,
        )  # fmt: skip

    return gobuild.ensure(
        _built(),
        family=FAMILY,
        build=build,
        versions_text=f"{MODULE} {VERSION}\n",
        force=force,
        make_target="kuberay",
    )


def start_operator(
    *,
    kubeconfig: Path,
    watch_namespace: str,
    log_path: Path,
    metrics_port: int,
    probe_port: int,
    extra: tuple[str, ...] = (),
) -> subprocess.Popen[bytes]:
    """Run KubeRay's operator against one namespace, logging to ``log_path``; ``extra``
    adds flags (``--enable-metrics`` for its ``kuberay_*`` metrics)."""
    binary = ensure_built().path("ray-operator")
    spec = processes.Spec(
        name="kuberay-operator",
        argv=[
            str(binary),
            f"--kubeconfig={kubeconfig}",
            f"--watch-namespace={watch_namespace}",
            "--enable-leader-election=false",
            f"--metrics-addr=127.0.0.1:{metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{probe_port}",
            "--log-stdout-encoder=console",
            *extra,
        ],
        log=log_path,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
    )
    # Readiness and stopping stay with the callers, which compare it with our operator
    # and wait on both alike; launched here, so the process is ours.
    process = processes.launch(spec).process
    assert process is not None
    return process


def pod_manifests(namespace: str, image: str, *, all_namespaces: bool = False,
                  cpu_request: bool = True) -> list[dict[str, Any]]:  # fmt: skip
    """KubeRay's operator as a pod: ``image`` (``hack.node.images.kuberay_layout`` of
    this build) in a Deployment watching ``namespace`` alone (or, ``all_namespaces``,
    every one), its probes and ports as its chart sets them (health on 8082, metrics on
    8080), non-root with a read-only root, requesting 100m of CPU unless not
    ``cpu_request``. Its RBAC is ours, not the chart's: every right on every namespaced
    kind of ``namespace`` (a Role), which covers what it touches there (pods, services,
    jobs, events, ray.io, its Lease) and nothing outside; with ``all_namespaces``,
    every right everywhere (a ClusterRole, as KubeRay's e2e suite runs it)."""
    meta = {"name": "kuberay-operator", "namespace": namespace,
            "labels": {"app.kubernetes.io/name": "kuberay-operator"}}  # fmt: skip

    def probe(path: str) -> dict[str, Any]:
        return {"httpGet": {"port": 8082, "path": path}, "periodSeconds": 5,
                "failureThreshold": 6}  # fmt: skip

    container = {
        "name": "kuberay-operator", "image": image, "imagePullPolicy": "IfNotPresent",
        "args": [*([] if all_namespaces else [f"--watch-namespace={namespace}"]),
                 "--log-stdout-encoder=json"],
        "ports": [{"name": "http-metrics", "containerPort": 8080},
                  {"name": "health", "containerPort": 8082}],
        "readinessProbe": probe("/readyz"),
        "livenessProbe": probe("/healthz"),
        "resources": {"requests": {"memory": "128Mi",
                                   **({"cpu": "100m"} if cpu_request else {})},
                      "limits": {"memory": "512Mi"}},
        "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True,
                            "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]},
                            "seccompProfile": {"type": "RuntimeDefault"}},
    }  # fmt: skip
    role = "ClusterRole" if all_namespaces else "Role"
    role_meta = {**meta, "name": f"kuberay-operator-{namespace}"} if all_namespaces else meta
    if all_namespaces:
        role_meta.pop("namespace")
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": role, "metadata": role_meta,
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": f"{role}Binding",
         "metadata": role_meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role,
                     "name": role_meta["name"]},
         "subjects": [{"kind": "ServiceAccount", "name": meta["name"],
                       "namespace": namespace}]},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {
            "replicas": 1,
            "selector": {"matchLabels": meta["labels"]},
            "template": {"metadata": {"labels": meta["labels"]}, "spec": {
                "serviceAccountName": meta["name"], "containers": [container]}},
        }},
    ]  # fmt: skip
