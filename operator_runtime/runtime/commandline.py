"""The operator's command line: KubeRay's ray-operator flags, parsed the way Go's ``flag``
package does, plus the few of our own.

KubeRay (v1.6.2 and v1.7.0) defines its flags in ``ray-operator/main.go`` with Go's
``flag`` package, adds controller-runtime's ``--zap-*`` logging flags and its
``--kubeconfig``. Go accepts ``-name`` as well as ``--name``, ``--name=value`` and
``--name value``, a bare boolean for true, and ``strconv.ParseBool``'s spellings;
integers go through ``strconv.ParseInt`` with base 0 (``0x10``, ``010``). All of that
works here. ``parse_arguments`` is the entry point; ``build_parser`` stays a plain
argparse parser so callers can check a list of args without starting anything.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final

from operator_runtime.api.common import KUBERAY_VERSION
from operator_runtime.runtime.configuration import (
    DEFAULT_BURST,
    DEFAULT_ENABLE_LEADER_ELECTION,
    DEFAULT_METRICS_ADDR,
    DEFAULT_PROBE_ADDR,
    DEFAULT_QPS,
    DEFAULT_RECONCILE_CONCURRENCY,
    OperatorConfiguration,
    load_configuration_file,
)
from operator_runtime.runtime.errors import TransportError

if TYPE_CHECKING:
    # The Kubernetes client's transport: only an annotation here, so that the components,
    # which import this module for check_batch_scheduler, need no Kubernetes client.
    from operator_runtime.runtime.transport import Transport

KNOWN_BATCH_SCHEDULERS: Final = ("volcano", "yunikorn", "scheduler-plugins", "kai-scheduler")
"""The names KubeRay's ``--batch-scheduler`` accepts (``render/batchscheduler.py`` has what
each adds; a test keeps the two lists equal, this module stays free of render)."""
ZAP_LEVELS: Final = {"debug": "debug", "info": "info", "error": "error", "panic": "critical"}
ZAP_STACKTRACE_LEVELS: Final = ("info", "error", "panic")
ZAP_TIME_ENCODINGS: Final = ("epoch", "millis", "nanos", "iso8601", "rfc3339", "rfc3339nano")

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class StartupError(Exception):
    """The operator cannot start as asked; ``str()`` is the one line printed."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def boolean(value: str) -> bool:
    """Go's ``strconv.ParseBool``: 1 t T TRUE true True, 0 f F FALSE false False."""
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r} (Go's ParseBool)")


def go_int(value: str) -> int:
    """Go's ``strconv.ParseInt(s, 0, 64)``: decimal, 0x/0o/0b prefixes, a leading 0 for
    octal, underscores between digits."""
    body = value[1:] if value[:1] in "+-" else value
    try:
        if re.fullmatch(r"0[xXoObB][0-9a-fA-F_]+", body):
            number = int(body, 0)
        elif re.fullmatch(r"0[0-9_]+", body):
            number = int(body, 8)
        elif re.fullmatch(r"[0-9][0-9_]*", body):
            number = int(body, 10)
        else:
            raise ValueError(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer value {value!r}") from None
    number = -number if value.startswith("-") else number
    if not -(2**63) <= number < 2**63:
        raise argparse.ArgumentTypeError(f"integer value {value!r} out of range")
    return number


def go_float(value: str) -> float:
    """Go's ``strconv.ParseFloat(s, 64)`` for the forms people write: 100, 1.5, 1e3."""
    if "_" in value or not value.strip() or value != value.strip():
        raise argparse.ArgumentTypeError(f"invalid float value {value!r}")
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value {value!r}") from None


def _choice(name: str, allowed: Iterable[str], *, lower: bool = True) -> Any:
    options = tuple(allowed)

    def parse(value: str) -> str:
        key = value.lower() if lower else value
        if key not in options:
            raise argparse.ArgumentTypeError(
                f"invalid {name} {value!r} (one of {', '.join(options)})"
            )
        return key

    return parse


def _zap_level(value: str) -> str:
    lowered = value.lower()
    if lowered in ZAP_LEVELS:
        return lowered
    try:
        verbosity = go_int(value)
    except argparse.ArgumentTypeError:
        verbosity = 0
    if verbosity > 0:
        return str(verbosity)
    raise argparse.ArgumentTypeError(
        f"invalid log level {value!r} (debug, info, error, panic or an integer > 0)"
    )


def build_parser(gates: Iterable[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ray-operator",
        description="Operator for the ray.io/v1 API (RayCluster, RayJob, RayService, "
        "RayCronJob), a Python reimplementation of KubeRay "
        f"{KUBERAY_VERSION}. Every flag of KubeRay's ray-operator is accepted; "
        "docs/operations.md says what each does here.",
        allow_abbrev=False,
    )
    add = parser.add_argument

    def flag(name: str, default: bool, help: str) -> None:
        add(
            name,
            type=boolean,
            nargs="?",
            const=True,
            default=default,
            metavar="BOOL",
            help=f"{help} (default {str(default).lower()})",
        )

    add("--version", action="store_true", help="print the version and exit")
    add(
        "--kubeconfig",
        help="kubeconfig file; default: $KUBECONFIG, else in-cluster config, else ~/.kube/config",
    )
    add(
        "--config",
        default="",
        metavar="PATH",
        help="KubeRay's Configuration file (config.ray.io/v1alpha1); its settings replace "
        "the flags that set the same things, as in KubeRay",
    )
    add(
        "--watch-namespace",
        action="append",
        default=[],
        metavar="NAMESPACE",
        help="namespaces to watch, comma-separated (the flag may also be repeated); "
        "none means all namespaces",
    )
    add(
        "--feature-gates",
        default="",
        metavar="A=true,B=false",
        help=f"KubeRay feature gates; known: {', '.join(sorted(gates))}",
    )
    add(
        "--qps",
        type=go_float,
        default=DEFAULT_QPS,
        help="client-side API request rate (default 100)",
    )
    add(
        "--burst",
        type=go_int,
        default=DEFAULT_BURST,
        help="client-side API request burst (default 200)",
    )
    add(
        "--reconcile-concurrency",
        type=go_int,
        default=DEFAULT_RECONCILE_CONCURRENCY,
        metavar="N",
        help="workers per controller; one key is never reconciled twice at once (default 1)",
    )
    flag(
        "--enable-leader-election",
        DEFAULT_ENABLE_LEADER_ELECTION,
        "only the Lease holder among replicas reconciles; "
        "--enable-leader-election=false turns it off",
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
    add(
        "--metrics-addr",
        default=DEFAULT_METRICS_ADDR,
        help="address of /metrics; '0' disables (:8080)",
    )
    flag(
        "--enable-metrics",
        False,
        "add the kuberay_* metrics of RayClusters, RayJobs and RayServices to /metrics",
    )
    add(
        "--health-probe-bind-address",
        default=DEFAULT_PROBE_ADDR,
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
        type=_choice("encoder", ("json", "console"), lower=False),
        default="json",
        help="format of log lines on stdout: json or console (json)",
    )
    add("--log-file-path", default="", help="also log to this file, rotated at 500 MB x 10")
    add(
        "--log-file-encoder",
        type=_choice("encoder", ("json", "console"), lower=False),
        default="json",
        help="format of log lines in --log-file-path (json)",
    )
    add(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="minimum level logged (info); --zap-log-level, when given, wins",
    )
    add(
        "--zap-log-level",
        type=_zap_level,
        default=None,
        metavar="LEVEL",
        help="KubeRay's log level: debug, info, error, panic, or an integer > 0 (debug)",
    )
    flag("--zap-devel", False, "development defaults: log at debug level")
    add(
        "--zap-encoder",
        type=_choice("encoder", ("json", "console")),
        default=None,
        help="accepted; changes nothing, as in KubeRay (--log-stdout-encoder decides)",
    )
    add(
        "--zap-stacktrace-level",
        type=_choice("level", ZAP_STACKTRACE_LEVELS),
        default=None,
        metavar="LEVEL",
        help="accepted; changes nothing here (tracebacks are always logged with errors)",
    )
    add(
        "--zap-time-encoding",
        type=_choice("time encoding", ZAP_TIME_ENCODINGS),
        default=None,
        metavar="ENCODING",
        help="accepted; changes nothing, as in KubeRay (timestamps are ISO 8601)",
    )
    flag(
        "--use-kubernetes-proxy",
        False,
        "reach Ray dashboards through the API server's service proxy, for an operator "
        "outside the cluster network",
    )
    add(
        "--batch-scheduler",
        default="",
        metavar="NAME",
        help=f"the batch (gang) scheduler: {', '.join(KNOWN_BATCH_SCHEDULERS)}; pods get its "
        "schedulerName and metadata, and Volcano/scheduler-plugins a PodGroup",
    )
    flag(
        "--enable-batch-scheduler",
        False,
        "deprecated: the same as --batch-scheduler=volcano",
    )
    flag("--forced-cluster-upgrade", False, "deprecated in KubeRay; changes nothing")
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
    return parser


def _long_options(parser: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset(
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--")
    )


def go_style(arguments: Sequence[str], parser: argparse.ArgumentParser) -> list[str]:
    """Go's ``-name[=value]`` spelled ``--name[=value]``; everything else unchanged."""
    known = _long_options(parser)
    result: list[str] = []
    for index, argument in enumerate(arguments):
        if argument == "--":
            result.extend(arguments[index:])
            break
        if argument.startswith("-") and not argument.startswith("--") and len(argument) > 2:
            name = "-" + argument.split("=", 1)[0]
            if name in known:
                argument = "-" + argument
        result.append(argument)
    return result


def parse_arguments(parser: argparse.ArgumentParser, arguments: Sequence[str]) -> Any:
    """Parse ``arguments`` as KubeRay's operator would accept them."""
    return parser.parse_args(go_style(arguments, parser))


def resolve_configuration(args: Any) -> OperatorConfiguration:
    """KubeRay's rule: with ``--config`` the file decides everything it can hold (its
    defaults for what it leaves out); without, the flags do. ``StartupError`` if the
    file cannot be read or decoded."""
    if args.config:
        try:
            return load_configuration_file(args.config)
        except ValueError as exc:
            raise StartupError(f"--config: {exc}") from None
    namespaces = dict.fromkeys(
        ns.strip() for value in args.watch_namespace for ns in value.split(",") if ns.strip()
    )
    return OperatorConfiguration(
        metrics_addr=args.metrics_addr,
        probe_addr=args.health_probe_bind_address,
        enable_leader_election=args.enable_leader_election,
        leader_election_namespace=args.leader_election_namespace,
        reconcile_concurrency=args.reconcile_concurrency,
        watch_namespace=",".join(namespaces),
        log_file=args.log_file_path,
        enable_batch_scheduler=args.enable_batch_scheduler,
        batch_scheduler=args.batch_scheduler,
        use_kubernetes_proxy=args.use_kubernetes_proxy,
        enable_metrics=args.enable_metrics,
        qps=args.qps,
        burst=args.burst,
    )


def check_batch_scheduler(config: OperatorConfiguration, *, kubernetes_was: bool) -> None:
    """KubeRay's ValidateBatchSchedulerConfig: one way of asking at a time, and a name it
    knows."""
    if kubernetes_was:
        if config.enable_batch_scheduler or config.batch_scheduler:
            raise StartupError(
                "the KubernetesWAS feature gate cannot be combined with --batch-scheduler "
                "or --enable-batch-scheduler"
            )
        return
    if config.enable_batch_scheduler and config.batch_scheduler:
        raise StartupError(
            "both --enable-batch-scheduler (deprecated) and --batch-scheduler are set; "
            "use --batch-scheduler only"
        )
    # --enable-batch-scheduler alone is deprecated but means Volcano (chosen_scheduler).
    if (
        not config.enable_batch_scheduler
        and config.batch_scheduler
        and config.batch_scheduler not in KNOWN_BATCH_SCHEDULERS
    ):
        raise StartupError(
            f"--batch-scheduler: scheduler is not supported, name={config.batch_scheduler} "
            f"(KubeRay knows {', '.join(KNOWN_BATCH_SCHEDULERS)})"
        )


def effective_log_level(args: Any) -> str:
    """``--zap-log-level`` if given (an integer verbosity is debug), else debug with
    ``--zap-devel``, else ``--log-level``."""
    if args.zap_log_level is not None:
        return ZAP_LEVELS.get(args.zap_log_level, "debug")
    if args.zap_devel:
        return "debug"
    return str(args.log_level)


def version_line() -> str:
    try:
        version = metadata.version("pulumi-ray")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"ray-operator {version} (pulumi-ray; matches KubeRay {KUBERAY_VERSION})"


def check_api_server(transport: Transport, url: str, *, timeout: float = 10.0) -> str:
    """One ``GET /version`` before anything starts, so an unreachable API server or
    refused credentials is one clear line instead of informers retrying for ever; the
    ``gitVersion`` it reports ("" when the answer has none)."""
    try:
        response = transport.request(
            "GET", "/version", query=[], body=None, headers={}, timeout=(timeout, timeout)
        )
    except TransportError as exc:
        raise StartupError(f"cannot reach the API server at {url}: {_short(exc)}") from None
    if response.status == 401:
        raise StartupError(f"the API server at {url} refused the credentials (401 Unauthorized)")
    if response.status >= 500:
        raise StartupError(f"the API server at {url} answered {response.status} to GET /version")
    if response.status >= 400:
        return ""
    try:
        answer = response.json()
    except ValueError:
        return ""
    version = answer.get("gitVersion") if isinstance(answer, dict) else None
    return version if isinstance(version, str) else ""


SIDECAR_SUBMITTER_RESTART_MINIMUM: Final = (1, 35, 0)
"""KubeRay's floor for the SidecarSubmitterRestart gate: a regular container's own
``restartPolicy`` (ContainerRestartRules) is beta, on by default, from Kubernetes 1.35."""
_GENERIC_VERSION = re.compile(r"^\s*v?([0-9]+(?:\.[0-9]+)+)")


def generic_version(text: str) -> tuple[int, ...]:
    """A version's numeric components as Kubernetes' ``ParseGeneric`` reads them: an
    optional ``v``, at least major.minor, anything after the numbers ignored
    (``v1.35.0-gke.1`` is 1.35.0). Raises ``ValueError`` for anything else."""
    match = _GENERIC_VERSION.match(text)
    if match is None:
        raise ValueError(f"illegal version string {text!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def check_sidecar_submitter_restart(server_version: str, url: str, *, enabled: bool) -> None:
    """KubeRay's start-up check of the SidecarSubmitterRestart gate: with it on, the
    operator refuses to start against an API server below 1.35.0 (or one whose version
    it cannot read), rather than render a submitter whose restart policy that server
    drops. Like KubeRay, only the API server's version is checked, not the kubelets'."""
    if not enabled:
        return
    gate = "the SidecarSubmitterRestart feature gate requires Kubernetes 1.35+"
    try:
        components = generic_version(server_version)
    except ValueError:
        raise StartupError(
            f"{gate}, but the version of the API server at {url} is unknown "
            f"(GET /version gave gitVersion {server_version!r})"
        ) from None
    padded = components + (0,) * (len(SIDECAR_SUBMITTER_RESTART_MINIMUM) - len(components))
    if padded < SIDECAR_SUBMITTER_RESTART_MINIMUM:
        raise StartupError(
            f"{gate}: the API server at {url} is {server_version}, below 1.35; "
            "turn the gate off or upgrade the control plane"
        )


_SOCKET_REASON = re.compile(
    r"(\[Errno [^\]]+\][^')\"]*|Connection refused|timed out|Name or service not known"
    r"|certificate verify failed[^')\"]*)"
)


def _short(exc: BaseException) -> str:
    text = str(exc)
    # urllib3 nests the socket error in a long repr; its last clause says what happened.
    match = _SOCKET_REASON.search(text)
    return match.group(1).strip() if match else text.splitlines()[0][:200]
