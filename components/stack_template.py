"""The platform team's stack template (the repository's root ``Pulumi.yaml``), driven by
stack config alone.

Every key but ``operator.image`` is optional; the schema is declared in ``Pulumi.yaml``
and documented in the README::

    pulumi-ray:kubeconfig   path of a kubeconfig; the ambient one when unset
    pulumi-ray:operator     RayOperator settings in camelCase: ``image`` (required, your
                            registry's copy: docs/releasing.md), ``namespace``,
                            ``replicas``, ``featureGates``, ``watchNamespaces``, ...;
                            ``enabled: false`` deploys no operator (one is already there)
    pulumi-ray:workloads    {namespace: {createNamespace, rayClusters, rayJobs,
                            rayServices, rayCronJobs}}; each entry is {name, spec,
                            labels, annotations, waitForReady, timeout, queueName}
    pulumi-ray:manifests    KubeRay YAML files, each object deployed through its component
    pulumi-ray:namespace    namespace of manifest objects that name none ("default")

Everything is checked before the first resource is registered. A mistake in a Ray
object is reported as ``render`` and the components report it, every mistake of the
object at once, each followed by the config key that holds it, as ``pulumi config set
--path`` spells it (lines wrapped here)::

    RayCluster ml/demo: spec.workerGroupSpecs[0].minReplicas: worker group gpu has
    minReplicas 3 greater than maxReplicas 1; set minReplicas <= maxReplicas
    [RAYCLUSTER_MIN_GT_MAX]
      (pulumi-ray:workloads.ml.rayClusters[0].spec.workerGroupSpecs[0].minReplicas)

Any other mistake leads with its key: ``pulumi-ray:operator.replicas: <what>; <fix>``.
Manifest files are read with ``render``'s YAML loader (``render.load_documents``): a
trailing ``---`` is fine, and a syntax error names the file, line and column.

A key set with ``--secret`` stays secret: the specs read from it reach their custom
resources as secret Outputs, so they are encrypted in the state and ``[secret]`` in diffs.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import pulumi
import pulumi_kubernetes as k8s
from pulumi.runtime.config import is_config_secret
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from operator_runtime.render import DocumentError, load_documents

from . import _workload as w
from . import cluster, cronjob, job, service
from ._inputs import RayInputError
from .cluster import RayCluster
from .cronjob import RayCronJob
from .job import RayJob
from .operator import RayOperator
from .operator.args import DEFAULT_NAMESPACE, OperatorServiceAccount, RayOperatorArgs
from .service import RayService

__all__ = [
    "CONFIG_NAMESPACE",
    "ConfigError",
    "NamespaceWorkloads",
    "OperatorConfig",
    "StackConfig",
    "WorkloadEntry",
    "deploy",
    "read_config",
]

_IMAGE_HINT: Final = (
    "build the image with `make image`, push it to your registry with `python -m hack.image "
    "push <registry>/<repo>:<tag>` (it prints the reference with its digest), then `pulumi "
    "config set --path operator.image <registry>/<repo>@sha256:<digest>` (pinned by digest, "
    "recommended); see docs/releasing.md"
)
"""The component's guidance for an image (missing or malformed), as stack config spells it."""

CONFIG_NAMESPACE: Final = "pulumi-ray"
"""The project's name, and so the prefix of every config key of the template."""

Workload = RayCluster | RayJob | RayService | RayCronJob


@dataclass(frozen=True)
class _Kind:
    config_key: str
    """The key of ``workloads.<namespace>`` that lists objects of the kind."""
    rules: w.KindRules[Any]
    component: Callable[..., Workload]


KINDS: Final[Mapping[str, _Kind]] = {
    "RayCluster": _Kind("rayClusters", cluster.RULES, RayCluster),
    "RayJob": _Kind("rayJobs", job.RULES, RayJob),
    "RayService": _Kind("rayServices", service.RULES, RayService),
    "RayCronJob": _Kind("rayCronJobs", cronjob.RULES, RayCronJob),
}
"""Each kind the template deploys: its config key, its rules and its component."""


class ConfigError(pulumi.RunError):
    """A stack config value the template cannot use; the message leads with its key, and
    the engine prints it alone, without a Python traceback."""


def config_key(*steps: str | int) -> str:
    """``pulumi-ray:workloads.ml.rayClusters[0]``: a key path as ``pulumi config --path``
    spells it."""
    key = CONFIG_NAMESPACE
    for index, step in enumerate(steps):
        if isinstance(step, int):
            key += f"[{step}]"
        else:
            key += f"{':' if index == 0 else '.'}{step}"
    return key


# --- the schema -------------------------------------------------------------------------


class _ConfigModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class ServiceAccountConfig(_ConfigModel):
    """``pulumi-ray:operator.serviceAccount``: ``OperatorServiceAccount`` in camelCase."""

    create: bool = True
    name: str | None = None
    annotations: dict[str, str] | None = None


class OperatorConfig(_ConfigModel):
    """``pulumi-ray:operator``: the fields of ``RayOperatorArgs`` in camelCase (a test keeps
    the two in step), plus ``enabled``."""

    enabled: bool = True
    name: str | None = None
    namespace: str = DEFAULT_NAMESPACE
    create_namespace: bool | None = None
    install_crds: bool | None = None
    retain_crds_on_delete: bool = True
    image: str | None = None
    """Required when ``enabled``; no default (docs/releasing.md)."""
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    image_pull_secrets: list[str] = []
    replicas: int = Field(default=1, ge=1)
    resources: dict[str, dict[str, str]] | None = None
    log_format: Literal["json", "console"] | None = None
    log_level: Literal["debug", "info", "warning", "error"] | None = None
    feature_gates: dict[str, bool] | str | None = None
    qps: float | None = Field(default=None, gt=0)
    burst: int | None = Field(default=None, ge=1)
    reconcile_concurrency: int | None = Field(default=None, ge=1)
    watch_namespaces: list[str] = []
    cluster_scoped_rbac: bool = True
    leader_election: bool = True
    use_kubernetes_proxy: bool = False
    env: dict[str, str] | None = None
    service_monitor: bool = False
    prometheus_rule: bool = False
    monitoring_labels: dict[str, str] | None = None
    service_monitor_interval: str | None = None
    service_monitor_namespace: str | None = None
    grafana_dashboards: bool = False
    grafana_dashboard_labels: dict[str, str] | None = None
    grafana_dashboard_namespace: str | None = None
    grafana_folder: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    pod_labels: dict[str, str] | None = None
    pod_annotations: dict[str, str] | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None
    affinity: dict[str, Any] | None = None
    priority_class_name: str | None = None
    pod_security_context: dict[str, Any] | None = None
    service_account: ServiceAccountConfig | None = None
    operator_config: dict[str, Any] | None = None
    """KubeRay's Configuration file, as in YAML (its own camelCase keys, kept as given)."""

    @property
    def gates_text(self) -> str | None:
        """``featureGates`` as the operator's flag spells it, for the workloads' checks."""
        if isinstance(self.feature_gates, Mapping):
            return ",".join(f"{gate}={str(on).lower()}" for gate, on in self.feature_gates.items())
        return self.feature_gates

    def args(self) -> RayOperatorArgs:
        given = self.model_dump(exclude={"enabled", "service_account"}, exclude_unset=True)
        if self.service_account is not None:
            given["service_account"] = OperatorServiceAccount(
                **self.service_account.model_dump(exclude_unset=True)
            )
        return RayOperatorArgs(**given)


class WorkloadEntry(_ConfigModel):
    """One Ray object; ``spec`` is its KubeRay spec, as in a YAML manifest (camelCase)."""

    name: str = Field(min_length=1)
    spec: dict[str, Any]
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    wait_for_ready: bool = True
    """RayCronJob has no readiness: it is created and left to its schedule."""
    timeout: int | str | None = None
    """Seconds, or a duration such as ``"10m"``, that ``pulumi up`` waits for readiness."""
    queue_name: str | None = None
    """The Kueue LocalQueue that admits the object (not for a RayCronJob)."""


class NamespaceWorkloads(_ConfigModel):
    """``pulumi-ray:workloads.<namespace>``: the Ray objects of one namespace, by kind."""

    create_namespace: bool = False
    """Create the Namespace too. Off by default: ``pulumi destroy`` deletes a Namespace it
    created with everything in it, the objects of other tools included."""
    ray_clusters: list[WorkloadEntry] = []
    ray_jobs: list[WorkloadEntry] = []
    ray_services: list[WorkloadEntry] = []
    ray_cron_jobs: list[WorkloadEntry] = []

    def entries(self) -> Iterator[tuple[str, int, WorkloadEntry]]:
        """``(kind, index, entry)`` in config order."""
        for kind, spec in KINDS.items():
            for index, entry in enumerate(getattr(self, to_snake(spec.config_key))):
                yield kind, index, entry


class StackConfig(_ConfigModel):
    """Every key the template reads."""

    kubeconfig: str | None = None
    """Empty or unset: the ambient kubeconfig."""
    operator: OperatorConfig = OperatorConfig()
    workloads: dict[str, NamespaceWorkloads] = {}
    manifests: list[str] = []
    namespace: str = "default"


_TEXT_KEYS: Final = frozenset({"kubeconfig", "namespace"})


@dataclass(frozen=True)
class TemplateConfig:
    """The validated config, and which of its keys were set with ``--secret``."""

    values: StackConfig
    secret_keys: frozenset[str]


def read_config(config: pulumi.Config) -> TemplateConfig:
    """Read and check the whole stack config; a bad value raises ``ConfigError`` naming
    its key path, with a suggestion when a key is misspelt."""
    raw: dict[str, Any] = {}
    secret: set[str] = set()
    for field in StackConfig.model_fields:
        key = to_camel(field)
        value = config.get(key) if field in _TEXT_KEYS else config.get_object(key)
        if value is not None:
            raw[key] = value
            if is_config_secret(config.full_key(key)):
                secret.add(key)
    try:
        values = StackConfig.model_validate(raw)
    except ValidationError as error:
        raise _config_error(error, raw) from None
    return TemplateConfig(values, frozenset(secret))


def _config_error(error: ValidationError, raw: Mapping[str, Any]) -> ConfigError:
    # A misspelt key also leaves the right one missing: report the misspelling.
    errors = sorted(error.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    location = [step for step in first["loc"] if not _is_union_tag(step)]
    message = f"{config_key(*location)}: {first['msg']}"
    if first["type"] == "extra_forbidden":
        known = _known_keys(raw, location[:-1])
        close = difflib.get_close_matches(str(location[-1]), known, n=1)
        message += f"; {'did you mean ' + repr(close[0]) + '? ' if close else ''}"
        message += f"known keys: {', '.join(sorted(known))}"
    else:
        message += "; see the schema in Pulumi.yaml"
    return ConfigError(message)


def _is_union_tag(step: object) -> bool:
    # pydantic names the union member it tried (``str``, ``dict[str,bool]``): not a key.
    return isinstance(step, str) and (step in {"str", "int", "bool"} or "[" in step)


def _known_keys(raw: Mapping[str, Any], parent: list[str | int]) -> list[str]:
    """The camelCase keys the model at ``parent`` accepts."""
    model: type[BaseModel] = StackConfig
    steps = list(parent)
    # workloads.<namespace>.<kind>[i] -> NamespaceWorkloads, then WorkloadEntry.
    if steps[:1] == ["workloads"]:
        model = NamespaceWorkloads if len(steps) == 2 else WorkloadEntry
    elif steps[:1] == ["operator"]:
        model = OperatorConfig
    return [to_camel(name) for name in model.model_fields]


# --- the program ------------------------------------------------------------------------


def deploy(config: pulumi.Config | None = None) -> None:
    """The whole template: provider, operator, namespaces and workloads from stack config.

    Everything is validated before the first resource is registered, so a bad entry late
    in the config never leaves the ones before it half-created.
    """
    template = read_config(config or pulumi.Config())
    values = template.values
    pending = list(_planned_workloads(template))
    gates = values.operator.gates_text
    for plan in pending:
        plan.check(gates)

    provider = (
        k8s.Provider("kubernetes", kubeconfig=values.kubeconfig) if values.kubeconfig else None
    )
    operator = None
    if values.operator.enabled:
        try:
            operator = RayOperator(
                "ray-operator", values.operator.args(), pulumi.ResourceOptions(provider=provider)
            )
        except RayInputError as error:
            field, dot, rest = error.path.partition(".")
            key = config_key("operator", to_camel(field) + dot + rest)
            hint = _IMAGE_HINT if error.code == "RAYOPERATOR_IMAGE_REQUIRED" else error.hint
            raise ConfigError(f"{key}: {error.reason}; {hint} [{error.code}]") from None
    namespaces: dict[str, k8s.core.v1.Namespace] = {}
    for namespace, workloads in values.workloads.items():
        if workloads.create_namespace:
            namespaces[namespace] = k8s.core.v1.Namespace(
                f"namespace-{namespace}",
                metadata={"name": namespace},
                opts=pulumi.ResourceOptions(provider=provider),
            )

    created: dict[str, list[pulumi.Output[str]]] = {kind: [] for kind in KINDS}
    for plan in pending:
        workload = plan.create(
            provider=provider,
            operator=operator,
            namespace=namespaces.get(plan.namespace),
            feature_gates=gates,
        )
        created[plan.kind].append(pulumi.Output.concat(plan.namespace, "/", workload.name))

    pulumi.export("operatorNamespace", operator.namespace if operator else None)
    for kind, names in created.items():
        pulumi.export(KINDS[kind].config_key, pulumi.Output.all(*names))


@dataclass(frozen=True)
class _PlannedWorkload:
    """One workload from config or a manifest, with the key that names it in errors."""

    kind: str
    namespace: str
    entry: WorkloadEntry
    key: tuple[str | int, ...]
    secret: bool
    source: str | None = None
    """The manifest file the object comes from (None: from ``workloads``)."""

    @property
    def resource_name(self) -> str:
        return f"{self.kind.lower()}-{self.namespace}-{self.entry.name}"

    def _arguments(self) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "name": self.entry.name,
            "namespace": self.namespace,
            "labels": self.entry.labels,
            "annotations": self.entry.annotations,
        }
        if self.kind != "RayCronJob":
            arguments["wait_for_ready"] = self.entry.wait_for_ready
            arguments["timeout"] = self.entry.timeout
            arguments["queue_name"] = self.entry.queue_name
        return arguments

    def check(self, feature_gates: str | None) -> None:
        """Validate the entry now, as its component would but without registering it:
        the template checks *every* entry before it registers anything."""
        if self.kind == "RayCronJob" and self.entry.queue_name is not None:
            raise ConfigError(
                f"{config_key(*self.key, 'queueName')}: a RayCronJob takes no queue: KubeRay "
                "gives the RayJobs it creates none of its labels, so Kueue would never see "
                "it; remove it"
            )
        if self.secret:
            return  # validated by the component once the secret Output resolves
        rules = KINDS[self.kind].rules
        arguments = {k: v for k, v in self._arguments().items() if v is not None}
        try:
            w.plan_workload(
                rules,
                w.WorkloadArgs(**arguments, feature_gates=feature_gates),
                self.resource_name,
                self.entry.spec,
            )
        except RayInputError as error:
            raise _readdressed(error, self.key, self.source) from None

    def create(
        self,
        *,
        provider: pulumi.ProviderResource | None,
        operator: RayOperator | None,
        namespace: k8s.core.v1.Namespace | None,
        feature_gates: str | None,
    ) -> Workload:
        spec: Any = pulumi.Output.secret(self.entry.spec) if self.secret else self.entry.spec
        arguments = self._arguments()
        if namespace is not None:
            # The name read back from the Namespace, so the workload waits for it.
            arguments["namespace"] = namespace.metadata.apply(lambda meta: str(meta.name))
        try:
            return KINDS[self.kind].component(
                self.resource_name,
                opts=pulumi.ResourceOptions(
                    provider=provider, depends_on=[operator] if operator is not None else None
                ),
                spec=spec,
                feature_gates=feature_gates,
                **arguments,
            )
        except RayInputError as error:
            raise _readdressed(error, self.key, self.source) from None


def _planned_workloads(template: TemplateConfig) -> Iterator[_PlannedWorkload]:
    values = template.values
    secret = "workloads" in template.secret_keys
    for namespace, workloads in values.workloads.items():
        for kind, index, entry in workloads.entries():
            key = ("workloads", namespace, KINDS[kind].config_key, index)
            yield _PlannedWorkload(kind, namespace, entry, key, secret)
    for index, path in enumerate(values.manifests):
        for document in _manifest_documents(path, index):
            yield _from_manifest(document, path, index, values.namespace)


def _manifest_documents(path: str, index: int) -> list[object]:
    """The YAML documents of one manifest; a relative path is the project directory's."""
    key = config_key("manifests", index)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{key}: cannot read {path}: {error.strerror or error}") from None
    try:
        return load_documents(text, path)
    except DocumentError as error:
        raise ConfigError(f"{key}: {error}") from None


def _from_manifest(
    document: object, path: str, index: int, default_namespace: str
) -> _PlannedWorkload:
    key = config_key("manifests", index)
    kind = document.get("kind") if isinstance(document, dict) else None
    if not isinstance(document, dict) or kind not in KINDS:
        raise ConfigError(
            f"{key}: {path}: kind {kind!r} is not one of {', '.join(KINDS)}; "
            "list only ray.io/v1 objects here, and apply other objects with their own tool"
        )
    metadata = document.get("metadata") or {}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{key}: {path}: {kind} has no metadata.name; name it")
    try:
        entry = WorkloadEntry(
            name=name,
            spec=document.get("spec") or {},
            labels=metadata.get("labels"),
            annotations=metadata.get("annotations"),
        )
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(step) for step in first["loc"])
        raise ConfigError(
            f"{kind} {name}: {where}: {first['msg']}; fix it in {path} ({key})"
        ) from None
    namespace = metadata.get("namespace") or default_namespace
    return _PlannedWorkload(
        str(kind), namespace, entry, ("manifests", index), secret=False, source=path
    )


def _readdressed(
    error: RayInputError, key: tuple[str | int, ...], source: str | None
) -> ConfigError:
    """A component's error about a config value: its lines, each followed by where the
    value is set (the config key, or the manifest file and its key)."""
    lines = []
    for line in error.lines:
        lines.append(line)
        if source is not None:
            lines.append(f"  ({source}, {config_key(*key)})")
        else:
            path = _line_path(line, error.object_ref)
            if path and "." not in path and "[" not in path:
                path = to_camel(path)  # an argument of the component, as config spells it
            lines.append(f"  ({config_key(*key)}{'.' + path if path else ''})")
    return ConfigError("\n".join(lines))


def _line_path(line: str, object_ref: str) -> str:
    """The field path of one ``<object>: <path>: ...`` line."""
    return line.removeprefix(f"{object_ref}: ").split(": ", 1)[0]
