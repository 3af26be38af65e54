"""The operator process that ``python -m operator_runtime`` and ``ray-operator`` start
(``operator_runtime.__main__`` first checks that the operator's dependencies are there).

Every flag of KubeRay's ray-operator (v1.6 and v1.7) is accepted with its name, its
default and Go's forms (``-flag``, ``--flag=value``, a bare boolean), so the args of a
KubeRay Deployment or Helm chart carry over; ``--config`` reads KubeRay's
``Configuration`` file with KubeRay's precedence over the flags. KubeRay's environment
variables are read once, here, into an ``OperatorEnvironment`` that every controller
gets on its context. docs/operations.md lists every flag and variable and what each
does here.

The process runs the controllers in the registry built by ``build_registry`` (plus any
``--controller-plugin``), exits 0 after a SIGTERM drain and 1 when it loses the leader
Lease. A mistake in how it is started (a flag, the config file, the kubeconfig, an
unreachable API server, a port in use) is one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
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
from operator_runtime.runtime.commandline import (
    StartupError,
    check_api_server,
    check_batch_scheduler,
    check_sidecar_submitter_restart,
    effective_log_level,
    parse_arguments,
    resolve_configuration,
    version_line,
)
from operator_runtime.runtime.commandline import (
    build_parser as _build_parser,
)
from operator_runtime.runtime.configuration import ConfigurationError
from operator_runtime.runtime.leader import LeaderElectionConfig
from operator_runtime.runtime.logs import configure_logging
from operator_runtime.runtime.manager import Manager, ManagerOptions
from operator_runtime.runtime.ratelimit import BucketPerKind, TokenBucket
from operator_runtime.runtime.registry import ControllerRegistry
from operator_runtime.runtime.settings import OperatorEnvironment
from operator_runtime.runtime.transport import UrllibTransport, load_configuration

log = logging.getLogger("operator_runtime")


def build_parser() -> argparse.ArgumentParser:
    """The operator's flags (``runtime.commandline``) and its ``render`` subcommand."""
    from operator_runtime.controllers import rendercli

    parser = _build_parser(GATES)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    rendercli.add_command(commands)
    return parser


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
    args = parse_arguments(build_parser(), arguments)
    if args.version:
        print(version_line())
        return 0
    try:
        return _run(args)
    except StartupError as exc:
        print(f"ray-operator: {exc}", file=sys.stderr)
        return exc.code


def _run(args: argparse.Namespace) -> int:
    try:
        gates = FeatureGates.parse(args.feature_gates)
    except FeatureGateError as exc:
        raise StartupError(f"--feature-gates: {exc}", code=2) from None
    config = resolve_configuration(args)
    check_batch_scheduler(config, kubernetes_was=gates.enabled("KubernetesWAS"))
    # Read once; controllers find it on their context, never in the process environment.
    environment = OperatorEnvironment()
    configure_logging(
        level=effective_log_level(args), stdout_encoder=args.log_stdout_encoder,
        file_path=config.log_file or None, file_encoder=args.log_file_encoder,
    )  # fmt: skip
    if args.forced_cluster_upgrade:
        log.info("deprecated flag --forced-cluster-upgrade is set; it has no effect")
    if environment.enable_webhooks:
        log.warning("ENABLE_WEBHOOKS=true: this operator serves no admission webhooks; "
                    "the CRDs' own validation and the controllers' checks apply")  # fmt: skip
    identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    leader_election = None
    if config.enable_leader_election:
        try:
            leader_election = LeaderElectionConfig(
                namespace=_lease_namespace(config.leader_election_namespace),
                name=args.leader_election_id, identity=identity,
                lease_duration=args.leader_election_lease_duration,
                renew_deadline=args.leader_election_renew_deadline,
                retry_period=args.leader_election_retry_period,
            )  # fmt: skip
        except ValueError as exc:
            raise StartupError(f"leader election: {exc}", code=2) from None
    workers = max(1, config.reconcile_concurrency)
    clock = SystemClock()
    transport = _transport(args.kubeconfig, pool_size=32 + 2 * workers)
    server_version = check_api_server(transport, transport.base_url)
    check_sidecar_submitter_restart(
        server_version, transport.base_url, enabled=gates.enabled("SidecarSubmitterRestart")
    )
    limits = BucketPerKind(TokenBucket(config.qps, config.burst, clock=clock))
    client = KubeClient(transport, limiter=limits, clock=clock)
    options = ManagerOptions(
        namespaces=_namespaces([config.watch_namespace]), concurrency=workers,
        leader_election=leader_election, metrics_address=config.metrics_addr,
        health_address=config.probe_addr, shutdown_timeout=args.shutdown_timeout,
        identity=identity, use_kubernetes_proxy=config.use_kubernetes_proxy,
        api_server=transport.api_server_access(),
        feature_gates=tuple((name, gates.enabled(name)) for name in sorted(GATES)),
        settings=environment, enable_metrics=config.enable_metrics, configuration=config,
    )  # fmt: skip
    manager = Manager(client, options, clock=clock)
    # The client's observer is wired after the manager exists, so one metrics registry
    # counts API requests too.
    client.set_observer(manager.metrics.observe_request)
    only = [name.strip() for name in args.controllers.split(",") if name.strip()] or None
    try:
        manager.add_registry(build_registry(args.controller_plugin), only)
    except ConfigurationError as exc:  # a controller refused the configuration
        raise StartupError(str(exc), code=2) from None
    except ValueError as exc:
        raise StartupError(f"--controllers: {exc}", code=2) from None
    try:
        manager.start_servers()
    except (OSError, ValueError) as exc:
        raise StartupError(str(exc)) from None

    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s, shutting down", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("ray-operator %s starting (namespaces: %s)", identity,
             ", ".join(options.namespaces) or "all")  # fmt: skip
    return manager.run(stop)


def _transport(path: str | None, *, pool_size: int) -> UrllibTransport:
    """The API server's transport, or one line saying why the kubeconfig gives none."""
    if path and not os.path.isfile(path):
        raise StartupError(f"kubeconfig {path}: no such file")
    try:
        return UrllibTransport(load_configuration(path), pool_size=pool_size)
    except Exception as exc:  # a kubeconfig, in-cluster or TLS error: all "bad file"
        detail = " ".join(str(exc).split())[:300] or type(exc).__name__
        if not path:
            raise StartupError(
                f"no usable kubeconfig ($KUBECONFIG, else in-cluster, else ~/.kube/config: "
                f"{detail}); pass --kubeconfig"
            ) from None
        if detail.startswith(f"kubeconfig {path}"):  # ours already names the file
            raise StartupError(detail) from None
        raise StartupError(f"kubeconfig {path}: {detail}") from None


if __name__ == "__main__":
    sys.exit(main())
