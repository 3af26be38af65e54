"""Desired CPU, memory, GPU and TPU of a cluster, as Kubernetes quantity strings.

Sums are exact (``Fraction``); the result is written the way ``resource.Quantity``
prints itself, in the format of the first quantity added (binary ``Gi`` stays binary),
so ``kubectl get raycluster`` shows ``6`` CPUs and ``6Gi``, not ``6000m`` or bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from operator_runtime.api import RayCluster, WorkerGroupSpec
from operator_runtime.render.quantity import QuantityError, parse_quantity
from operator_runtime.render.raystart import is_gpu_resource

_DECIMAL_SUFFIXES: Final = {
    -9: "n",
    -6: "u",
    -3: "m",
    0: "",
    3: "k",
    6: "M",
    9: "G",
    12: "T",
    15: "P",
    18: "E",
}
_BINARY_SUFFIXES: Final = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))
TPU_RESOURCE: Final = "google.com/tpu"


@dataclass(frozen=True, slots=True)
class Amount:
    value: Fraction
    binary: bool
    """Printed with binary suffixes (the first quantity summed had one)."""

    def __add__(self, other: Amount) -> Amount:
        return Amount(self.value + other.value, self.binary)

    def times(self, factor: int) -> Amount:
        return Amount(self.value * factor, self.binary)


def amount(raw: object) -> Amount | None:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return None
    try:
        value = parse_quantity(raw)
    except QuantityError:
        return None
    return Amount(value, isinstance(raw, str) and raw.rstrip().endswith("i"))


def format_quantity(total: Amount) -> str:
    """``Quantity.String()`` of the canonical form: an integer mantissa with the
    largest suffix that keeps it whole; binary suffixes only for whole multiples of
    1024 (other binary values print as decimal, as Kubernetes does)."""
    value = total.value
    if value == 0:
        return "0"
    if total.binary and value.denominator == 1 and abs(value) >= 1024:
        for power, suffix in _BINARY_SUFFIXES:
            if value.numerator % (2**power) == 0:
                return f"{value.numerator // 2**power}{suffix}"
        return str(value.numerator)
    # Round up to nano units first, as Kubernetes does with finer values.
    nanos = -((-value * 10**9) // 1)
    exponent = -9
    while exponent < 18 and nanos % 1000 == 0:
        nanos //= 1000
        exponent += 3
    return f"{nanos}{_DECIMAL_SUFFIXES[exponent]}"


def pod_resources(template: Mapping[str, object]) -> dict[str, Amount]:
    """Σ over the template's containers of requests, limits filling missing keys."""
    spec = template.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    totals: dict[str, Amount] = {}
    for container in containers if isinstance(containers, list) else ():
        resources = container.get("resources") if isinstance(container, dict) else None
        if not isinstance(resources, dict):
            continue
        requests = resources.get("requests")
        limits = resources.get("limits")
        merged = {
            **(limits if isinstance(limits, dict) else {}),
            **(requests if isinstance(requests, dict) else {}),
        }
        for name, raw in merged.items():
            parsed = amount(raw)
            if parsed is not None:
                totals[name] = totals[name] + parsed if name in totals else parsed
    return totals


def _sum(lists: Iterable[dict[str, Amount]]) -> dict[str, Amount]:
    totals: dict[str, Amount] = {}
    for resources in lists:
        for name, value in resources.items():
            totals[name] = totals[name] + value if name in totals else value
    return totals


def desired_amounts(cluster: RayCluster) -> dict[str, Amount]:
    """``cpu``, ``memory``, ``gpu`` (every GPU key summed) and ``tpu``: the head pod plus
    every non-suspended group's pod x ``replicas`` (as written, not clamped) x hosts, as
    KubeRay counts ``status.desired*``."""
    parts = [pod_resources(cluster.spec.head_group_spec.template)]
    for group in cluster.spec.worker_group_specs or ():
        if group.suspend:
            continue
        count = (group.replicas or 0) * group.num_of_hosts
        parts.append({k: v.times(count) for k, v in pod_resources(group.template).items()})
    return summary_amounts(_sum(parts))


def summary_amounts(totals: Mapping[str, Amount]) -> dict[str, Amount]:
    """Per-resource totals as ``status.desired*`` sums them: ``cpu``, ``memory``, ``gpu``
    (every GPU resource name) and ``tpu``."""
    zero = Amount(Fraction(0), False)
    gpu = zero
    for name, value in sorted(totals.items()):
        if is_gpu_resource(name) and value.value != 0:
            gpu = value if gpu.value == 0 else gpu + value
    return {
        "cpu": totals.get("cpu", zero),
        "memory": totals.get("memory", zero),
        "gpu": gpu,
        "tpu": totals.get(TPU_RESOURCE, zero),
    }


def desired_resources(cluster: RayCluster) -> dict[str, str]:
    """``desiredCPU``/``desiredMemory``/``desiredGPU``/``desiredTPU``, as quantities."""
    amounts = desired_amounts(cluster)
    return {
        "desiredCPU": format_quantity(amounts["cpu"]),
        "desiredMemory": format_quantity(amounts["memory"]),
        "desiredGPU": format_quantity(amounts["gpu"]),
        "desiredTPU": format_quantity(amounts["tpu"]),
    }


def desired_worker_replicas(group: WorkerGroupSpec) -> int:
    """Replicas clamped to [min, max] (0 if the group is suspended), before hosts."""
    if group.suspend:
        return 0
    low = group.min_replicas or 0
    high = group.max_replicas if group.max_replicas is not None else 2**31 - 1
    replicas = group.replicas
    if replicas is None or replicas < low:
        return low
    return min(replicas, high)


def desired_replicas(cluster: RayCluster) -> int:
    """KubeRay's CalculateDesiredReplicas: every group clamped to [min, max] x hosts."""
    groups = cluster.spec.worker_group_specs or ()
    return sum(desired_worker_replicas(group) * group.num_of_hosts for group in groups)


def min_replicas(cluster: RayCluster) -> int:
    """KubeRay's CalculateMinReplicas: ``minReplicas`` x hosts of the non-suspended groups."""
    return sum(
        (group.min_replicas or 0) * group.num_of_hosts
        for group in cluster.spec.worker_group_specs or ()
        if not group.suspend
    )


def sum_resources(lists: Iterable[Mapping[str, Amount]]) -> dict[str, Amount]:
    """KubeRay's SumResourceList: per name, in the format of the first one summed."""
    return _sum(dict(resources) for resources in lists)


def worker_resources(cluster: RayCluster, *, minimum: bool) -> dict[str, Amount]:
    """Every resource name of the head pod plus each non-suspended group's pod x
    (``minReplicas`` if ``minimum``, else ``replicas`` as written) x hosts: KubeRay's
    CalculateMinResources and CalculateDesiredResources, which the gang schedulers
    reserve."""
    parts = [pod_resources(cluster.spec.head_group_spec.template)]
    for group in cluster.spec.worker_group_specs or ():
        if group.suspend:
            continue
        count = (group.min_replicas if minimum else group.replicas) or 0
        count *= group.num_of_hosts
        parts.append({k: v.times(count) for k, v in pod_resources(group.template).items()})
    return _sum(parts)
