"""``operator_config``: KubeRay's ``Configuration`` file, checked and completed at preview.

With ``--config`` the operator (ours, as KubeRay's) takes every setting the file can hold
from the file and ignores the matching flags. So the settings this component owns, which
its Deployment, Service, RBAC and alerts depend on, are written into the file from their
arguments, and the file may not set them itself: a ``metricsAddr`` of its own would move
the port the Service and the probes point at, a ``watchNamespace`` would leave the
namespaced Roles behind. The whole file is then decoded by the operator's own parser, so
a mistake fails ``pulumi preview`` naming the field instead of crash-looping the pod.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import yaml

from .deployment import HEALTH_PORT, METRICS_PORT

__all__ = ["OWNED_FIELDS", "ConfigRefusal", "OwnedSettings", "config_map_suffix", "render_file"]

_API_VERSION: Final = "config.ray.io/v1alpha1"
_KIND: Final = "Configuration"

OWNED_FIELDS: Final[Mapping[str, str]] = {
    "metricsAddr": "the metrics port, which the Service, the ServiceMonitor and the "
    "probes point at; leave it out",
    "probeAddr": "the health port the probes point at; leave it out",
    "enableMetrics": "always on: the ServiceMonitor and the alert rules read the "
    "kuberay_* metrics; leave it out",
    "enableLeaderElection": "set leader_election instead",
    "leaderElectionNamespace": "the Lease is in the operator's own namespace, where its "
    "leader-election Role grants it; leave it out",
    "watchNamespace": "set watch_namespaces instead (the namespaced RBAC follows it)",
    "useKubernetesProxy": "set use_kubernetes_proxy instead (the ClusterRole follows it)",
    "qps": "set qps instead",
    "burst": "set burst instead",
    "reconcileConcurrency": "set reconcile_concurrency instead",
    "logStdoutEncoder": "the operator reads the encoder from its flag only, as KubeRay "
    "does; set log_format instead",
    "logFileEncoder": "the operator reads the encoder from its flag only, as KubeRay "
    "does; leave it out",
}
"""Fields of the file that the component writes (or that the file cannot change), and
what to do instead of setting them."""


class ConfigRefusal(Exception):
    """A field of ``operator_config`` that cannot be used; ``field`` is its wire path."""

    def __init__(self, field: str, detail: str, hint: str) -> None:
        super().__init__(detail)
        self.field, self.detail, self.hint = field, detail, hint


@dataclass(frozen=True)
class OwnedSettings:
    """What the component's arguments say about the fields it owns."""

    leader_election: bool
    watch_namespaces: tuple[str, ...]
    use_kubernetes_proxy: bool
    qps: float | None
    burst: int | None
    reconcile_concurrency: int | None
    kubernetes_was: bool
    """The ``KubernetesWAS`` gate, which the operator checks the batch scheduler against."""


def render_file(given: Mapping[str, object], owned: OwnedSettings) -> str:
    """The file's text: ``given`` with the owned fields written in, checked by the
    operator's parser; ``ConfigRefusal`` naming the first field it cannot use."""
    known = _known_fields()
    for field in given:
        if field in OWNED_FIELDS:
            raise ConfigRefusal(
                field, "is set by RayOperator from its own arguments", OWNED_FIELDS[field]
            )
        if field not in known:
            close = difflib.get_close_matches(str(field), sorted(known), n=1)
            raise ConfigRefusal(
                str(field),
                "is not a field of KubeRay's Configuration (the operator would ignore it)",
                f"did you mean {close[0]!r}?" if close else f"known: {', '.join(sorted(known))}",
            )
    for field, expected in (("apiVersion", _API_VERSION), ("kind", _KIND)):
        if given.get(field, expected) != expected:
            hint = f"write {expected!r} or leave it out"
            raise ConfigRefusal(field, f"is {given[field]!r}", hint)
    document: dict[str, object] = {"apiVersion": _API_VERSION, "kind": _KIND}
    merged = {**given, **_owned_fields(owned)}
    document.update(sorted((k, v) for k, v in merged.items() if k not in document))
    text = yaml.safe_dump(document, sort_keys=False, default_flow_style=False)
    _check_with_the_operator(text, owned)
    return text


def config_map_suffix(text: str) -> str:
    """A digest of the file, for the name of the ConfigMap that holds it."""
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _owned_fields(owned: OwnedSettings) -> dict[str, object]:
    fields: dict[str, object] = {
        "metricsAddr": f":{METRICS_PORT}",
        "probeAddr": f":{HEALTH_PORT}",
        "enableMetrics": True,
        "enableLeaderElection": owned.leader_election,
        "useKubernetesProxy": owned.use_kubernetes_proxy,
    }
    if owned.watch_namespaces:
        fields["watchNamespace"] = ",".join(owned.watch_namespaces)
    optional = (
        ("qps", owned.qps),
        ("burst", owned.burst),
        ("reconcileConcurrency", owned.reconcile_concurrency),
    )
    fields.update((name, value) for name, value in optional if value is not None)
    return fields


def _known_fields() -> frozenset[str]:
    """The file's field names, read from the operator's own model of it."""
    # The operator's parser lives in its runtime, which the components otherwise never
    # import (it pulls in the Kubernetes client): imported here, only when a file is given.
    from operator_runtime.runtime.configuration import KubeRayConfiguration

    return frozenset(
        str(info.alias or name) for name, info in KubeRayConfiguration.model_fields.items()
    )


def _check_with_the_operator(text: str, owned: OwnedSettings) -> None:
    from operator_runtime.runtime.commandline import StartupError, check_batch_scheduler
    from operator_runtime.runtime.configuration import ConfigurationError, decode_configuration

    try:
        decoded = decode_configuration(text)
    except ConfigurationError as error:
        field = str(error).split(":", 1)[0] if ":" in str(error) else "(file)"
        raise ConfigRefusal(
            field, str(error), "see KubeRay's Configuration type for each field's type"
        ) from None
    try:
        check_batch_scheduler(decoded, kubernetes_was=owned.kubernetes_was)
    except StartupError as error:
        raise ConfigRefusal("batchScheduler", str(error), "leave it out") from None
