"""``python -m operator_runtime`` / ``ray-operator``: the operator process.

Flags mirror KubeRay's ray-operator where they exist, so a KubeRay Deployment's args
carry over. The process runs the controllers in the registry built by
``build_registry`` (plus any ``--controller-plugin``), exits 0 after a SIGTERM drain
and 1 when it loses the leader Lease.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Sequence
from types import FrameType

from operator_runtime.api.errors import FeatureGateError
from operator_runtime.api.features import GATES, FeatureGates
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import SystemClock
from operator_runtime.runtime.leader import LeaderElectionConfig
from operator_runtime.runtime.logs import configure_logging
from operator_runtime.runtime.manager import Manager, ManagerOptions
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.registry import ControllerRegistry
from operator_runtime.runtime.transport import UrllibTransport, load_configuration

log = logging.getLogger("operator_runtime")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ray-operator",
        description="Operator for the ray.io/v1 API (RayCluster, RayJob, RayService, "
        "RayCronJob), a Python reimplementation of KubeRay.",
    )
    add = parser.add_argument
    add("--kubeconfig", help="kubeconfig file; default: in-cluster config, else $KUBECONFIG "
        "or ~/.kube/config")  # fmt: skip
    add("--watch-namespace", action="append", default=[], metavar="NAMESPACE",
        help="namespace to watch; repeat for several (a comma-separated list also works); "
        "none means all namespaces")  # fmt: skip
    add("--feature-gates", default="", metavar="A=true,B=false",
        help=f"KubeRay feature gates; known: {', '.join(sorted(GATES))}")  # fmt: skip
    add("--qps", type=float, default=100.0, help="client-side API request rate (default 100)")
    add("--burst", type=int, default=200, help="client-side API request burst (default 200)")
    add(
        "--reconcile-concurrency",
        type=int,
        default=1,
        metavar="N",
        help="workers per controller; one key is never reconciled twice at once (default 1)",
    )
    add(
        "--enable-leader-election",
        type=_boolean,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="only the Lease holder among replicas reconciles; "
        "--enable-leader-election=false turns it off (default true)",
    )
    add(
        "--leader-election-namespace",
        default="",
        help="namespace of the Lease; default: the pod's namespace, else 'default'",
    )
    add("--leader-election-id", default="ray-operator-leader", help="name of the Lease")
    add(
        "--leader-election-lease-duration",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="how long a standby waits after the last renewal before taking over (15)",
    )
    add(
        "--leader-election-renew-deadline",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="the leader gives up if it cannot renew within this time (10)",
    )
    add(
        "--leader-election-retry-period",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="interval between renewals and acquisition attempts (2)",
    )
    add("--metrics-addr", default=":8080", help="address of /metrics; '0' disables (:8080)")
    add(
        "--health-probe-bind-address",
        default=":8082",
        help="address of /healthz and /readyz; '0' disables (:8082)",
    )
    add(
        "--shutdown-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long SIGTERM waits for in-flight reconciles (30)",
    )
    add(
        "--log-stdout-encoder",
        choices=("json", "console"),
        default="json",
        help="format of log lines on stdout (json)",
    )
    add("--log-file-path", default="", help="also log to this file, rotated at 500 MB x 10")
    add(
        "--log-file-encoder",
        choices=("json", "console"),
        default="json",
        help="format of log lines in --log-file-path (json)",
    )
    add(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="minimum level logged (info)",
    )
    add(
        "--use-kubernetes-proxy",
        type=_boolean,
        nargs="?",
        const=True,
        default=False,
        metavar="BOOL",
        help="reach Ray dashboards through the API server's service proxy, for an operator "
        "outside the cluster network (default false)",
    )
    add(
        "--controllers",
        default="",
        metavar="NAME,...",
        help="run only these registered controllers (default: all)",
    )
    add(
        "--controller-plugin",
        action="append",
        default=[],
        metavar="MODULE:FUNCTION",
        help="also register the controllers FUNCTION(registry) adds (used by tests)",
    )
    from operator_runtime.controllers import rendercli

    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    rendercli.add_command(commands)
    return parser


def _boolean(value: str) -> bool:
    # Go-style booleans, so KubeRay's "--enable-leader-election=false" works unchanged.
    lowered = value.strip().lower()
    if lowered in ("true", "1", "t", "yes"):
        return True
    if lowered in ("false", "0", "f", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def build_registry(plugins: Sequence[str]) -> ControllerRegistry:
    """The controllers this process runs: the package's own, then plugins."""
    registry = ControllerRegistry()
    try:
        controllers = importlib.import_module("operator_runtime.controllers")
    except ModuleNotFoundError as exc:
        if exc.name != "operator_runtime.controllers":
            raise
    else:
        register = getattr(controllers, "register", None)
        if register is None:
            # The package exists but exports no ``register(registry)`` yet.
            log.warning("operator_runtime.controllers has no register(); no built-in controllers")
        else:
            register(registry)
    for plugin in plugins:
        registry.load_plugin(plugin)
    return registry


def _namespaces(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ns.strip() for v in values for ns in v.split(",") if ns.strip()))


def _lease_namespace(flag: str) -> str:
    if flag:
        return flag
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as handle:
            return handle.read().strip() or "default"
    except OSError:
        return "default"


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["render"]:
        # `render FILE.yaml`: print what the operator would create, straight from render/.
        from operator_runtime.controllers import rendercli

        return rendercli.run(build_parser().parse_args(arguments))
    args = build_parser().parse_args(arguments)
    try:
        gates = FeatureGates.parse(args.feature_gates)
    except FeatureGateError as exc:
        print(f"ray-operator: --feature-gates: {exc}", file=sys.stderr)
        return 2
    configure_logging(
        level=args.log_level, stdout_encoder=args.log_stdout_encoder,
        file_path=args.log_file_path or None, file_encoder=args.log_file_encoder,
    )  # fmt: skip
    identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    leader_election = None
    if args.enable_leader_election:
        try:
            leader_election = LeaderElectionConfig(
                namespace=_lease_namespace(args.leader_election_namespace),
                name=args.leader_election_id, identity=identity,
                lease_duration=args.leader_election_lease_duration,
                renew_deadline=args.leader_election_renew_deadline,
                retry_period=args.leader_election_retry_period,
            )  # fmt: skip
        except ValueError as exc:
            print(f"ray-operator: leader election: {exc}", file=sys.stderr)
            return 2
    workers = max(1, args.reconcile_concurrency)
    clock = SystemClock()
    transport = UrllibTransport(load_configuration(args.kubeconfig), pool_size=32 + 2 * workers)
    client = KubeClient(transport, limiter=TokenBucket(args.qps, args.burst, clock=clock),
                        clock=clock)  # fmt: skip
    options = ManagerOptions(
        namespaces=_namespaces(args.watch_namespace), concurrency=workers,
        leader_election=leader_election, metrics_address=args.metrics_addr,
        health_address=args.health_probe_bind_address, shutdown_timeout=args.shutdown_timeout,
        identity=identity, use_kubernetes_proxy=args.use_kubernetes_proxy,
        api_server=transport.api_server_access(),
        feature_gates=tuple((name, gates.enabled(name)) for name in sorted(GATES)),
    )  # fmt: skip
    manager = Manager(client, options, clock=clock)
    # The client's observer is wired after the manager exists, so one metrics registry
    # counts API requests too.
    client.set_observer(manager.metrics.observe_request)
    only = [name.strip() for name in args.controllers.split(",") if name.strip()] or None
    try:
        manager.add_registry(build_registry(args.controller_plugin), only)
    except ValueError as exc:
        print(f"ray-operator: --controllers: {exc}", file=sys.stderr)
        return 2

    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s, shutting down", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("ray-operator %s starting (namespaces: %s)", identity,
             ", ".join(options.namespaces) or "all")  # fmt: skip
    return manager.run(stop)


if __name__ == "__main__":
    sys.exit(main())
