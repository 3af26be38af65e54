"""``python -m hack.localcluster build|up|down|status|env``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hack import sandbox
from hack.localcluster.build import ensure_built
from hack.localcluster.cluster import COMPONENTS, LocalCluster, format_env
from hack.localcluster.gatewayapi import ensure_crds
from hack.localcluster.versions import KUBERNETES, KUBERNETES_WRAPPERS

DEFAULT_STATE_DIR = Path(__file__).resolve().parents[2] / ".localcluster"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.localcluster",
        description="Build and run a local Kubernetes control plane with kwok fake nodes.",
    )
    parser.add_argument(
        "command",
        choices=("build", "up", "down", "status", "env"),
        help="build: compile the binaries and fetch the Gateway API CRDs (cached); "
        "up: start and wait until ready; down: stop every process; "
        "status: which components run; env: shell exports",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        help="where certificates, data, logs and the kubeconfig live "
        f"(default {DEFAULT_STATE_DIR})",
    )
    parser.add_argument("--nodes", type=int, default=4, help="fake nodes to create on `up`")
    parser.add_argument("--force", action="store_true", help="`build`: rebuild even if cached")
    parser.add_argument(
        "--kubernetes",
        choices=tuple(KUBERNETES_WRAPPERS),
        default=KUBERNETES,
        help=f"`build`, `up`: the control plane's Kubernetes version (default {KUBERNETES})",
    )
    arguments = parser.parse_args(argv)
    state_dir: Path = arguments.state_dir.resolve()
    state_file = state_dir / "state.json"

    if arguments.command == "build":
        tools = ensure_built(force=arguments.force, kubernetes=arguments.kubernetes)
        ensure_crds(force=arguments.force)
        print(tools.bin_dir)
        return 0
    if arguments.command == "up":
        sandbox.exit_unless_inside("`python -m hack.localcluster up`")
        if state_file.exists() and any(LocalCluster.load(state_dir).alive().values()):
            print(f"already up (state in {state_dir}); run `down` first", file=sys.stderr)
            return 1
        cluster = LocalCluster(
            state_dir=state_dir,
            tools=ensure_built(kubernetes=arguments.kubernetes),
            kubernetes=arguments.kubernetes,
        )
        cluster.start(node_count=arguments.nodes)
        print(format_env(cluster))
        return 0
    if not state_file.exists():
        print(f"no local cluster state in {state_dir}", file=sys.stderr)
        return 0 if arguments.command == "down" else 1
    cluster = LocalCluster.load(state_dir)
    if arguments.command == "down":
        cluster.stop()
        print(f"stopped; state kept in {state_dir}", file=sys.stderr)
        return 0
    if arguments.command == "status":
        alive = cluster.alive()
        for component in COMPONENTS:
            print(f"{component:<24} {'running' if alive[component] else 'stopped'}")
        print(f"{'server':<24} {cluster.server}")
        return 0 if all(alive.values()) else 1
    print(format_env(cluster))
    return 0


if __name__ == "__main__":
    sys.exit(main())
