"""The policy pack's rules as pure functions of one ray.io/v1 document (a wire-form dict).

A document may come from anywhere (``yaml/v2``, a raw ``CustomResource``, a Helm chart,
our components), so nothing here assumes it parsed: the organisation rules walk the raw
dict and skip what is missing or mistyped, leaving shape mistakes to ``api_lines``, which
is the one validation the components and the operator run (``load_object``).

Every function returns one line per finding, in the format of the API layer's errors,
``<Kind> <ns>/<name>: <path>: <what is wrong>; <fix> [CODE]``, so a violation reads the
same whether the preview, the component or the operator reported it. An organisation
rule's line is a ``Violation``, which also keeps its parts: the review
(``components/review/policies.py``) prints the path, the fix and the code without the
"what", which may quote a value of the spec.

``CHECKS`` is each policy's one home: its name, its description and how its config
reaches its function. The pack (``pack``) serves them to the engine, and the review runs
the same table over a change's objects with the same config file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from operator_runtime.api import FeatureGates, InvalidObjectError
from operator_runtime.api.validation import load_object

GPU_RESOURCE = "nvidia.com/gpu"


class PolicyCode(StrEnum):
    """Stable codes of the organisation rules (the API rules keep their ``ErrorCode``)."""

    IMAGE_NOT_ALLOWED = "POLICY_IMAGE_NOT_ALLOWED"
    GPU_GROUP_CAP = "POLICY_GPU_GROUP_CAP"
    GPU_CLUSTER_CAP = "POLICY_GPU_CLUSTER_CAP"
    GPU_UNBOUNDED_GROUP = "POLICY_GPU_UNBOUNDED_GROUP"
    LIMIT_MISSING = "POLICY_LIMIT_MISSING"
    DELETE_SELF = "POLICY_DELETE_SELF"


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """One pod template of the document: where it is, and which worker group (if any)."""

    path: str
    spec: Mapping[str, object]
    group: str | None
    """The worker group's name; None for the head and the submitter."""
    max_pods: int | None
    """How many pods of it can run at once (None: no bound is given)."""


def api_lines(document: Mapping[str, object], gates: FeatureGates | None = None) -> list[str]:
    """Every parse, schema and KubeRay-rule mistake, exactly as the components report them."""
    try:
        load_object(document, gates)
    except InvalidObjectError as error:
        return list(error.lines())
    return []


def _object_ref(document: Mapping[str, object]) -> str:
    # The same spelling as InvalidObjectError.object_ref, for a document that may not parse.
    metadata = _mapping(document.get("metadata"))
    kind, name = str(document.get("kind") or "?"), str(metadata.get("name") or "<unnamed>")
    namespace = metadata.get("namespace")
    return (
        f"{kind} {namespace}/{name}"
        if isinstance(namespace, str) and namespace
        else (f"{kind} {name}")
    )


class Violation(str):
    """One organisation rule's line, which also keeps where (``path``), the fix
    (``hint``) and the ``code``: all but the "what", which may quote a spec's value."""

    path: str
    hint: str
    code: str

    def __new__(
        cls, document: Mapping[str, object], path: str, detail: str, hint: str, code: str
    ) -> Violation:
        line = super().__new__(cls, f"{_object_ref(document)}: {path}: {detail}; {hint} [{code}]")
        line.path, line.hint, line.code = path, hint, code
        return line


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[object]:
    return value if isinstance(value, list | tuple) else ()


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- where the pods of a document are -------------------------------------------------


def _cluster_templates(cluster_spec: Mapping[str, object], prefix: str) -> Iterator[PodTemplate]:
    head = _mapping(_mapping(cluster_spec.get("headGroupSpec")).get("template"))
    if head:
        yield PodTemplate(f"{prefix}.headGroupSpec.template", _mapping(head.get("spec")), None, 1)
    autoscaling = cluster_spec.get("enableInTreeAutoscaling") is True
    for index, raw in enumerate(_sequence(cluster_spec.get("workerGroupSpecs"))):
        group = _mapping(raw)
        # The autoscaler may go up to maxReplicas; without it the group stays at replicas.
        replicas = _int(group.get("maxReplicas" if autoscaling else "replicas"))
        if replicas is None and not autoscaling:
            replicas = _int(group.get("minReplicas"))
        hosts = _int(group.get("numOfHosts")) or 1
        yield PodTemplate(
            f"{prefix}.workerGroupSpecs[{index}].template",
            _mapping(_mapping(group.get("template")).get("spec")),
            str(group.get("groupName") or f"#{index}"),
            None if replicas is None else replicas * hosts,
        )


def _job_templates(job_spec: Mapping[str, object], prefix: str) -> Iterator[PodTemplate]:
    cluster = _mapping(job_spec.get("rayClusterSpec"))
    if cluster:
        yield from _cluster_templates(cluster, f"{prefix}.rayClusterSpec")
    submitter = _mapping(job_spec.get("submitterPodTemplate"))
    if submitter:
        yield PodTemplate(
            f"{prefix}.submitterPodTemplate", _mapping(submitter.get("spec")), None, 1
        )


def pod_templates(document: Mapping[str, object]) -> list[PodTemplate]:
    """Every pod template a RayCluster, RayJob, RayService or RayCronJob carries."""
    spec, kind = _mapping(document.get("spec")), document.get("kind")
    if kind == "RayCluster":
        return list(_cluster_templates(spec, "spec"))
    if kind == "RayJob":
        return list(_job_templates(spec, "spec"))
    if kind == "RayService":
        return list(
            _cluster_templates(_mapping(spec.get("rayClusterConfig")), "spec.rayClusterConfig")
        )
    if kind == "RayCronJob":
        return list(_job_templates(_mapping(spec.get("jobTemplate")), "spec.jobTemplate"))
    return []


def _containers(template: PodTemplate) -> Iterator[tuple[str, Mapping[str, object]]]:
    for field in ("initContainers", "containers"):
        for index, container in enumerate(_sequence(template.spec.get(field))):
            yield f"{template.path}.spec.{field}[{index}]", _mapping(container)


# --- the organisation rules ------------------------------------------------------------


def image_lines(document: Mapping[str, object], allowed_prefixes: Sequence[str]) -> list[Violation]:
    """Containers whose image starts with none of ``allowed_prefixes`` (empty: allow all)."""
    if not allowed_prefixes:
        return []
    allowed = ", ".join(allowed_prefixes)
    return [
        Violation(
            document,
            f"{path}.image",
            f"image {image!r} is not from an allowed registry",
            f"use an image under one of: {allowed}",
            PolicyCode.IMAGE_NOT_ALLOWED,
        )
        for template in pod_templates(document)
        for path, container in _containers(template)
        if not (image := str(container.get("image") or "")).startswith(tuple(allowed_prefixes))
    ]


def _gpus(template: PodTemplate) -> int:
    total = 0
    for _, container in _containers(template):
        resources = _mapping(container.get("resources"))
        # An extended resource's request must equal its limit; KubeRay reads the limit.
        for side in ("limits", "requests"):
            value = _mapping(resources.get(side)).get(GPU_RESOURCE)
            if value is not None:
                total += int(str(value)) if str(value).isdigit() else 0
                break
    return total


def gpu_lines(
    document: Mapping[str, object], *, per_group: int | None, per_cluster: int | None
) -> list[Violation]:
    """Worker groups (and the whole cluster) that can take more GPUs than allowed.

    A group counts ``GPUs per pod x the pods it can reach``: ``maxReplicas x numOfHosts``
    when the autoscaler is on, else ``replicas x numOfHosts``; the head counts once.
    """
    found: list[Violation] = []
    cluster_total = 0
    for template in pod_templates(document):
        per_pod = _gpus(template)
        if per_pod == 0:
            continue
        if template.max_pods is None:
            found.append(
                Violation(
                    document,
                    template.path.removesuffix(".template"),
                    f"group {template.group} asks for {per_pod} GPU per pod"
                    " with no bound on its pods",
                    "set maxReplicas (autoscaling) or replicas",
                    PolicyCode.GPU_UNBOUNDED_GROUP,
                )
            )
            continue
        group_total = per_pod * template.max_pods
        cluster_total += group_total
        if template.group is not None and per_group is not None and group_total > per_group:
            found.append(
                Violation(
                    document,
                    template.path.removesuffix(".template"),
                    f"group {template.group} can take {group_total} GPUs "
                    f"({per_pod} per pod x {template.max_pods} pods)",
                    f"stay at or below {per_group} per group",
                    PolicyCode.GPU_GROUP_CAP,
                )
            )
    if per_cluster is not None and cluster_total > per_cluster:
        found.append(
            Violation(
                document,
                "spec",
                f"the cluster can take {cluster_total} GPUs",
                f"stay at or below {per_cluster} per cluster",
                PolicyCode.GPU_CLUSTER_CAP,
            )
        )
    return found


def limit_lines(document: Mapping[str, object], resources: Sequence[str]) -> list[Violation]:
    """Containers without a limit on each of ``resources`` (e.g. cpu, memory)."""
    found: list[Violation] = []
    for template in pod_templates(document):
        for path, container in _containers(template):
            limits = _mapping(_mapping(container.get("resources")).get("limits"))
            missing = [name for name in resources if limits.get(name) in (None, "")]
            if missing:
                found.append(
                    Violation(
                        document,
                        f"{path}.resources.limits",
                        f"container {container.get('name')!r} sets no {' or '.join(missing)} limit",
                        f"set resources.limits.{missing[0]}",
                        PolicyCode.LIMIT_MISSING,
                    )
                )
    return found


def _deletion_lines(
    document: Mapping[str, object], job_spec: Mapping[str, object], prefix: str
) -> Iterator[Violation]:
    strategy = _mapping(job_spec.get("deletionStrategy"))
    places = [
        (f"{prefix}.deletionStrategy.{side}.policy", _mapping(strategy.get(side)).get("policy"))
        for side in ("onSuccess", "onFailure")
    ] + [
        (f"{prefix}.deletionStrategy.deletionRules[{index}].policy", _mapping(rule).get("policy"))
        for index, rule in enumerate(_sequence(strategy.get("deletionRules")))
    ]
    for path, policy in places:
        if policy == "DeleteSelf":
            yield Violation(
                document,
                path,
                "DeleteSelf deletes the RayJob itself, and its history with it",
                "use DeleteCluster or DeleteWorkers",
                PolicyCode.DELETE_SELF,
            )


def delete_self_lines(document: Mapping[str, object]) -> list[Violation]:
    """RayJob deletion policies (legacy or rules) that delete the RayJob itself."""
    spec, kind = _mapping(document.get("spec")), document.get("kind")
    if kind == "RayJob":
        return list(_deletion_lines(document, spec, "spec"))
    if kind == "RayCronJob":
        template = _mapping(spec.get("jobTemplate"))
        return list(_deletion_lines(document, template, "spec.jobTemplate"))
    return []


# --- each policy's one home: name, description, how its config reaches the rule --------

Config = Mapping[str, Any]
"""A policy's entry of the pack's config file (``--policy-pack-config``)."""


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    description: str
    judge: Callable[[Mapping[str, object], Config], Sequence[str]]


def _api(document: Mapping[str, object], config: Config) -> list[str]:
    gates = config.get("featureGates")
    return api_lines(document, FeatureGates.parse(gates) if gates else None)


def _images(document: Mapping[str, object], config: Config) -> list[Violation]:
    return image_lines(document, list(config.get("allowedPrefixes") or ()))


def _gpu_caps(document: Mapping[str, object], config: Config) -> list[Violation]:
    return gpu_lines(
        document, per_group=config.get("maxPerGroup"), per_cluster=config.get("maxPerCluster")
    )


def _limits(document: Mapping[str, object], config: Config) -> list[Violation]:
    return limit_lines(document, list(config.get("resources") or ("cpu", "memory")))


def _delete_self(document: Mapping[str, object], _config: Config) -> list[Violation]:
    return delete_self_lines(document)


API_CHECK = Check(
    "ray-api-validation",
    "ray.io/v1 objects pass the validation our components and operator run.",
    _api,
)
ORGANISATION_CHECKS: tuple[Check, ...] = (
    Check(
        "ray-image-allow-list",
        "Every container of a Ray pod comes from an allowed registry or repository.",
        _images,
    ),
    Check(
        "ray-gpu-caps",
        "nvidia.com/gpu a worker group, and a whole cluster, can take stays under a cap.",
        _gpu_caps,
    ),
    Check(
        "ray-resource-limits",
        "Every container of a Ray pod sets the listed resource limits.",
        _limits,
    ),
    Check(
        "ray-no-delete-self",
        "RayJob deletion policies never delete the RayJob itself (DeleteSelf).",
        _delete_self,
    ),
)
"""The platform's own rules: each returns ``Violation`` lines."""
CHECKS: tuple[Check, ...] = (API_CHECK, *ORGANISATION_CHECKS)
