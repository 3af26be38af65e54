"""KubeRay's own operator, built from its Go module, for side-by-side conformance runs.

The Go module proxy reachable here serves ray-operator up to v1.6.2 (v1.7.0's zip is
refused), so the comparison runs against v1.6.2; docs/conformance.md lists what v1.7.0
changed in the parts we compare.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hack import gobuild

FAMILY = "kuberay"
VERSION = "v1.6.2"
MODULE = "github.com/ray-project/kuberay/ray-operator"
GOMOD_DIR = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION = 1

__all__ = ["VERSION", "ensure_built", "start_operator"]


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
    log = log_path.open("ab")
    try:
        return subprocess.Popen(
            [
                str(binary),
                f"--kubeconfig={kubeconfig}",
                f"--watch-namespace={watch_namespace}",
                "--enable-leader-election=false",
                f"--metrics-addr=127.0.0.1:{metrics_port}",
                f"--health-probe-bind-address=127.0.0.1:{probe_port}",
                "--log-stdout-encoder=console",
                *extra,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        )
    finally:
        log.close()
